#include "core/rpc/grpc_status.h"

#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(GrpcStatusTest, RoundTripsEveryCode) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code), "message names the run");
    const grpc::Status g = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(g.error_code()), code);
    EXPECT_EQ(g.error_message(), "message names the run");
    EXPECT_EQ(FromGrpcStatus(g), status);
  }
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(GrpcStatusTest, ErrorCodesKeepTheirMeaning) {
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("x")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError("x")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::IsDeadlineExceeded(
      FromGrpcStatus(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "late"))));
}

// An error that echoes a huge input is cut to fit gRPC's trailing metadata, keeping its
// code and its start.
TEST(GrpcStatusTest, LongMessagesAreCut) {
  const std::string name(1 << 20, 'n');
  const grpc::Status g =
      ToGrpcStatus(absl::NotFoundError("fetch '" + name + "' is not in the graph"));
  EXPECT_EQ(g.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(g.error_message().size(), kMaxGrpcErrorMessageBytes);
  EXPECT_EQ(g.error_message().rfind("fetch 'nnn", 0), 0u);
  EXPECT_NE(g.error_message().find("1048604 bytes, cut)"), std::string::npos)
      << g.error_message().substr(4000);
  const std::string fits(kMaxGrpcErrorMessageBytes, 'x');
  EXPECT_EQ(ToGrpcStatus(absl::InternalError(fits)).error_message(), fits);
}

}  // namespace
}  // namespace overseer

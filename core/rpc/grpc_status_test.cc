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

}  // namespace
}  // namespace overseer

#include "core/rpc/health_service.h"

#include <memory>
#include <thread>
#include <vector>

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class HealthServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&health_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = Health::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    health_.Shutdown();
    server_->Shutdown();
  }

  grpc::Status Check(const std::string& service, HealthCheckResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    HealthCheckRequest request;
    request.set_service(service);
    return stub_->Check(&context, request, response);
  }

  HealthService health_{absl::Milliseconds(20)};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(HealthServiceTest, CheckReportsTheStatusOrNotFound) {
  HealthCheckResponse response;
  EXPECT_EQ(Check("", &response).error_code(), grpc::StatusCode::NOT_FOUND);
  health_.SetStatus("", HealthCheckResponse::NOT_SERVING);
  ASSERT_TRUE(Check("", &response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  health_.SetStatus("", HealthCheckResponse::SERVING);
  health_.SetStatus("overseer.Worker", HealthCheckResponse::NOT_SERVING);
  ASSERT_TRUE(Check("", &response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  ASSERT_TRUE(Check("overseer.Worker", &response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  // After Shutdown everything is NOT_SERVING for good.
  health_.Shutdown();
  health_.SetStatus("", HealthCheckResponse::SERVING);
  ASSERT_TRUE(Check("", &response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
}

TEST_F(HealthServiceTest, WatchSendsTheStatusThenEveryChangeAndEndsAtShutdown) {
  health_.SetStatus("", HealthCheckResponse::NOT_SERVING);
  grpc::ClientContext context;
  HealthCheckRequest request;
  auto reader = stub_->Watch(&context, request);
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  health_.SetStatus("", HealthCheckResponse::SERVING);
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  health_.Shutdown();
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(HealthServiceTest, WatchOfAnUnknownServiceSaysSoAndEndsWhenTheClientCancels) {
  grpc::ClientContext context;
  HealthCheckRequest request;
  request.set_service("nope");
  auto reader = stub_->Watch(&context, request);
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVICE_UNKNOWN);
  context.TryCancel();
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The server notices (within the poll period) and its handler returns: the server
  // shuts down without waiting for it (TearDown would hang otherwise).
}

}  // namespace
}  // namespace overseer

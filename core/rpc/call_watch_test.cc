#include "core/rpc/call_watch.h"

#include <chrono>
#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// Check blocks, watched, until its call is cancelled (or `release` is notified).
class BlockingService : public Health::Service {
 public:
  grpc::Status Check(grpc::ServerContext* context, const HealthCheckRequest*,
                     HealthCheckResponse* response) override {
    absl::Notification cancelled;
    {
      CallWatch watch(context, [&] {
        fired_calls.fetch_add(1);
        cancelled.Notify();
      });
      entered.Notify();
      // Bounded so that a broken watcher fails the test instead of hanging it.
      while (!cancelled.WaitForNotificationWithTimeout(absl::Milliseconds(20))) {
        if (release.HasBeenNotified()) break;
        if (absl::Now() > give_up) break;
      }
    }
    returned_cancelled = cancelled.HasBeenNotified();
    returned.Notify();
    response->set_status(HealthCheckResponse::SERVING);
    return grpc::Status::OK;
  }

  absl::Notification entered;
  absl::Notification release;
  absl::Notification returned;
  std::atomic<int> fired_calls{0};
  bool returned_cancelled = false;
  absl::Time give_up = absl::Now() + absl::Seconds(60);
};

class CallWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = Health::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (!service_.release.HasBeenNotified()) service_.release.Notify();
    server_->Shutdown();
  }

  BlockingService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(CallWatchTest, AClientCancelWakesTheHandler) {
  grpc::ClientContext context;
  HealthCheckResponse response;
  grpc::Status status;
  std::thread call([&] { status = stub_->Check(&context, HealthCheckRequest(), &response); });
  service_.entered.WaitForNotification();
  EXPECT_EQ(CallWatch::NumWatched(), 1);
  context.TryCancel();
  service_.returned.WaitForNotification();
  call.join();
  EXPECT_TRUE(service_.returned_cancelled);
  EXPECT_EQ(service_.fired_calls.load(), 1);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(CallWatch::NumWatched(), 0);
}

TEST_F(CallWatchTest, AnExpiredClientDeadlineWakesTheHandler) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  HealthCheckResponse response;
  const grpc::Status status = stub_->Check(&context, HealthCheckRequest(), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  service_.returned.WaitForNotification();
  EXPECT_TRUE(service_.returned_cancelled);
  EXPECT_EQ(service_.fired_calls.load(), 1);
}

TEST_F(CallWatchTest, ShutdownCancelsAWatchedCall) {
  grpc::ClientContext context;
  HealthCheckResponse response;
  grpc::Status status;
  std::thread call([&] { status = stub_->Check(&context, HealthCheckRequest(), &response); });
  service_.entered.WaitForNotification();
  // The deadline of a drain passes: gRPC cancels the calls still running.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(50));
  call.join();
  EXPECT_TRUE(service_.returned.HasBeenNotified());
  EXPECT_TRUE(service_.returned_cancelled);
  EXPECT_NE(status.error_code(), grpc::StatusCode::OK);
}

TEST_F(CallWatchTest, ACallThatEndsNormallyNeverFires) {
  grpc::ClientContext context;
  HealthCheckResponse response;
  grpc::Status status;
  std::thread call([&] { status = stub_->Check(&context, HealthCheckRequest(), &response); });
  service_.entered.WaitForNotification();
  service_.release.Notify();
  call.join();
  EXPECT_TRUE(status.ok());
  // The reply came after the handler set returned_cancelled, but through a socket, which
  // orders nothing for ThreadSanitizer: its notification does.
  service_.returned.WaitForNotification();
  EXPECT_FALSE(service_.returned_cancelled);
  EXPECT_EQ(service_.fired_calls.load(), 0);
  EXPECT_EQ(CallWatch::NumWatched(), 0);
}

}  // namespace
}  // namespace overseer

#include "core/rpc/completion_queue_loop.h"

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/rpc/client_context.h"
#include "core/rpc/server_runner.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "grpcpp/alarm.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// A relay on the loop: its Check asks an upstream server's Check (on the loop's queue)
// and answers with the upstream's status, recording the threads each stage ran on.
class Relay final : public Health::WithAsyncMethod_Check<Health::Service> {
 public:
  Relay(CompletionQueueLoop* loop, std::shared_ptr<grpc::Channel> upstream)
      : loop_(loop), upstream_(Health::NewStub(std::move(upstream))) {
    loop_->OnStart([this] { Await(); });
  }

  // The threads the last call arrived and was answered on. Read under a lock: the
  // client's reply orders the writes only through a socket, which ThreadSanitizer does
  // not see.
  std::thread::id arrival_thread() const {
    absl::MutexLock lock(&mu_);
    return arrival_thread_;
  }
  std::thread::id reply_thread() const {
    absl::MutexLock lock(&mu_);
    return reply_thread_;
  }

 private:
  struct Call {
    grpc::ServerContext context;
    HealthCheckRequest request;
    HealthCheckResponse response;
    grpc::ServerAsyncResponseWriter<HealthCheckResponse> responder{&context};
    std::unique_ptr<grpc::ClientContext> upstream_context;
    std::unique_ptr<grpc::ClientAsyncResponseReader<HealthCheckResponse>> reader;
    grpc::Status upstream_status;
  };

  void Await() {
    auto* call = new Call;
    RequestCheck(&call->context, &call->request, &call->responder, loop_->cq(), loop_->cq(),
                 CompletionQueueLoop::NewTag([this, call](bool ok) {
                   if (!ok) {
                     delete call;
                     return;
                   }
                   Await();
                   Arrived(call);
                 }));
  }

  void Arrived(Call* call) {
    loop_->Hold();
    {
      absl::MutexLock lock(&mu_);
      arrival_thread_ = std::this_thread::get_id();
    }
    call->upstream_context = NewClientContext(absl::Seconds(30));
    call->reader =
        upstream_->PrepareAsyncCheck(call->upstream_context.get(), call->request, loop_->cq());
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->upstream_status,
                         CompletionQueueLoop::NewTag([this, call](bool) {
                           {
                             absl::MutexLock lock(&mu_);
                             reply_thread_ = std::this_thread::get_id();
                           }
                           call->responder.Finish(call->response, call->upstream_status,
                                                  CompletionQueueLoop::NewTag([this, call](bool) {
                                                    delete call;
                                                    loop_->Release();
                                                  }));
                         }));
  }

  CompletionQueueLoop* const loop_;
  std::unique_ptr<Health::Stub> upstream_;
  mutable absl::Mutex mu_;
  std::thread::id arrival_thread_ ABSL_GUARDED_BY(mu_);
  std::thread::id reply_thread_ ABSL_GUARDED_BY(mu_);
};

std::shared_ptr<grpc::Channel> Dial(const std::string& address) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

class CompletionQueueLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerRunnerOptions options;
    options.component = "upstream";
    options.host = "127.0.0.1";
    options.metrics_port = -1;
    options.handle_signals = false;
    upstream_ = std::make_unique<ServerRunner>(options);
    ASSERT_TRUE(upstream_->Start().ok());
    upstream_->SetServing(true);

    relay_ = std::make_unique<Relay>(&loop_, Dial(upstream_->address()));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(relay_.get());
    loop_.Attach(&builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    loop_.Start();
    stub_ = Health::NewStub(Dial("127.0.0.1:" + std::to_string(port)));
  }

  void TearDown() override {
    server_->Shutdown();
    loop_.Shutdown();
  }

  HealthCheckResponse::ServingStatus Check(grpc::Status* status) {
    auto context = NewClientContext(absl::Seconds(30));
    HealthCheckResponse response;
    *status = stub_->Check(context.get(), HealthCheckRequest(), &response);
    return response.status();
  }

  std::unique_ptr<ServerRunner> upstream_;
  CompletionQueueLoop loop_;
  std::unique_ptr<Relay> relay_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(CompletionQueueLoopTest, CallAndNestedReplyRunOnTheLoopThread) {
  EXPECT_TRUE(loop_.running());
  grpc::Status status;
  EXPECT_EQ(Check(&status), HealthCheckResponse::SERVING);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(relay_->arrival_thread(), std::this_thread::get_id());
  EXPECT_EQ(relay_->reply_thread(), relay_->arrival_thread());
  // The upstream's answer changes: the relay passes the new one on.
  upstream_->SetServing(false);
  EXPECT_EQ(Check(&status), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(relay_->reply_thread(), relay_->arrival_thread());
}

TEST_F(CompletionQueueLoopTest, ShutdownWaitsForHeldWorkWhileTheLoopRuns) {
  server_->Shutdown();
  loop_.Hold();
  std::thread shutdown([this] { loop_.Shutdown(); });
  // Held work still completes operations on the queue while Shutdown waits.
  absl::Notification ran;
  grpc::Alarm alarm;
  alarm.Set(loop_.cq(), absl::ToChronoTime(absl::Now()), CompletionQueueLoop::NewTag([&](bool ok) {
              EXPECT_TRUE(ok);
              ran.Notify();
            }));
  ran.WaitForNotification();
  loop_.Release();
  shutdown.join();
  EXPECT_FALSE(loop_.running());
  loop_.Shutdown();  // Idempotent.
}

TEST_F(CompletionQueueLoopTest, OnlyARunningLoopCanBeHeldByWorkOfItsOwn) {
  server_->Shutdown();
  ASSERT_TRUE(loop_.HoldIfRunning());
  std::thread shutdown([this] { loop_.Shutdown(); });
  // Once Shutdown began, nothing more is held (the held work is waited for).
  while (loop_.HoldIfRunning()) {
    loop_.Release();
    absl::SleepFor(absl::Milliseconds(1));
  }
  loop_.Release();
  shutdown.join();
  EXPECT_FALSE(loop_.HoldIfRunning());
}

TEST(CompletionQueueLoopNotStartedTest, ShutdownOfAnAttachedLoopThatNeverRanReturns) {
  CompletionQueueLoop loop;
  EXPECT_FALSE(loop.running());
  grpc::ServerBuilder builder;
  loop.Attach(&builder);
  loop.Shutdown();
  EXPECT_FALSE(loop.running());
}

}  // namespace
}  // namespace overseer

#include "master/rpc/grpc_master.h"

#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "core/rpc/server_runner.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "master/master.h"
#include "master/placement_test_util.h"
#include "master/rpc/grpc_master_service.h"
#include "master/testing/fake_workers.h"
#include "prometheus/text_serializer.h"
#include "testing/eventually.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

class GrpcMasterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MasterOptions options;
    options.gc_thread = false;
    options.readiness.check_thread = false;
    master_ = std::make_unique<Master>(MasterEnv{&cache_, MasterClock()}, options);
    ServerRunnerOptions ro;
    ro.component = "master";
    ro.host = "127.0.0.1";
    ro.metrics_port = -1;
    ro.handle_signals = false;
    runner_ = std::make_unique<ServerRunner>(ro);
    service_ = std::make_unique<GrpcMasterService>(master_.get(), runner_->metrics(),
                                                   runner_->AddCompletionQueueLoop());
    runner_->AddService(service_.get());
    ASSERT_TRUE(runner_->Start().ok());
    client_ = std::make_unique<GrpcMaster>(NewMasterChannel(runner_->address()), absl::Seconds(30));
  }

  // The master's clock: the fake one, which jumps to a wait's deadline at once.
  virtual Clock* MasterClock() { return &clock_; }

  test::FakeClock clock_{test::FakeClock::Mode::kAutoAdvance};
  test::FakeCache cache_;
  std::unique_ptr<Master> master_;
  // Declared before the runner: a service outlives the server that calls it.
  std::unique_ptr<GrpcMasterService> service_;
  std::unique_ptr<ServerRunner> runner_;
  std::unique_ptr<GrpcMaster> client_;
};

TEST_F(GrpcMasterTest, SessionRoundTripAndErrorCodesCrossTheWire) {
  CreateSessionRequest create;
  test::AddConst(create.mutable_graph_def(), "w", 2, "/job:ps");
  CreateSessionResponse created;
  ASSERT_TRUE(client_->CreateSession(create, &created).ok());
  RunStepRequest run;
  run.set_session_handle(created.session_handle());
  run.add_fetch("w:0");
  RunStepResponse out;
  ASSERT_TRUE(client_->RunStep(run, &out).ok());
  ASSERT_EQ(out.tensor_size(), 1);
  run.set_session_handle("gone");
  absl::Status s = client_->RunStep(run, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(absl::StrContains(s.message(), "gone")) << s;
  ListDevicesRequest list;
  ListDevicesResponse devices;
  ASSERT_TRUE(client_->ListDevices(list, &devices).ok());
  EXPECT_EQ(devices.remote_device_size(), 2);
  const std::string text = [&] {
    std::string t;
    for (const auto& f : runner_->metrics()->Collect()) t += f.name + " ";
    return t;
  }();
  EXPECT_TRUE(absl::StrContains(text, "overseer_master_steps_total")) << text;
  // Every call is counted by method, and the failed step by method and code.
  const std::string rpcs =
      prometheus::TextSerializer().Serialize(service_->rpc_metrics()->Collect());
  for (const char* line :
       {"overseer_master_rpc_latency_seconds_count{method=\"CreateSession\"} 1\n",
        "overseer_master_rpc_latency_seconds_count{method=\"RunStep\"} 2\n",
        "overseer_master_rpc_latency_seconds_count{method=\"ListDevices\"} 1\n",
        "overseer_master_rpc_latency_seconds_count{method=\"WaitForReady\"} 0\n",
        "overseer_master_rpc_errors_total{code=\"ABORTED\",method=\"RunStep\"} 1\n",
        "overseer_master_rpc_errors_total{code=\"ABORTED\",method=\"CreateSession\"} 0\n",
        "overseer_master_rpc_errors_total{code=\"UNAVAILABLE\",method=\"RunStep\"} 0\n"}) {
    EXPECT_TRUE(absl::StrContains(rpcs, line)) << line << rpcs;
  }
}

TEST_F(GrpcMasterTest, ConcurrentStepsAndRetriedStepsOverTheWire) {
  CreateSessionRequest create;
  test::AddConst(create.mutable_graph_def(), "w", 2, "/job:ps");
  CreateSessionResponse created;
  ASSERT_TRUE(client_->CreateSession(create, &created).ok());
  constexpr int kThreads = 8;
  constexpr int kSteps = 25;
  std::vector<int> ok(kThreads, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < kSteps; ++j) {
        RunStepRequest run;
        run.set_session_handle(created.session_handle());
        run.add_fetch("w:0");
        RunStepResponse out;
        if (client_->RunStep(run, &out).ok() && out.tensor_size() == 1 &&
            Tensor::FromProto(out.tensor(0).tensor())->scalar<float>() == 42.f) {
          ++ok[i];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(ok[i], kSteps) << "thread " << i;
  int runs_before;
  {
    absl::MutexLock l(&cache_.ps()->mu);
    EXPECT_EQ(cache_.ps()->runs, kThreads * kSteps);
    runs_before = cache_.ps()->runs;
  }
  // A retried step (same request id) runs once and gets the first reply.
  RunStepRequest run;
  run.set_session_handle(created.session_handle());
  run.add_fetch("w:0");
  run.set_request_id("retried-step");
  RunStepResponse first, second;
  ASSERT_TRUE(client_->RunStep(run, &first).ok());
  ASSERT_TRUE(client_->RunStep(run, &second).ok());
  EXPECT_EQ(second.tensor_size(), 1);
  EXPECT_EQ(second.SerializeAsString(), first.SerializeAsString());
  absl::MutexLock l(&cache_.ps()->mu);
  EXPECT_EQ(cache_.ps()->runs, runs_before + 1);
}

TEST_F(GrpcMasterTest, AClientThatGivesUpCancelsItsStepOnTheTasks) {
  CreateSessionRequest create;
  test::AddConst(create.mutable_graph_def(), "w", 2, "/job:ps");
  CreateSessionResponse created;
  ASSERT_TRUE(client_->CreateSession(create, &created).ok());
  test::FakeWorker* ps = cache_.ps();
  {
    absl::MutexLock l(&ps->mu);
    ps->run_waits_for_cleanup = true;
  }
  // A step without a timeout of its own waits up to max_step_time.
  GrpcMaster impatient(NewMasterChannel(runner_->address()), absl::Seconds(30),
                       /*max_step_time=*/absl::Milliseconds(300));
  RunStepRequest run;
  run.set_session_handle(created.session_handle());
  run.add_fetch("w:0");
  RunStepResponse out;
  EXPECT_EQ(impatient.RunStep(run, &out).code(), absl::StatusCode::kDeadlineExceeded);
  // The master sees the call end and cancels the step: the ps's RunGraph returns.
  {
    absl::MutexLock l(&ps->mu);
    auto ended = [ps]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(ps->mu) {
      return ps->runs == 1 && ps->waiting == 0 && ps->cleaned.size() == 1;
    };
    EXPECT_TRUE(ps->mu.AwaitWithTimeout(absl::Condition(&ended), absl::Seconds(30)));
    ps->run_waits_for_cleanup = false;
  }
  // The master still answers the abandoned call (counted as a failed RunStep), before
  // the fixture tears the master and the server down under it.
  EXPECT_TRUE(test::Eventually([&] {
    return absl::StrContains(
        prometheus::TextSerializer().Serialize(service_->rpc_metrics()->Collect()),
        "overseer_master_rpc_latency_seconds_count{method=\"RunStep\"} 1\n");
  }));
}

TEST_F(GrpcMasterTest, AFailedRunGraphFailsTheStepOverTheWire) {
  CreateSessionRequest create;
  test::AddConst(create.mutable_graph_def(), "w", 2, "/job:ps");
  CreateSessionResponse created;
  ASSERT_TRUE(client_->CreateSession(create, &created).ok());
  {
    absl::MutexLock l(&cache_.ps()->mu);
    cache_.ps()->run_error = absl::InvalidArgumentError("kernel failed");
  }
  RunStepRequest run;
  run.set_session_handle(created.session_handle());
  run.add_fetch("w:0");
  RunStepResponse out;
  absl::Status s = client_->RunStep(run, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "task /job:ps/replica:0/task:0: kernel failed")) << s;
  // RunCallable takes the same path.
  MakeCallableRequest make;
  make.set_session_handle(created.session_handle());
  make.mutable_options()->add_fetch("w:0");
  MakeCallableResponse made;
  ASSERT_TRUE(client_->MakeCallable(make, &made).ok());
  RunCallableRequest call;
  call.set_session_handle(created.session_handle());
  call.set_handle(made.handle());
  RunCallableResponse called;
  EXPECT_EQ(client_->RunCallable(call, &called).code(), absl::StatusCode::kInvalidArgument);
  {
    absl::MutexLock l(&cache_.ps()->mu);
    cache_.ps()->run_error = absl::OkStatus();
  }
  ASSERT_TRUE(client_->RunCallable(call, &called).ok());
  EXPECT_EQ(called.fetch_size(), 1);
}

using test::Eventually;

// A master whose clock never moves: its waits end only by a mark or a cancellation.
class GrpcMasterStillClockTest : public GrpcMasterTest {
 protected:
  Clock* MasterClock() override { return &still_clock_; }
  test::FakeClock still_clock_;
};

TEST_F(GrpcMasterStillClockTest, AWaitForReadyWhoseClientGivesUpEndsOnTheServer) {
  auto stub = MasterService::NewStub(NewMasterChannel(runner_->address()));
  WaitForReadyRequest wait;
  wait.set_key("model");
  wait.set_timeout_ms(60000);
  grpc::ClientContext context;
  WaitForReadyResponse answer;
  grpc::Status called;
  std::thread caller([&] { called = stub->WaitForReady(&context, wait, &answer); });
  ASSERT_TRUE(Eventually([&] { return master_->readiness()->num_waiters() == 1; }));
  context.TryCancel();
  caller.join();
  EXPECT_EQ(called.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(Eventually([&] { return master_->readiness()->num_waiters() == 0; }))
      << "the server still waits for a client that gave up";
}

TEST_F(GrpcMasterTest, ReadinessAndJobDoneCrossTheWire) {
  WaitForReadyRequest wait;
  wait.set_key("model");
  wait.set_timeout_ms(10);
  WaitForReadyResponse answer;
  ASSERT_TRUE(client_->WaitForReady(wait, &answer).ok());
  EXPECT_FALSE(answer.ready());
  EXPECT_TRUE(absl::StrContains(answer.reason(), "'model'")) << answer.reason();
  MarkReadyRequest mark;
  mark.set_key("model");
  MarkReadyResponse marked;
  ASSERT_TRUE(client_->MarkReady(mark, &marked).ok());
  answer.Clear();
  ASSERT_TRUE(client_->WaitForReady(wait, &answer).ok());
  EXPECT_TRUE(answer.ready());
  WithdrawReadyRequest withdraw;
  withdraw.set_key("model");
  WithdrawReadyResponse withdrawn;
  ASSERT_TRUE(client_->WithdrawReady(withdraw, &withdrawn).ok());
  answer.Clear();
  ASSERT_TRUE(client_->WaitForReady(wait, &answer).ok());
  EXPECT_FALSE(answer.ready());
  JobDoneResponse done;
  ASSERT_TRUE(client_->JobDone(JobDoneRequest(), &done).ok());
  {
    // The master told the task from a thread of its own: read under the fake's lock.
    absl::MutexLock l(&cache_.ps()->mu);
    EXPECT_EQ(cache_.ps()->job_dones, 1);
    cache_.ps()->dead = true;
  }
  absl::Status s = client_->MarkReady(mark, &marked);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps/replica:0/task:0")) << s;
}

}  // namespace
}  // namespace overseer

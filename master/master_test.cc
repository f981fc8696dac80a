#include "master/master.h"

#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "master/placement_test_util.h"
#include "master/testing/fake_workers.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using test::AddBinary;
using test::AddConst;
using test::FakeCache;
using test::FakeClock;

class MasterTest : public ::testing::Test {
 protected:
  MasterTest() {
    options_.gc_thread = false;
    options_.readiness.check_thread = false;
    options_.session_gc_idle = absl::Minutes(10);
    options_.create_session_wait = absl::Seconds(5);
    master_ = std::make_unique<Master>(MasterEnv{&cache_, &clock_}, options_);
  }

  // "w" on the ps, "y = w + one" on the worker.
  static GraphDef TwoTaskGraph() {
    GraphDef g;
    AddConst(&g, "w", 2, "/job:ps");
    AddConst(&g, "one", 1);
    AddBinary(&g, "y", "Add", "w", "one");
    return g;
  }

  std::string Create(const GraphDef& g = TwoTaskGraph()) {
    CreateSessionRequest req;
    *req.mutable_graph_def() = g;
    CreateSessionResponse resp;
    absl::Status s = master_->CreateSession(req, &resp);
    EXPECT_TRUE(s.ok()) << s;
    return resp.session_handle();
  }

  absl::Status Run(const std::string& handle, RunStepResponse* resp) {
    RunStepRequest req;
    req.set_session_handle(handle);
    req.add_fetch("y:0");
    return master_->RunStep(req, resp);
  }

  // A step of session `h` on the ps alone that waits there until CleanupGraph ends it
  // (as a dequeue from an empty queue does), run on a thread of its own.
  class WaitingStep {
   public:
    WaitingStep(Master* master, test::FakeWorker* ps, const std::string& h) : ps_(ps) {
      {
        absl::MutexLock l(&ps_->mu);
        ps_->run_waits_for_cleanup = true;
      }
      thread_ = std::thread([this, master, h] {
        RunStepRequest req;
        req.set_session_handle(h);
        req.add_fetch("w:0");
        RunStepResponse r;
        status_ = master->RunStep(req, &r);
        done_.Notify();
      });
    }
    // Releases the step if it still waits.
    ~WaitingStep() {
      if (!done_.HasBeenNotified()) {
        absl::MutexLock l(&ps_->mu);
        ps_->release_waiting = true;
      }
      thread_.join();
    }
    // Waits (up to a minute) until `n` steps wait on the ps.
    bool Waiting(int n) {
      absl::MutexLock l(&ps_->mu);
      auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(ps_->mu) { return ps_->waiting == n; };
      return ps_->mu.AwaitWithTimeout(absl::Condition(&reached), absl::Seconds(60));
    }
    // Waits (up to a minute) until the step ended; then its status.
    bool Ended() { return done_.WaitForNotificationWithTimeout(absl::Seconds(60)); }
    const absl::Status& status() const { return status_; }

   private:
    test::FakeWorker* const ps_;
    absl::Status status_;
    absl::Notification done_;
    std::thread thread_;
  };

  FakeClock clock_{FakeClock::Mode::kAutoAdvance};
  FakeCache cache_;
  MasterOptions options_;
  std::unique_ptr<Master> master_;
};

TEST_F(MasterTest, RunStepRegistersOncePerSignatureAndRunsEveryTask) {
  const std::string h = Create();
  EXPECT_EQ(cache_.ps()->sessions.count(h), 1u);
  for (int i = 0; i < 3; ++i) {
    RunStepResponse resp;
    ASSERT_TRUE(Run(h, &resp).ok());
    ASSERT_EQ(resp.tensor_size(), 1);
    EXPECT_EQ(resp.tensor(0).name(), "y:0");
  }
  EXPECT_EQ(cache_.ps()->graphs.size(), 1u);
  EXPECT_EQ(cache_.worker()->graphs.size(), 1u);
  EXPECT_EQ(cache_.ps()->runs, 3);
  EXPECT_EQ(cache_.worker()->runs, 3);
  CloseSessionRequest close;
  close.set_session_handle(h);
  CloseSessionResponse cresp;
  ASSERT_TRUE(master_->CloseSession(close, &cresp).ok());
  {
    // Every step is cleaned up on the ps, which sends to the worker: steps 1 and 2 by
    // the next step's RunGraph there, the last by CleanupGraph as the session closes.
    absl::MutexLock l(&cache_.ps()->mu);
    EXPECT_EQ(cache_.ps()->carried.size(), 2u);
    EXPECT_EQ(cache_.ps()->cleanups, 1);
  }
  EXPECT_TRUE(cache_.ps()->sessions.empty());
  RunStepResponse resp;
  EXPECT_EQ(Run(h, &resp).code(), absl::StatusCode::kAborted);
}

TEST_F(MasterTest, UnknownSessionIsAborted) {
  RunStepResponse resp;
  absl::Status s = Run("nope", &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(absl::StrContains(s.message(), "nope")) << s;
}

TEST_F(MasterTest, CreateSessionWaitsThenNamesEveryMissingTask) {
  cache_.ps()->dead = true;
  CreateSessionRequest req;
  *req.mutable_graph_def() = TwoTaskGraph();
  CreateSessionResponse resp;
  const absl::Time start = clock_.Now();
  absl::Status s = master_->CreateSession(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps/replica:0/task:0")) << s;
  EXPECT_FALSE(absl::StrContains(s.message(), "/job:worker")) << s;
  EXPECT_GE(clock_.Now() - start, options_.create_session_wait);
  // Filtering the dead task out makes the session possible (everything on the worker).
  req.mutable_config()->add_device_filters("/job:worker");
  GraphDef local;
  AddConst(&local, "c", 1);
  *req.mutable_graph_def() = local;
  ASSERT_TRUE(master_->CreateSession(req, &resp).ok());
  EXPECT_EQ(cache_.ps()->sessions.size(), 0u);
}

// With a task down, CreateSession waits for it no longer than its caller does: 20
// callers that gave up after a second no longer kept 20 master threads waiting 60 s.
TEST_F(MasterTest, CreateSessionWaitsNoLongerThanTheCallersDeadline) {
  cache_.ps()->dead = true;
  CreateSessionRequest req;
  *req.mutable_graph_def() = TwoTaskGraph();
  CreateSessionResponse resp;
  const absl::Time start = clock_.Now();
  absl::Status s = master_->CreateSessionWithDeadline(req, &resp, start + absl::Seconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_GE(clock_.Now() - start, absl::Seconds(1));
  EXPECT_LT(clock_.Now() - start, options_.create_session_wait);
}

// A graph may hold at most max_graph_bytes, created or extended; the session's graph is
// unchanged by a refused extension.
TEST_F(MasterTest, GraphsBeyondTheSizeLimitAreResourceExhausted) {
  options_.max_graph_bytes = 4096;
  master_ = std::make_unique<Master>(MasterEnv{&cache_, &clock_}, options_);
  GraphDef big = TwoTaskGraph();
  NodeDef* padded = big.add_node();
  padded->set_name("padded");
  padded->set_op("NoOp");
  (*padded->mutable_attr())["_pad"].set_s(std::string(8192, 'x'));
  CreateSessionRequest req;
  *req.mutable_graph_def() = big;
  CreateSessionResponse resp;
  absl::Status s = master_->CreateSession(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "--max_graph_mib")) << s;

  const std::string h = Create();
  ExtendSessionRequest extend;
  extend.set_session_handle(h);
  *extend.mutable_graph_def()->add_node() = big.node(big.node_size() - 1);
  ExtendSessionResponse extended;
  EXPECT_EQ(master_->ExtendSession(extend, &extended).code(), absl::StatusCode::kResourceExhausted);
  RunStepResponse ran;
  EXPECT_TRUE(Run(h, &ran).ok());  // The session still works, on its old graph.
}

TEST_F(MasterTest, SessionsBeyondTheLimitAreResourceExhausted) {
  options_.max_sessions = 2;
  master_ = std::make_unique<Master>(MasterEnv{&cache_, &clock_}, options_);
  const std::string first = Create();
  Create();
  CreateSessionRequest req;
  *req.mutable_graph_def() = TwoTaskGraph();
  CreateSessionResponse resp;
  absl::Status s = master_->CreateSession(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "--max_sessions")) << s;
  CloseSessionRequest close;
  close.set_session_handle(first);
  CloseSessionResponse closed;
  ASSERT_TRUE(master_->CloseSession(close, &closed).ok());
  EXPECT_TRUE(master_->CreateSession(req, &resp).ok());
}

TEST_F(MasterTest, ConstraintOnAFilteredOutTaskIsInvalidArgument) {
  CreateSessionRequest req;
  *req.mutable_graph_def() = TwoTaskGraph();
  req.mutable_config()->add_device_filters("/job:worker");
  CreateSessionResponse resp;
  ASSERT_TRUE(master_->CreateSession(req, &resp).ok());
  RunStepResponse run;
  absl::Status s = Run(resp.session_handle(), &run);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "'w'")) << s;
}

// ConfigProto.allow_soft_placement: a device type no task has falls back to the task's
// CPU; without it the step fails naming the node.
TEST_F(MasterTest, SoftPlacementRunsANodeThatAsksForAGpu) {
  GraphDef g;
  AddConst(&g, "w", 2, "/job:ps/device:GPU:0");
  AddConst(&g, "one", 1);
  AddBinary(&g, "y", "Add", "w", "one");
  RunStepResponse run;
  const absl::Status hard = Run(Create(g), &run);
  EXPECT_EQ(hard.code(), absl::StatusCode::kInvalidArgument) << hard;
  EXPECT_TRUE(absl::StrContains(hard.message(), "'w'")) << hard;

  CreateSessionRequest req;
  *req.mutable_graph_def() = g;
  req.mutable_config()->set_allow_soft_placement(true);
  req.mutable_config()->set_log_device_placement(true);
  CreateSessionResponse resp;
  ASSERT_TRUE(master_->CreateSession(req, &resp).ok());
  const absl::Status soft = Run(resp.session_handle(), &run);
  ASSERT_TRUE(soft.ok()) << soft;
}

// A cluster's sessions share the tasks' state: isolation is refused, not ignored.
TEST_F(MasterTest, IsolateSessionStateIsInvalidArgument) {
  CreateSessionRequest req;
  *req.mutable_graph_def() = TwoTaskGraph();
  req.mutable_config()->set_isolate_session_state(true);
  CreateSessionResponse resp;
  const absl::Status s = master_->CreateSession(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "isolate_session_state")) << s;
}

TEST_F(MasterTest, RestartedTaskAbortsTheSessionNamingIt) {
  const std::string h = Create();
  RunStepResponse resp;
  ASSERT_TRUE(Run(h, &resp).ok());
  cache_.ps()->Restart();
  absl::Status s = Run(h, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps/replica:0/task:0")) << s;
  // The session stays aborted.
  s = Run(h, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(absl::StrContains(s.message(), "restarted")) << s;
}

TEST_F(MasterTest, AnAbortEndsTheSessionsStepsStillRunning) {
  const std::string h = Create();
  RunStepResponse resp;
  ASSERT_TRUE(Run(h, &resp).ok());
  WaitingStep waiter(master_.get(), cache_.ps(), h);
  ASSERT_TRUE(waiter.Waiting(1));
  // The worker restarts; the next step that reaches it aborts the session.
  cache_.worker()->Restart();
  absl::Status s = Run(h, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  // The waiting step ends with the abort: no step of the session can run again to
  // end its wait.
  ASSERT_TRUE(waiter.Ended()) << "the waiting step did not end with the session's abort";
  EXPECT_EQ(waiter.status().code(), absl::StatusCode::kAborted) << waiter.status();
  EXPECT_TRUE(absl::StrContains(waiter.status().message(), "/job:worker/replica:0/task:0"))
      << waiter.status();
  EXPECT_TRUE(waiter.Waiting(0));
}

TEST_F(MasterTest, ClosingASessionEndsItsStepsStillRunning) {
  const std::string h = Create();
  RunStepResponse resp;
  ASSERT_TRUE(Run(h, &resp).ok());
  WaitingStep waiter(master_.get(), cache_.ps(), h);
  ASSERT_TRUE(waiter.Waiting(1));
  CloseSessionRequest close;
  close.set_session_handle(h);
  CloseSessionResponse closed;
  ASSERT_TRUE(master_->CloseSession(close, &closed).ok());
  ASSERT_TRUE(waiter.Ended()) << "the waiting step did not end with its session's close";
  EXPECT_EQ(waiter.status().code(), absl::StatusCode::kCancelled) << waiter.status();
  EXPECT_TRUE(absl::StrContains(waiter.status().message(), "was closed")) << waiter.status();
  EXPECT_TRUE(waiter.Waiting(0));
}

TEST_F(MasterTest, DeadTaskIsUnavailableNamingIt) {
  const std::string h = Create();
  cache_.ps()->dead = true;
  RunStepResponse resp;
  absl::Status s = Run(h, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps/replica:0/task:0")) << s;
}

TEST_F(MasterTest, ExtendChecksTheVersionAndRetriesApplyOnce) {
  const std::string h = Create();
  ExtendSessionRequest req;
  req.set_session_handle(h);
  req.set_current_graph_version(0);
  req.set_request_id("r1");
  AddBinary(req.mutable_graph_def(), "z", "Mul", "y", "one");
  ExtendSessionResponse resp;
  ASSERT_TRUE(master_->ExtendSession(req, &resp).ok());
  EXPECT_EQ(resp.new_graph_version(), 1);
  // A retry with the same id is answered from memory, not applied again.
  ExtendSessionResponse again;
  ASSERT_TRUE(master_->ExtendSession(req, &again).ok());
  EXPECT_EQ(again.new_graph_version(), 1);
  // A different request on the stale version loses.
  req.set_request_id("r2");
  req.mutable_graph_def()->mutable_node(0)->set_name("z2");
  EXPECT_EQ(master_->ExtendSession(req, &resp).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(MasterTest, IdleSessionsAreCollectedOnTheClock) {
  const std::string h = Create();
  clock_.Advance(absl::Minutes(9));
  EXPECT_EQ(master_->CollectIdleSessions(), 0);
  RunStepResponse resp;
  ASSERT_TRUE(Run(h, &resp).ok());  // Touches the session.
  clock_.Advance(absl::Minutes(9));
  EXPECT_EQ(master_->CollectIdleSessions(), 0);
  clock_.Advance(absl::Minutes(2));
  EXPECT_EQ(master_->CollectIdleSessions(), 1);
  EXPECT_EQ(master_->NumSessions(), 0);
  EXPECT_TRUE(cache_.ps()->sessions.empty());
  EXPECT_EQ(Run(h, &resp).code(), absl::StatusCode::kAborted);
}

TEST_F(MasterTest, ASessionWithAStepRunningIsNotIdle) {
  const std::string h = Create();
  {
    absl::MutexLock l(&cache_.ps()->mu);
    cache_.ps()->run_waits_for_cleanup = true;
  }
  RunStepResponse resp;
  absl::Status step;
  std::thread runner([&] { step = Run(h, &resp); });
  {
    absl::MutexLock l(&cache_.ps()->mu);
    auto waiting = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(cache_.ps()->mu) {
      return cache_.ps()->waiting == 1;
    };
    ASSERT_TRUE(cache_.ps()->mu.AwaitWithTimeout(absl::Condition(&waiting), absl::Seconds(60)));
  }
  // A step longer than the idle time: the session is in use, not idle.
  clock_.Advance(absl::Minutes(20));
  EXPECT_EQ(master_->CollectIdleSessions(), 0);
  EXPECT_EQ(master_->NumSessions(), 1);
  {
    absl::MutexLock l(&cache_.ps()->mu);
    cache_.ps()->release_waiting = true;
  }
  runner.join();
  EXPECT_EQ(step.code(), absl::StatusCode::kCancelled) << step;
  // Once the step is over, the idle time counts from its end.
  clock_.Advance(absl::Minutes(11));
  EXPECT_EQ(master_->CollectIdleSessions(), 1);
}

TEST_F(MasterTest, ResetClearsEveryTaskAndClosesSessions) {
  const std::string h = Create();
  ResetRequest req;
  ResetResponse resp;
  ASSERT_TRUE(master_->Reset(req, &resp).ok());
  EXPECT_EQ(cache_.ps()->cleanup_alls, 1);
  EXPECT_EQ(cache_.worker()->cleanup_alls, 1);
  EXPECT_EQ(master_->NumSessions(), 0);
}

TEST_F(MasterTest, CallablesRunTheirSignature) {
  const std::string h = Create();
  MakeCallableRequest make;
  make.set_session_handle(h);
  make.mutable_options()->add_fetch("y:0");
  MakeCallableResponse made;
  ASSERT_TRUE(master_->MakeCallable(make, &made).ok());
  RunCallableRequest run;
  run.set_session_handle(h);
  run.set_handle(made.handle());
  RunCallableResponse out;
  ASSERT_TRUE(master_->RunCallable(run, &out).ok());
  EXPECT_EQ(out.fetch_size(), 1);
  run.add_feed();
  EXPECT_EQ(master_->RunCallable(run, &out).code(), absl::StatusCode::kInvalidArgument);
  ReleaseCallableRequest rel;
  rel.set_session_handle(h);
  rel.set_handle(made.handle());
  ReleaseCallableResponse rr;
  ASSERT_TRUE(master_->ReleaseCallable(rel, &rr).ok());
  run.clear_feed();
  EXPECT_EQ(master_->RunCallable(run, &out).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(MasterTest, FeedsAreCheckedBeforeRunning) {
  GraphDef g;
  NodeDef* p = test::AddNode(&g, "x", "Placeholder", {});
  SetNodeAttr(p, "dtype", DT_FLOAT);
  SetNodeAttr(p, "shape", PartialShape({2}));
  const std::string h = Create(g);
  RunStepRequest req;
  req.set_session_handle(h);
  req.add_fetch("x:0");
  RunStepResponse resp;
  absl::Status s = master_->RunStep(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "'x'")) << s;
  NamedTensorProto* f = req.add_feed();
  f->set_name("x:0");
  Tensor::Scalar<int32_t>(1).ToProto(f->mutable_tensor());
  s = master_->RunStep(req, &resp);
  EXPECT_TRUE(absl::StrContains(s.message(), "'x:0' has dtype int32")) << s;
  Tensor::Scalar<float>(1).ToProto(f->mutable_tensor());
  s = master_->RunStep(req, &resp);
  EXPECT_TRUE(absl::StrContains(s.message(), "shape")) << s;
  Tensor(DT_FLOAT, TensorShape({2})).ToProto(f->mutable_tensor());
  ASSERT_TRUE(master_->RunStep(req, &resp).ok());
  EXPECT_EQ(cache_.worker()->sends, 1);
}

TEST_F(MasterTest, JobDoneTellsEveryTask) {
  JobDoneRequest req;
  req.set_reason("training finished");
  JobDoneResponse resp;
  ASSERT_TRUE(master_->JobDone(req, &resp).ok());
  EXPECT_EQ(cache_.ps()->job_dones, 1);
  EXPECT_EQ(cache_.worker()->job_dones, 1);
}

TEST_F(MasterTest, JobDoneNamesTheTasksItCouldNotTell) {
  cache_.ps()->dead = true;
  JobDoneResponse resp;
  absl::Status s = master_->JobDone(JobDoneRequest(), &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps/replica:0/task:0")) << s;
  EXPECT_FALSE(absl::StrContains(s.message(), "/job:worker")) << s;
  EXPECT_EQ(cache_.worker()->job_dones, 1);
}

// A chief whose session sees only some tasks (device filters: the classic between-graph
// shape) tells those and only those; a dead task outside the filters does not matter.
TEST_F(MasterTest, JobDoneAndMarkReadyFollowTheDeviceFilters) {
  cache_.ps()->dead = true;
  JobDoneRequest req;
  req.add_device_filters("/job:worker");
  JobDoneResponse resp;
  ASSERT_TRUE(master_->JobDone(req, &resp).ok());
  EXPECT_EQ(cache_.worker()->job_dones, 1);
  EXPECT_EQ(cache_.ps()->job_dones, 0);

  MarkReadyRequest mark;
  mark.set_key("model");
  MarkReadyResponse marked;
  EXPECT_EQ(master_->MarkReady(mark, &marked).code(), absl::StatusCode::kUnavailable);
  mark.add_device_filters("/job:worker");
  ASSERT_TRUE(master_->MarkReady(mark, &marked).ok());
  WaitForReadyRequest wait;
  wait.set_key("model");
  WaitForReadyResponse ready;
  ASSERT_TRUE(master_->WaitForReady(wait, &ready).ok());
  EXPECT_TRUE(ready.ready()) << ready.reason();

  mark.clear_device_filters();
  mark.add_device_filters("/job:nothing");
  EXPECT_EQ(master_->MarkReady(mark, &marked).code(), absl::StatusCode::kInvalidArgument);
  req.clear_device_filters();
  req.add_device_filters("not a device");
  EXPECT_EQ(master_->JobDone(req, &resp).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(MasterTest, ReadinessThroughTheMaster) {
  MarkReadyRequest mark;
  mark.set_key("model");
  MarkReadyResponse marked;
  ASSERT_TRUE(master_->MarkReady(mark, &marked).ok());
  WaitForReadyRequest wait;
  wait.set_key("model");
  WaitForReadyResponse ready;
  ASSERT_TRUE(master_->WaitForReady(wait, &ready).ok());
  EXPECT_TRUE(ready.ready());
  WithdrawReadyRequest withdraw;
  withdraw.set_key("model");
  WithdrawReadyResponse withdrawn;
  ASSERT_TRUE(master_->WithdrawReady(withdraw, &withdrawn).ok());
  ready.Clear();
  ASSERT_TRUE(master_->WaitForReady(wait, &ready).ok());
  EXPECT_FALSE(ready.ready());
  EXPECT_FALSE(ready.reason().empty());
}

}  // namespace
}  // namespace overseer

// TensorFlow's monitored_session_test.py cases for step functions, errors reported to
// the coordinator (RecoverableSessionTest's MonitoredSession cases), and
// SingularMonitoredSessionTest; plus WorkerSessionCreator. DirectSession, manual clock.

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "client/training/monitored_session.h"
#include "client/training/monitored_session_test_util.h"
#include "core/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using test::CountingSessionCreator;
using test::FakeHook;
using test::RaiseOnceAtCountN;
using test::StepGraph;
using ::testing::HasSubstr;

class StepFnTest : public ::testing::Test {
 protected:
  std::unique_ptr<ChiefSessionCreator> Chief() {
    return std::make_unique<ChiefSessionCreator>(g_.root, nullptr, g_.Chief(&clock_));
  }
  std::unique_ptr<MonitoredSession> Monitored(std::vector<SessionRunHook*> hooks = {},
                                              std::unique_ptr<SessionCreator> creator = nullptr) {
    if (creator == nullptr) creator = Chief();
    MonitoredSessionOptions options;
    options.clock = &clock_;
    auto session = MonitoredSession::Create(g_.root, std::move(creator), std::move(hooks), options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }
  std::unique_ptr<SingularMonitoredSession> Singular(std::vector<SessionRunHook*> hooks = {}) {
    SingularMonitoredSessionOptions options;
    static_cast<ChiefSessionCreatorOptions&>(options) = g_.Chief(&clock_);
    auto session = SingularMonitoredSession::Create(g_.root, std::move(hooks), options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }
  // A step function feeding `value` to c and returning v through the hooks.
  StepFn FeedStep(int32_t value, int32_t* result) {
    return [this, value, result](StepContext& context) -> absl::Status {
      std::vector<Tensor> out;
      RETURN_IF_ERROR(context.RunWithHooks({g_.Feed(value)}, {g_.v}, {}, &out));
      *result = StepGraph::Int32(out);
      return absl::OkStatus();
    };
  }
  static int32_t RunV(MonitoredSession& s, const StepGraph& g, int32_t value) {
    std::vector<Tensor> out;
    absl::Status status = s.Run({g.Feed(value)}, {g.v}, {}, &out);
    EXPECT_TRUE(status.ok()) << status;
    return status.ok() ? StepGraph::Int32(out) : -1;
  }

  StepGraph g_;
  test::FakeClock clock_;
};

TEST_F(StepFnTest, StepFnExample) {
  auto session = Monitored();
  int32_t result = 0;
  ASSERT_TRUE(session->RunStepFn(FeedStep(32, &result)).ok());
  EXPECT_EQ(result, 32);
}

TEST_F(StepFnTest, StepFunctionStops) {
  FakeHook hook;
  auto session = Monitored({&hook});
  ASSERT_TRUE(session
                  ->RunStepFn([](StepContext& context) {
                    context.RequestStop();
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_TRUE(session->ShouldStop());
  // RequestStop interrupts the flow before any run: the hooks were not called.
  EXPECT_EQ(hook.calls["before_run"], 0);
  EXPECT_EQ(hook.calls["after_run"], 0);
  EXPECT_EQ(session->RunStepFn([](StepContext&) { return absl::OkStatus(); }).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(session->Close().ok());
  EXPECT_EQ(hook.calls["end"], 1);  // A clean stop.
}

TEST_F(StepFnTest, StepRequestStopInALoop) {
  auto session = Monitored();
  int steps = 0;
  while (!session->ShouldStop()) {
    ASSERT_TRUE(session
                    ->RunStepFn([](StepContext& context) {
                      context.RequestStop();
                      return absl::OkStatus();
                    })
                    .ok());
    ++steps;
  }
  EXPECT_EQ(steps, 1);
}

TEST_F(StepFnTest, RunWithHooksRunsTheHooksAndSessionDoesNot) {
  FakeHook hook;
  auto session = Monitored({&hook});
  ASSERT_TRUE(session
                  ->RunStepFn([&](StepContext& context) -> absl::Status {
                    std::vector<Tensor> out;
                    RETURN_IF_ERROR(context.session()->Run({g_.Feed(1)}, {g_.v}, &out));
                    EXPECT_EQ(hook.calls["before_run"], 0);
                    RETURN_IF_ERROR(context.RunWithHooks({g_.Feed(2)}, {g_.v}, {}, &out));
                    EXPECT_EQ(hook.calls["before_run"], 1);
                    return absl::OkStatus();
                  })
                  .ok());
}

// The stages of TensorFlow's test_step_fn_with_hooks: the hook fetches stage_1_0, the
// step runs stage_0 without hooks then stage_1_1 (after stage_1_0) with them; the
// hook's AfterRun sees both stage 1 additions and runs stage_2 itself.
struct Stages {
  explicit Stages(const Scope& root) {
    var = MakeVariable(root.WithOpName("var"), Input(0.0f));
    stage_0 = ops::AssignAdd(root, var.ref, 0.3f);
    stage_1_0 = ops::AssignAdd(root, var.ref, 0.7f);
    stage_1_1 =
        ops::AssignAdd(root.WithControlDependencies({Operation(stage_1_0.node())}), var.ref, 0.5f);
    stage_2 = ops::AssignAdd(root, var.ref, 1.1f);
  }
  Variable var;
  Output stage_0, stage_1_0, stage_1_1, stage_2;
};

class StagesHook : public SessionRunHook {
 public:
  explicit StagesHook(const Stages* stages) : stages_(stages) {}
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* /*context*/) override {
    SessionRunArgs args;
    args.fetches = {stages_->stage_1_0};
    return args;
  }
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& /*values*/) override {
    std::vector<Tensor> out;
    RETURN_IF_ERROR(context->session()->Run({stages_->var.value}, &out));
    EXPECT_NEAR(out[0].scalar<float>(), 0.3f + 0.5f + 0.7f, 0.01);
    RETURN_IF_ERROR(context->session()->Run({stages_->stage_2}, &out));
    EXPECT_NEAR(out[0].scalar<float>(), 0.3f + 0.5f + 0.7f + 1.1f, 0.01);
    ++after_runs;
    return absl::OkStatus();
  }
  int after_runs = 0;

 private:
  const Stages* const stages_;
};

StepFn StagesStep(const Stages& stages, float* result) {
  return [&stages, result](StepContext& context) -> absl::Status {
    std::vector<Tensor> out;
    RETURN_IF_ERROR(context.session()->Run({stages.stage_0}, &out));
    EXPECT_NEAR(out[0].scalar<float>(), 0.3f, 0.01);
    RETURN_IF_ERROR(context.RunWithHooks({}, {stages.stage_1_1}, {}, &out));
    *result = out[0].scalar<float>();
    return absl::OkStatus();
  };
}

TEST_F(StepFnTest, StepFnWithHooks) {
  Stages stages(g_.root);
  StagesHook hook(&stages);
  auto session = Monitored({&hook});
  float result = 0;
  ASSERT_TRUE(session->RunStepFn(StagesStep(stages, &result)).ok());
  EXPECT_NEAR(result, 0.3f + 0.5f + 0.7f, 0.01);
  EXPECT_EQ(hook.after_runs, 1);
}

TEST_F(StepFnTest, StepFnHasTheSameHooksBehaviorWithoutRecovery) {
  Stages stages(g_.root);
  StagesHook hook(&stages);
  auto session = Singular({&hook});
  float result = 0;
  ASSERT_TRUE(session->RunStepFn(StagesStep(stages, &result)).ok());
  EXPECT_NEAR(result, 0.3f + 0.5f + 0.7f, 0.01);
  EXPECT_EQ(hook.after_runs, 1);
}

TEST_F(StepFnTest, RecoversFromAnErrorInStepFn) {
  bool raised = false;
  auto session = Monitored();
  int32_t result = 0;
  StepFn feed = FeedStep(32, &result);
  ASSERT_TRUE(session
                  ->RunStepFn([&](StepContext& context) -> absl::Status {
                    if (!raised) {
                      raised = true;
                      return absl::AbortedError("Abort");
                    }
                    return feed(context);
                  })
                  .ok());
  EXPECT_TRUE(raised);
  EXPECT_EQ(result, 32);
  EXPECT_EQ(session->recoveries(), 1);
}

// The whole step function is rerun, side effects included: graph_state gets 0.31
// twice (the state survived the recreation, as with TensorFlow's CountingSessionCreator).
TEST_F(StepFnTest, RecoversFromAnErrorInStepFnAfterHooks) {
  Variable state = MakeVariable(g_.root.WithOpName("graph_state"), Input(0.0f));
  Output side_effect = ops::AssignAdd(g_.root, state.ref, 0.31f);
  auto counting = std::make_unique<CountingSessionCreator>(Chief());
  CountingSessionCreator* creator = counting.get();
  auto session = Monitored({}, std::move(counting));
  bool raised = false;
  int side_effects = 0;
  int32_t result = 0;
  ASSERT_TRUE(session
                  ->RunStepFn([&](StepContext& context) -> absl::Status {
                    ++side_effects;
                    std::vector<Tensor> out;
                    RETURN_IF_ERROR(context.session()->Run({side_effect}, &out));
                    RETURN_IF_ERROR(context.RunWithHooks({g_.Feed(32)}, {g_.v}, {}, &out));
                    if (!raised) {
                      raised = true;
                      return absl::AbortedError("Abort");
                    }
                    result = StepGraph::Int32(out);
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(result, 32);
  EXPECT_EQ(side_effects, 2);
  EXPECT_EQ(creator->created, 2);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({state.value}, &out).ok());
  EXPECT_NEAR(out[0].scalar<float>(), 0.62f, 0.01);
}

TEST_F(StepFnTest, StepFnDoesntRecoverWhenItWasntAskedTo) {
  bool raised = false;
  auto session = Singular();
  absl::Status s = session->RunStepFn([&](StepContext&) -> absl::Status {
    raised = true;
    return absl::AbortedError("Abort");
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(raised);
  EXPECT_TRUE(session->ShouldStop());
}

TEST_F(StepFnTest, StepFnErrorFromBeforeRun) {
  Variable state = MakeVariable(g_.root.WithOpName("graph_state"), Input(0.0f));
  Output side_effect = ops::AssignAdd(g_.root, state.ref, 0.31f);
  RaiseOnceAtCountN hook(1, absl::AbortedError("Abort"));
  auto session = Monitored({&hook});
  int side_effects = 0;
  int32_t result = 0;
  ASSERT_TRUE(session
                  ->RunStepFn([&](StepContext& context) -> absl::Status {
                    ++side_effects;
                    std::vector<Tensor> out;
                    RETURN_IF_ERROR(context.session()->Run({side_effect}, &out));
                    RETURN_IF_ERROR(context.RunWithHooks({g_.Feed(13)}, {g_.v}, {}, &out));
                    result = StepGraph::Int32(out);
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(result, 13);
  EXPECT_EQ(side_effects, 2);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({state.value}, &out).ok());
  EXPECT_NEAR(out[0].scalar<float>(), 0.62f, 0.01);
}

// After `calls_before_stopping` runs, a thread of the first coordinator stops it with
// `error`; the run waits until it has (TensorFlow's StopCoordinatorWithException). With
// `fail_training`, the run then fails CANCELLED as a run stuck on the dead thread's
// queue would (FailTrainingAfterCoordinatorStopped).
class StopCoordinatorWithError : public SessionRunHook {
 public:
  StopCoordinatorWithError(int calls_before_stopping, absl::Status error, bool fail_training)
      : calls_(calls_before_stopping), error_(std::move(error)), fail_training_(fail_training) {}
  absl::Status AfterCreateSession(ClientSession* /*session*/, Coordinator* coord) override {
    coord_ = coord;
    if (thread_ != nullptr) return absl::OkStatus();
    thread_ = ManagedThread::Start("stop_with_error", [this, coord] {
      // Also leaves when the coordinator stops (a test that failed before its run).
      while (!go_.WaitForNotificationWithTimeout(absl::Milliseconds(10))) {
        if (coord->ShouldStop()) return;
      }
      coord->RequestStop(error_).IgnoreError();
      stored_.Notify();
    });
    coord->RegisterThread(thread_);
    return absl::OkStatus();
  }
  absl::Status AfterRun(SessionRunContext* /*context*/,
                        const SessionRunValues& /*values*/) override {
    if (--calls_ == 0) {
      go_.Notify();
      stored_.WaitForNotification();
    }
    if (fail_training_ && !coord_->RequestedError().ok()) {
      return absl::CancelledError("Session got garbage-collected.");
    }
    return absl::OkStatus();
  }

 private:
  int calls_;
  const absl::Status error_;
  const bool fail_training_;
  Coordinator* coord_ = nullptr;
  std::shared_ptr<ManagedThread> thread_;
  absl::Notification go_, stored_;
};

// Each case runs twice: with Run and with a step function's RunWithHooks.
class CoordinatorErrorTest : public StepFnTest, public ::testing::WithParamInterface<bool> {
 protected:
  int32_t Step(MonitoredSession& s, int32_t value) {
    if (!GetParam()) return RunV(s, g_, value);
    int32_t result = -1;
    absl::Status status = s.RunStepFn(FeedStep(value, &result));
    EXPECT_TRUE(status.ok()) << status;
    return result;
  }
};

TEST_P(CoordinatorErrorTest, RecoveryFromCoordinatorError) {
  StopCoordinatorWithError hook(2, absl::AbortedError("Aborted at N"), false);
  auto counting = std::make_unique<CountingSessionCreator>(Chief());
  CountingSessionCreator* creator = counting.get();
  auto session = Monitored({&hook}, std::move(counting));
  EXPECT_EQ(creator->created, 1);
  EXPECT_FALSE(session->ShouldStop());
  EXPECT_EQ(Step(*session, 51), 51);
  EXPECT_FALSE(session->ShouldStop());
  // The coordinator is stopped during this run.
  EXPECT_EQ(Step(*session, 42), 42);
  // Even though the coordinator was asked to stop, the session is recreated and
  // training goes on.
  EXPECT_FALSE(session->ShouldStop());
  EXPECT_EQ(creator->created, 2);
  EXPECT_EQ(session->last_recovery_cause().code(), absl::StatusCode::kAborted);
}

TEST_P(CoordinatorErrorTest, RecoveryFromNonPreemptionInCoordinator) {
  StopCoordinatorWithError hook(2, absl::UnknownError("Some fatal error inside the coordinator."),
                                false);
  FakeHook counter;
  auto counting = std::make_unique<CountingSessionCreator>(Chief());
  CountingSessionCreator* creator = counting.get();
  auto session = Monitored({&hook, &counter}, std::move(counting));
  EXPECT_EQ(Step(*session, 51), 51);
  EXPECT_FALSE(session->ShouldStop());
  EXPECT_EQ(Step(*session, 42), 42);
  // Not recoverable: training stops and the session is not recreated.
  EXPECT_TRUE(session->ShouldStop());
  EXPECT_EQ(creator->created, 1);
  EXPECT_EQ(session->Close().code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(counter.calls["end"], 0);
}

TEST_P(CoordinatorErrorTest, RecoveryFromSessionGettingStuck) {
  StopCoordinatorWithError hook(2, absl::AbortedError("Aborted at N"), true);
  auto counting = std::make_unique<CountingSessionCreator>(Chief());
  CountingSessionCreator* creator = counting.get();
  auto session = Monitored({&hook}, std::move(counting));
  EXPECT_EQ(Step(*session, 51), 51);
  EXPECT_FALSE(session->ShouldStop());
  // The run fails CANCELLED; its root cause in the coordinator is ABORTED, so the
  // session is recreated and the run repeated.
  EXPECT_EQ(Step(*session, 42), 42);
  EXPECT_FALSE(session->ShouldStop());
  EXPECT_EQ(creator->created, 2);
}

INSTANTIATE_TEST_SUITE_P(RunAndStepFn, CoordinatorErrorTest, ::testing::Bool());

TEST_F(StepFnTest, RegularErrorReportedToCoordPassesThroughRun) {
  FakeHook counter;
  auto session = Monitored({&counter});
  EXPECT_EQ(RunV(*session, g_, 0), 0);
  ASSERT_TRUE(
      session->coordinator()->RequestStop(absl::InternalError("a thread wants to stop")).ok());
  EXPECT_EQ(RunV(*session, g_, 0), 0);     // Runs still work...
  absl::Status closed = session->Close();  // ...and Close reports it.
  EXPECT_EQ(closed.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(closed.message(), HasSubstr("a thread wants to stop"));
  EXPECT_EQ(counter.calls["end"], 0);
}

TEST_F(StepFnTest, RegularErrorReportedToCoordPassesThroughReturn) {
  auto session = Monitored();
  EXPECT_EQ(RunV(*session, g_, 0), 0);
  ASSERT_TRUE(
      session->coordinator()->RequestStop(absl::InternalError("a thread wants to stop")).ok());
  EXPECT_TRUE(session->ShouldStop());
  EXPECT_EQ(session->Close().code(), absl::StatusCode::kInternal);
}

TEST_F(StepFnTest, SingularHandlesInitialization) {
  Variable a_var = MakeVariable(g_.root.WithOpName("a_var"), Input(0));
  auto session = Singular();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({a_var.value}, &out).ok());
  EXPECT_EQ(out[0].scalar<int32_t>(), 0);
}

TEST_F(StepFnTest, SingularDoesNotHandleAbortedError) {
  RaiseOnceAtCountN hook(1, absl::AbortedError("Abort"));
  auto session = Singular({&hook});
  EXPECT_EQ(session->Run({g_.gstep.value}, nullptr).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(session->recoveries(), 0);
  EXPECT_TRUE(session->ShouldStop());
}

TEST_F(StepFnTest, SingularExitsCleanlyOnOutOfRange) {
  RaiseOnceAtCountN hook(2, absl::OutOfRangeError("EOI"));
  FakeHook counter;
  auto session = Singular({&hook, &counter});
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({g_.gstep.value}, &out).ok());
  EXPECT_EQ(session->Run({g_.do_step}, &out).code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(session->ShouldStop());
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(counter.calls["end"], 1);
}

TEST_F(StepFnTest, SingularRegularErrorReportedToCoordPassesThroughRun) {
  auto session = Singular();
  ASSERT_TRUE(
      session->coordinator()->RequestStop(absl::InternalError("a thread wants to stop")).ok());
  EXPECT_EQ(RunV(*session, g_, 3), 3);
  EXPECT_EQ(session->Close().code(), absl::StatusCode::kInternal);
}

TEST_F(StepFnTest, SingularStopsCleanlyAndGivesTheRawSession) {
  FakeHook hook;
  auto session = Singular({&hook});
  ASSERT_NE(session->raw_session(), nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->raw_session()->Run({g_.do_step}, &out).ok());  // No hooks.
  EXPECT_EQ(hook.calls["before_run"], 0);
  ASSERT_TRUE(session->Run({g_.do_step}, &out).ok());
  EXPECT_EQ(StepGraph::Int64(out), 2);
  EXPECT_FALSE(session->ShouldStop());
  ASSERT_TRUE(session->Close().ok());
  EXPECT_TRUE(session->ShouldStop());
  EXPECT_EQ(session->raw_session(), nullptr);
  EXPECT_EQ(hook.calls["end"], 1);
}

TEST_F(StepFnTest, WorkerSessionCreatorUsesTheModelTheChiefMadeReady) {
  auto chief = Monitored();
  std::vector<Tensor> out;
  ASSERT_TRUE(chief->Run({g_.do_step}, &out).ok());
  WorkerSessionCreatorOptions worker_options;
  worker_options.resource_mgr = &g_.resources;
  worker_options.clock = &clock_;
  auto worker =
      Monitored({}, std::make_unique<WorkerSessionCreator>(g_.root, nullptr, worker_options));
  ASSERT_TRUE(worker->Run({g_.do_step}, &out).ok());
  EXPECT_EQ(StepGraph::Int64(out), 2);
}

TEST_F(StepFnTest, WorkerSessionCreatorTimesOutWhenTheModelIsNotReady) {
  WorkerSessionCreatorOptions worker_options;
  worker_options.resource_mgr = &g_.resources;
  worker_options.clock = &clock_;
  worker_options.max_wait = absl::ZeroDuration();
  WorkerSessionCreator creator(g_.root, nullptr, worker_options);
  auto session = creator.CreateSession();
  EXPECT_EQ(session.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(session.status().message(), HasSubstr("global_step"));
}

}  // namespace
}  // namespace overseer

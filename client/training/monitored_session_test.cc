// TensorFlow's monitored_session_test.py MonitoredSessionTest (runs, hooks, stops,
// errors, recovery), on DirectSession with a ResourceMgr per test and a manual clock.
// Step functions, coordinator errors and SingularMonitoredSession are in
// monitored_session_step_fn_test.cc.

#include "client/training/monitored_session.h"

#include <memory>
#include <string>
#include <vector>

#include "client/graph/ops_queue.h"
#include "client/training/basic_session_run_hooks.h"
#include "client/training/checkpoint_saver_hook.h"
#include "client/training/monitored_session_test_util.h"
#include "client/training/queue_runner.h"
#include "client/training/saver.h"
#include "client/training/scaffold.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using test::CountingSessionCreator;
using test::FakeHook;
using test::RaiseOnceAtCountN;
using test::StepGraph;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class MonitoredSessionTest : public ::testing::Test {
 protected:
  std::unique_ptr<ChiefSessionCreator> Chief(Scaffold* scaffold = nullptr,
                                             const std::string& checkpoint_dir = "") {
    return std::make_unique<ChiefSessionCreator>(g_.root, scaffold,
                                                 g_.Chief(&clock_, checkpoint_dir));
  }
  MonitoredSessionOptions Options() {
    MonitoredSessionOptions options;
    options.clock = &clock_;
    return options;
  }
  std::unique_ptr<MonitoredSession> Monitored(std::vector<SessionRunHook*> hooks = {},
                                              std::unique_ptr<SessionCreator> creator = nullptr) {
    if (creator == nullptr) creator = Chief();
    auto session =
        MonitoredSession::Create(g_.root, std::move(creator), std::move(hooks), Options());
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }
  // Runs `t` (an int64 tensor such as do_step or the global step) and returns it.
  static int64_t Value(MonitoredSession& s, const Output& t) {
    std::vector<Tensor> out;
    absl::Status status = s.Run({t}, &out);
    EXPECT_TRUE(status.ok()) << status;
    return status.ok() ? StepGraph::Int64(out) : -1;
  }
  std::unique_ptr<CheckpointSaverHook> SaverHook(Scaffold* scaffold, const std::string& dir,
                                                 int64_t save_steps) {
    CheckpointSaverHookOptions options;
    options.checkpoint_location = dir;
    options.save_steps = save_steps;
    options.saver_provider = [scaffold] { return scaffold->ResolveSaver(); };
    options.clock = &clock_;
    return *CheckpointSaverHook::Create(options);
  }
  static std::unique_ptr<StopAtStepHook> StopAt(std::optional<int64_t> last_step,
                                                std::optional<int64_t> num_steps = std::nullopt) {
    StopAtStepHookOptions options;
    options.last_step = last_step;
    options.num_steps = num_steps;
    return *StopAtStepHook::Create(options);
  }

  StepGraph g_;
  test::FakeClock clock_;
};

TEST_F(MonitoredSessionTest, Defaults) {
  Variable a_var = MakeVariable(g_.root.WithOpName("a_var"), Input(0));
  auto session = Monitored();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({a_var.value}, &out).ok());
  EXPECT_EQ(out[0].scalar<int32_t>(), 0);
  EXPECT_TRUE(session->Close().ok());
}

TEST_F(MonitoredSessionTest, LastStep) {
  const std::string logdir = test::FreshTestDir();
  Scaffold scaffold(g_.root);
  ASSERT_TRUE(scaffold.Finalize().ok());
  std::string save_path;
  {
    auto stop = StopAt(3);
    FakeHook raw;
    auto session = Monitored({stop.get(), &raw});
    EXPECT_EQ(Value(*session, g_.gstep.value), 0);
    EXPECT_FALSE(session->ShouldStop());
    EXPECT_EQ(Value(*session, g_.do_step), 1);
    EXPECT_FALSE(session->ShouldStop());
    EXPECT_EQ(Value(*session, g_.do_step), 2);
    EXPECT_FALSE(session->ShouldStop());
    EXPECT_EQ(Value(*session, g_.do_step), 3);
    EXPECT_TRUE(session->ShouldStop());
    auto saved = scaffold.saver()->Save(raw.last_session->session(), logdir + "/step-3");
    ASSERT_TRUE(saved.ok()) << saved.status();
    save_path = *saved;
    ASSERT_TRUE(session->Close().ok());
  }
  // Run till step 5, restoring step 3 in init_fn.
  ScaffoldOptions load;
  load.init_fn = [&](const Scaffold& s, ClientSession& session) {
    return s.saver()->Restore(session.session(), save_path);
  };
  Scaffold restoring(g_.root, load);
  auto stop = StopAt(5);
  auto session = Monitored({stop.get()}, Chief(&restoring));
  EXPECT_EQ(Value(*session, g_.gstep.value), 3);
  EXPECT_FALSE(session->ShouldStop());
  EXPECT_EQ(Value(*session, g_.do_step), 4);
  EXPECT_FALSE(session->ShouldStop());
  EXPECT_EQ(Value(*session, g_.do_step), 5);
  EXPECT_TRUE(session->ShouldStop());
}

TEST_F(MonitoredSessionTest, NumSteps) {
  const std::string logdir = test::FreshTestDir();
  Scaffold scaffold(g_.root);
  ASSERT_TRUE(scaffold.Finalize().ok());
  std::string save_path;
  {
    auto stop = StopAt(std::nullopt, 3);
    FakeHook raw;
    auto session = Monitored({stop.get(), &raw});
    for (int i = 0; i < 3; ++i) {
      EXPECT_FALSE(session->ShouldStop());
      Value(*session, g_.do_step);
    }
    EXPECT_TRUE(session->ShouldStop());
    save_path = *scaffold.saver()->Save(raw.last_session->session(), logdir + "/step-3");
    ASSERT_TRUE(session->Close().ok());
  }
  ScaffoldOptions load;
  load.init_fn = [&](const Scaffold& s, ClientSession& session) {
    return s.saver()->Restore(session.session(), save_path);
  };
  Scaffold restoring(g_.root, load);
  auto stop = StopAt(std::nullopt, 4);
  auto session = Monitored({stop.get()}, Chief(&restoring));
  EXPECT_EQ(Value(*session, g_.do_step), 4);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(session->ShouldStop());
    Value(*session, g_.do_step);
  }
  EXPECT_TRUE(session->ShouldStop());
}

TEST_F(MonitoredSessionTest, RecoveryFromACheckpointAfterARestart) {
  const std::string logdir = test::FreshTestDir();
  Scaffold scaffold(g_.root);
  {
    auto saver_hook = SaverHook(&scaffold, logdir, 1);
    auto session = Monitored({saver_hook.get()}, Chief(&scaffold, logdir));
    EXPECT_EQ(Value(*session, g_.gstep.value), 0);
    EXPECT_EQ(Value(*session, g_.do_step), 1);
    EXPECT_EQ(Value(*session, g_.do_step), 2);
    ASSERT_TRUE(session->Close().ok());
  }
  // A restart (the variables are gone) finds the checkpoint and recovers.
  g_.resources.Clear();
  {
    auto session = Monitored({}, Chief(&scaffold, logdir));
    EXPECT_EQ(Value(*session, g_.gstep.value), 2);
    ASSERT_TRUE(session->Close().ok());
  }
  g_.resources.Clear();
  ChiefSessionCreatorOptions by_path = g_.Chief(&clock_);
  by_path.checkpoint_filename_with_path = **LatestCheckpoint(logdir);
  auto session = Monitored({}, std::make_unique<ChiefSessionCreator>(g_.root, &scaffold, by_path));
  EXPECT_EQ(Value(*session, g_.gstep.value), 2);
}

TEST_F(MonitoredSessionTest, RetryInitializationOnAbortedError) {
  bool raised = false;
  ScaffoldOptions options;
  options.init_fn = [&](const Scaffold&, ClientSession&) -> absl::Status {
    if (raised) return absl::OkStatus();
    raised = true;
    return absl::AbortedError("Abort");
  };
  Scaffold scaffold(g_.root, options);
  auto session = Monitored({}, Chief(&scaffold));
  EXPECT_FALSE(session->ShouldStop());
  EXPECT_EQ(Value(*session, g_.gstep.value), 0);
  EXPECT_TRUE(raised);
  EXPECT_EQ(session->recoveries(), 1);
}

// TensorFlow's _retry_test: TensorFlow restarts from a freshly initialised model (the
// step goes back to 0). Here the variables survived (the same ResourceMgr), so the
// recreated session keeps them and no step is lost.
class RetryTest : public MonitoredSessionTest,
                  public ::testing::WithParamInterface<absl::StatusCode> {};

TEST_P(RetryTest, RetryKeepsTheSurvivingModel) {
  RaiseOnceAtCountN hook(4, absl::Status(GetParam(), "preempted"));
  FakeHook counter;
  auto session = Monitored({&hook, &counter});
  EXPECT_EQ(Value(*session, g_.gstep.value), 0);
  EXPECT_EQ(Value(*session, g_.do_step), 1);
  EXPECT_EQ(Value(*session, g_.do_step), 2);
  EXPECT_FALSE(session->ShouldStop());
  // The hook fails the 4th run; the session is recreated, the run repeated.
  EXPECT_EQ(Value(*session, g_.do_step), 3);
  EXPECT_TRUE(hook.raised);
  EXPECT_FALSE(session->ShouldStop());
  EXPECT_EQ(Value(*session, g_.do_step), 4);
  EXPECT_EQ(session->recoveries(), 1);
  EXPECT_EQ(session->last_recovery_cause().code(), GetParam());
  EXPECT_EQ(counter.calls["after_create_session"], 2);
  EXPECT_EQ(counter.calls["begin"], 1);
}

INSTANTIATE_TEST_SUITE_P(AbortedAndUnavailable, RetryTest,
                         ::testing::Values(absl::StatusCode::kAborted,
                                           absl::StatusCode::kUnavailable));

// A ps lost its state: the recreated session restores the latest checkpoint, losing
// the steps since; with the state intact nothing is restored and no step is lost.
TEST_F(MonitoredSessionTest, RecoveryRestoresTheCheckpointOnlyWhenTheModelIsNotReady) {
  for (bool ps_lost_state : {false, true}) {
    SCOPED_TRACE(ps_lost_state ? "ps lost its state" : "state survived");
    StepGraph g;
    const std::string logdir = test::FreshTestDir(ps_lost_state ? "_lost" : "_kept");
    Scaffold scaffold(g.root);
    // Checkpoints only when the session is created (every 100 steps otherwise).
    CheckpointSaverHookOptions saver_options;
    saver_options.checkpoint_location = logdir;
    saver_options.save_steps = 100;
    saver_options.saver_provider = [&scaffold] { return scaffold.ResolveSaver(); };
    saver_options.clock = &clock_;
    auto saver_hook = *CheckpointSaverHook::Create(saver_options);
    RaiseOnceAtCountN abort_hook(4, absl::AbortedError("ps task restarted"));
    if (ps_lost_state) abort_hook.before_failing = [&g] { g.resources.Clear(); };
    FakeHook counter;
    auto creator =
        std::make_unique<ChiefSessionCreator>(g.root, &scaffold, g.Chief(&clock_, logdir));
    ChiefSessionCreator* chief = creator.get();
    auto session = *MonitoredSession::Create(g.root, std::move(creator),
                                             {&abort_hook, saver_hook.get(), &counter}, Options());
    EXPECT_EQ(Value(*session, g.gstep.value), 0);
    EXPECT_EQ(Value(*session, g.do_step), 1);
    EXPECT_EQ(Value(*session, g.do_step), 2);
    // The 4th run fails ABORTED and is rerun on a new session.
    const int64_t after = Value(*session, g.do_step);
    EXPECT_TRUE(abort_hook.raised);
    EXPECT_EQ(session->recoveries(), 1);
    EXPECT_EQ(counter.calls["after_create_session"], 2);
    EXPECT_EQ(chief->sessions_created(), 2);
    if (ps_lost_state) {
      EXPECT_EQ(after, 1);  // Restored step 0, lost 2 steps.
      ASSERT_TRUE(chief->last_restored_checkpoint().has_value());
      EXPECT_EQ(*chief->last_restored_checkpoint(), logdir + "/model.ckpt-0");
      EXPECT_FALSE(chief->last_kept_ready_model());
    } else {
      EXPECT_EQ(after, 3);  // Zero steps lost.
      EXPECT_FALSE(chief->last_restored_checkpoint().has_value());
      EXPECT_TRUE(chief->last_kept_ready_model());
    }
    ASSERT_TRUE(session->Close().ok());
    EXPECT_EQ(counter.calls["end"], 1);
  }
}

TEST_F(MonitoredSessionTest, RecreationBacksOffOnTheInjectedClock) {
  auto counting = std::make_unique<CountingSessionCreator>(Chief());
  CountingSessionCreator* creator = counting.get();
  creator->failures = {absl::UnavailableError("master starting"),
                       absl::UnavailableError("master starting"),
                       absl::AbortedError("master restarted")};
  const absl::Time start = clock_.Now();
  auto session = Monitored({}, std::move(counting));
  EXPECT_EQ(clock_.Now() - start, absl::Milliseconds(100 + 200 + 400));
  EXPECT_EQ(creator->attempts, 4);
  EXPECT_EQ(creator->created, 1);
  EXPECT_EQ(session->recoveries(), 3);
  EXPECT_EQ(session->last_recovery_cause().code(), absl::StatusCode::kAborted);
}

TEST_F(MonitoredSessionTest, RecoveryGivesUpAfterItsLimitWithTheLastError) {
  auto counting = std::make_unique<CountingSessionCreator>(Chief());
  counting->failures.assign(10, absl::UnavailableError("no master"));
  MonitoredSessionOptions options = Options();
  options.recovery.max_attempts = 2;
  auto session = MonitoredSession::Create(g_.root, std::move(counting), {}, options);
  EXPECT_EQ(session.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(session.status().message(), HasSubstr("recovery gave up after 2 recreations"));
  EXPECT_THAT(session.status().message(), HasSubstr("no master"));
}

TEST_F(MonitoredSessionTest, ExitCleanlyOnOutOfRange) {
  RaiseOnceAtCountN hook(2, absl::OutOfRangeError("EOI"));
  FakeHook counter;
  auto session = Monitored({&hook, &counter});
  EXPECT_EQ(Value(*session, g_.gstep.value), 0);
  EXPECT_FALSE(session->ShouldStop());
  absl::Status s = session->Run({}, {}, {Operation(g_.do_step.node())}, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(session->ShouldStop());
  EXPECT_EQ(session->Run({}, {g_.do_step}, {}, nullptr).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(counter.calls["end"], 1);  // A clean stop.
}

TEST_F(MonitoredSessionTest, RegularErrorPassesThroughRunAndSkipsEnd) {
  RaiseOnceAtCountN hook(4, absl::InternalError("regular exception"));
  FakeHook counter;
  auto session = Monitored({&hook, &counter});
  EXPECT_EQ(Value(*session, g_.gstep.value), 0);
  EXPECT_EQ(Value(*session, g_.do_step), 1);
  EXPECT_EQ(Value(*session, g_.do_step), 2);
  EXPECT_FALSE(session->ShouldStop());
  absl::Status s = session->Run({}, {g_.do_step}, {}, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("regular exception"));
  EXPECT_TRUE(hook.raised);
  EXPECT_TRUE(session->ShouldStop());
  EXPECT_EQ(session->recoveries(), 0);
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(counter.calls["end"], 0);
}

TEST_F(MonitoredSessionTest, DestructionWithoutCloseSkipsEnd) {
  FakeHook counter;
  {
    auto session = Monitored({&counter});
    EXPECT_EQ(Value(*session, g_.do_step), 1);
  }
  EXPECT_EQ(counter.calls["end"], 0);
  EXPECT_FALSE(g_.root.graph()->finalized());
}

TEST_F(MonitoredSessionTest, StopCleanlyAndCallHooksInOrder) {
  FakeHook hook;
  auto session = Monitored({&hook});
  EXPECT_EQ(Value(*session, g_.do_step), 1);
  EXPECT_EQ(Value(*session, g_.do_step), 2);
  EXPECT_FALSE(session->ShouldStop());
  ASSERT_TRUE(session->Close().ok());
  EXPECT_TRUE(session->ShouldStop());
  EXPECT_TRUE(session->closed());
  EXPECT_EQ(session->coordinator(), nullptr);
  EXPECT_THAT(hook.order, ElementsAre("begin", "after_create_session", "before_run", "after_run",
                                      "before_run", "after_run", "end"));
}

TEST_F(MonitoredSessionTest, CloseTwiceIsAnError) {
  auto session = Monitored();
  ASSERT_TRUE(session->Close().ok());
  absl::Status again = session->Close();
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("already closed"));
  EXPECT_EQ(session->Run({g_.gstep.value}, nullptr).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(MonitoredSessionTest, AnEndErrorIsReturnedAndTheSessionStillCloses) {
  FakeHook hook;
  hook.end_status = absl::DataLossError("could not save");
  auto session = Monitored({&hook});
  EXPECT_EQ(session->Close().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(session->closed());
  EXPECT_FALSE(g_.root.graph()->finalized());
}

// Fails its first End with `error`.
class FailsEndOnce : public SessionRunHook {
 public:
  explicit FailsEndOnce(absl::Status error) : error_(std::move(error)) {}
  absl::Status End(ClientSession* /*session*/) override {
    return ++ends == 1 ? error_ : absl::OkStatus();
  }
  int ends = 0;

 private:
  const absl::Status error_;
};

// A server restarting while the job ends (the chief's last save finds the checkpoint
// store down): the failed End is run again on a recreated session, after the hooks
// before it ended once, and before the hooks after it.
TEST_F(MonitoredSessionTest, ARecoverableEndErrorIsRetriedOnARecreatedSession) {
  FakeHook before, after;
  FailsEndOnce failing(absl::UnavailableError("the checkpoint store is restarting"));
  auto counting = std::make_unique<CountingSessionCreator>(Chief());
  CountingSessionCreator* creator = counting.get();
  auto session = Monitored({&before, &failing, &after}, std::move(counting));
  EXPECT_EQ(Value(*session, g_.do_step), 1);
  ASSERT_TRUE(session->Close().ok());
  EXPECT_EQ(creator->created, 2);
  EXPECT_EQ(session->recoveries(), 1);
  EXPECT_EQ(before.calls["end"], 1);
  EXPECT_EQ(failing.ends, 2);
  EXPECT_EQ(after.calls["end"], 1);
  EXPECT_TRUE(session->closed());
}

TEST_F(MonitoredSessionTest, HookRequestingStop) {
  FakeHook hook;
  auto session = Monitored({&hook});
  Value(*session, g_.do_step);
  EXPECT_FALSE(session->ShouldStop());
  hook.should_stop = true;
  Value(*session, g_.do_step);
  EXPECT_TRUE(session->ShouldStop());
  absl::Status after = session->Run({}, {g_.do_step}, {}, nullptr);
  EXPECT_EQ(after.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(after.message(), HasSubstr("Run called even after should_stop requested"));
}

TEST_F(MonitoredSessionTest, Graph) {
  auto session = Monitored();
  EXPECT_EQ(session->graph(), g_.root.graph());
}

TEST_F(MonitoredSessionTest, GraphFinalizedDuringRunUnfinalizedAfterClose) {
  auto session = Monitored();
  EXPECT_EQ(Value(*session, g_.gstep.value), 0);
  EXPECT_TRUE(g_.root.graph()->finalized());
  ASSERT_TRUE(session->Close().ok());
  EXPECT_FALSE(g_.root.graph()->finalized());
}

TEST_F(MonitoredSessionTest, KeepFinalizedGraphAsFinalized) {
  ASSERT_TRUE(Scaffold(g_.root).Finalize().ok());
  auto session = Monitored();
  EXPECT_EQ(Value(*session, g_.gstep.value), 0);
  ASSERT_TRUE(session->Close().ok());
  EXPECT_TRUE(g_.root.graph()->finalized());
}

// Observes the options each run was made with (TensorFlow's RunOptionsMetadataHook).
class RunOptionsHook : public SessionRunHook {
 public:
  RunOptionsHook(RunOptions::TraceLevel trace_level, int64_t timeout_in_ms) {
    options_.set_trace_level(trace_level);
    options_.set_timeout_in_ms(timeout_in_ms);
  }
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* /*context*/) override {
    SessionRunArgs args;
    args.options = options_;
    return args;
  }
  absl::Status AfterRun(SessionRunContext* /*context*/, const SessionRunValues& values) override {
    options_seen.push_back(values.options);
    metadata_seen.push_back(values.run_metadata);
    return absl::OkStatus();
  }
  std::vector<RunOptions> options_seen;
  std::vector<RunMetadata> metadata_seen;

 private:
  RunOptions options_;
};

TEST_F(MonitoredSessionTest, MergeRunOptionsFromHooks) {
  RunOptionsHook hook_a(RunOptions::HARDWARE_TRACE, 30000);
  RunOptionsHook hook_b(RunOptions::FULL_TRACE, 60000);
  auto session = Monitored({&hook_a, &hook_b});
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {g_.v}, {}, &out).ok());
  ASSERT_EQ(hook_b.options_seen.size(), 1u);
  EXPECT_EQ(hook_b.options_seen[0].trace_level(), RunOptions::FULL_TRACE);
  EXPECT_EQ(hook_b.options_seen[0].timeout_in_ms(), 60000);
  ASSERT_EQ(hook_b.metadata_seen.size(), 1u);
  EXPECT_GT(hook_b.metadata_seen[0].step_stats().dev_stats_size(), 0);
}

TEST_F(MonitoredSessionTest, MergeCallerAndHookRunOptions) {
  RunOptionsHook hook(RunOptions::HARDWARE_TRACE, 60000);
  auto session = Monitored({&hook});
  RunOptions caller;
  caller.set_trace_level(RunOptions::FULL_TRACE);
  caller.set_timeout_in_ms(30000);
  std::vector<Tensor> out;
  RunMetadata metadata;
  ASSERT_TRUE(session->Run(caller, {}, {g_.v}, {}, &out, &metadata).ok());
  EXPECT_EQ(hook.options_seen[0].trace_level(), RunOptions::FULL_TRACE);
  EXPECT_EQ(hook.options_seen[0].timeout_in_ms(), 60000);
  EXPECT_GT(metadata.step_stats().dev_stats_size(), 0);
}

TEST_F(MonitoredSessionTest, StartsTheQueueRunnersAndJoinsThemOnClose) {
  ops::FIFOQueueAttrs attrs;
  attrs.capacity = 2;
  Output queue = ops::FIFOQueue(g_.root.WithOpName("queue"), {DT_INT32}, attrs);
  Operation enqueue =
      ops::QueueEnqueue(g_.root.WithOpName("enqueue"), queue, {ops::Const(g_.root, 7)});
  std::vector<Output> dequeued = ops::QueueDequeue(g_.root, queue, {DT_INT32});
  auto runner = QueueRunner::Create(g_.root, queue, {enqueue});
  ASSERT_TRUE(runner.ok()) << runner.status();
  AddQueueRunner(g_.root.graph(), **runner);
  auto session = Monitored();
  for (int i = 0; i < 5; ++i) {
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({dequeued[0]}, &out).ok());
    EXPECT_EQ(out[0].scalar<int32_t>(), 7);
  }
  // The enqueue thread is blocked on the full queue: Close stops it (the cancel op) and
  // joins it.
  EXPECT_TRUE(session->Close().ok());
}

TEST_F(MonitoredSessionTest, NullHookAndCreatorAreRejected) {
  EXPECT_EQ(MonitoredSession::Create(g_.root, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MonitoredSession::Create(g_.root, Chief(), {nullptr}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

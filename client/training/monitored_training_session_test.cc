// TensorFlow's monitored_session_test.py MonitoredTrainingSessionTest, plus what
// Overseer adds: SessionLog START after a recovery that restored a checkpoint, and the
// job-done signal at the chief's clean end. DirectSession, manual clock; "fake://"
// targets are served by DirectSession through a test session factory.

#include "client/training/monitored_training_session.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/session/readiness.h"
#include "client/summary/summary_ops.h"
#include "client/training/basic_session_run_hooks.h"
#include "client/training/hooks_test_util.h"
#include "client/training/monitored_session_test_util.h"
#include "client/training/saver.h"
#include "client/training/trainer_metrics.h"
#include "core/rpc/server_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using test::FakeHook;
using test::RaiseOnceAtCountN;
using test::StepGraph;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// "fake://" runs on DirectSession in this test, so that the job-done signal (which
// only a remote master gets) can be observed without a cluster.
const bool kFakeRegistered = [] {
  RegisterSessionFactory("fake://", [](const SessionOptions& options) {
    SessionOptions direct = options;
    direct.target = "";
    return NewSession(direct);
  });
  return true;
}();

// A readiness channel that is always reachable and remembers nothing.
class NullChannel : public ReadinessChannel {
 public:
  absl::Status MarkReady(const std::string&, const std::vector<std::string>&) override {
    return absl::OkStatus();
  }
  absl::Status WithdrawReady(const std::string&) override { return absl::OkStatus(); }
  absl::StatusOr<bool> WaitForReady(const std::string&, absl::Duration) override { return true; }
};

class MonitoredTrainingSessionTest : public ::testing::Test {
 protected:
  MonitoredTrainingSessionOptions Options(const std::string& logdir) {
    MonitoredTrainingSessionOptions options;
    options.is_chief = true;
    options.checkpoint_dir = logdir;
    options.resource_mgr = &g_.resources;
    options.clock = &clock_;
    options.summary_writer_options.background_flush = false;
    return options;
  }
  std::unique_ptr<MonitoredSession> Mts(const MonitoredTrainingSessionOptions& options) {
    auto session = MonitoredTrainingSession(g_.root, options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }
  int64_t Value(MonitoredSession& s, const Output& t) {
    std::vector<Tensor> out;
    absl::Status status = s.Run({t}, &out);
    EXPECT_TRUE(status.ok()) << status;
    return status.ok() ? StepGraph::Int64(out) : -1;
  }
  // A process restart: the variables are gone.
  void Restart() { g_.resources.Clear(); }
  static std::set<std::string> Tags(const std::string& dir) {
    std::set<std::string> tags;
    for (const Event& e : test::ReadEvents(dir)) {
      for (const auto& v : e.summary().value()) tags.insert(v.tag());
    }
    return tags;
  }
  static std::vector<int64_t> StartSteps(const std::string& dir) {
    std::vector<int64_t> steps;
    for (const Event& e : test::ReadEvents(dir)) {
      if (e.has_session_log() && e.session_log().status() == SessionLog::START) {
        steps.push_back(e.step());
      }
    }
    return steps;
  }

  StepGraph g_;
  test::FakeClock clock_;
};

TEST_F(MonitoredTrainingSessionTest, DefaultsAreTensorFlows) {
  MonitoredTrainingSessionOptions options;
  EXPECT_TRUE(options.is_chief);
  EXPECT_EQ(options.save_checkpoint_secs, absl::Seconds(600));
  EXPECT_FALSE(options.save_checkpoint_steps.has_value());
  EXPECT_EQ(options.save_summaries_steps, 100);
  EXPECT_FALSE(options.save_summaries_secs.has_value());
  EXPECT_EQ(options.log_step_count_steps, 100);
  EXPECT_EQ(options.max_wait, absl::Seconds(7200));
  EXPECT_EQ(options.stop_grace_period, absl::Seconds(120));
  EXPECT_EQ(options.recovery.initial_backoff, absl::Milliseconds(100));
  EXPECT_EQ(options.recovery.max_backoff, absl::Seconds(10));
  EXPECT_EQ(options.recovery.max_recovery_time, absl::Minutes(10));
  EXPECT_TRUE(options.signal_job_done_on_end);
  // Null: SignalJobDone over the session's device filters.
  EXPECT_FALSE(static_cast<bool>(options.job_done_signal));
  EXPECT_TRUE(SignalJobDone("", "nothing to tell in process").ok());
}

TEST_F(MonitoredTrainingSessionTest, SavingRestoringCheckpoint) {
  const std::string logdir = test::FreshTestDir();
  {
    auto session = Mts(Options(logdir));
    EXPECT_EQ(Value(*session, g_.gstep.value), 0);
    EXPECT_EQ(Value(*session, g_.do_step), 1);
    EXPECT_EQ(Value(*session, g_.do_step), 2);
    ASSERT_TRUE(session->Close().ok());
  }
  // A restart finds the checkpoint and recovers automatically.
  Restart();
  auto session = Mts(Options(logdir));
  EXPECT_EQ(Value(*session, g_.gstep.value), 2);
}

TEST_F(MonitoredTrainingSessionTest, SaveCheckpointSteps) {
  const std::string logdir = test::FreshTestDir();
  {
    MonitoredTrainingSessionOptions options = Options(logdir);
    options.save_checkpoint_steps = 100;
    options.log_step_count_steps = 10;
    auto session = Mts(options);
    for (int i = 0; i < 100; ++i) Value(*session, g_.do_step);
    // Saved at step 100 by the timer, before the end.
    EXPECT_EQ(test::CheckpointedStep(logdir), 100);
    ASSERT_TRUE(session->Close().ok());
  }
  Restart();
  auto session = Mts(Options(logdir));
  EXPECT_EQ(Value(*session, g_.gstep.value), 100);
}

TEST_F(MonitoredTrainingSessionTest, SaveCheckpointSecs) {
  const std::string logdir = test::FreshTestDir();
  {
    MonitoredTrainingSessionOptions options = Options(logdir);
    options.save_checkpoint_secs = absl::Milliseconds(100);
    options.log_step_count_steps = 10;
    auto session = Mts(options);
    Value(*session, g_.do_step);
    clock_.Advance(absl::Milliseconds(200));
    Value(*session, g_.do_step);  // The timer fires: saved at step 2.
    EXPECT_EQ(test::CheckpointedStep(logdir), 2);
    for (int i = 0; i < 9; ++i) Value(*session, g_.do_step);
    EXPECT_EQ(test::CheckpointedStep(logdir), 2);
    ASSERT_TRUE(session->Close().ok());  // Saves at the end.
  }
  Restart();
  auto session = Mts(Options(logdir));
  EXPECT_EQ(Value(*session, g_.gstep.value), 11);
}

TEST_F(MonitoredTrainingSessionTest, SummariesSteps) {
  const std::string logdir = test::FreshTestDir();
  ops::ScalarSummary(g_.root, "my_summary_tag", ops::Mul(g_.root, g_.do_step, int64_t{2}));
  MonitoredTrainingSessionOptions options = Options(logdir);
  options.save_summaries_steps = 100;
  options.log_step_count_steps = 10;
  auto session = Mts(options);
  for (int i = 0; i < 101; ++i) {
    clock_.Advance(absl::Milliseconds(10));
    Value(*session, g_.do_step);
  }
  ASSERT_TRUE(session->Close().ok());
  std::set<std::string> tags = Tags(logdir);
  EXPECT_THAT(tags, Contains("my_summary_tag"));
  EXPECT_THAT(tags, Contains("global_step/sec"));
  // Written at the first run and at step 101 (100 steps later).
  std::set<int64_t> summary_steps;
  for (const auto& [step, values] : test::ReadSummaries(logdir)) {
    if (values.count("my_summary_tag") > 0) summary_steps.insert(step);
  }
  EXPECT_THAT(summary_steps, ElementsAre(1, 101));
}

TEST_F(MonitoredTrainingSessionTest, SummariesSecs) {
  const std::string logdir = test::FreshTestDir();
  ops::ScalarSummary(g_.root, "my_summary_tag", ops::Mul(g_.root, g_.do_step, int64_t{2}));
  MonitoredTrainingSessionOptions options = Options(logdir);
  options.save_summaries_secs = absl::Milliseconds(100);
  options.log_step_count_steps = 10;
  auto session = Mts(options);
  Value(*session, g_.do_step);
  clock_.Advance(absl::Milliseconds(200));
  for (int i = 0; i < 101; ++i) {
    clock_.Advance(absl::Milliseconds(1));
    Value(*session, g_.do_step);
  }
  ASSERT_TRUE(session->Close().ok());
  std::set<std::string> tags = Tags(logdir);
  EXPECT_THAT(tags, Contains("my_summary_tag"));
  EXPECT_THAT(tags, Contains("global_step/sec"));
}

TEST_F(MonitoredTrainingSessionTest, CustomSaving) {
  const std::string logdir = test::FreshTestDir();
  FakeHook fake_hook;
  {
    MonitoredTrainingSessionOptions options = Options(logdir);
    options.chief_only_hooks = {&fake_hook};
    options.save_checkpoint_secs = absl::ZeroDuration();
    auto session = Mts(options);
    EXPECT_EQ(Value(*session, g_.gstep.value), 0);
    EXPECT_EQ(Value(*session, g_.do_step), 1);
    EXPECT_EQ(Value(*session, g_.do_step), 2);
    ASSERT_TRUE(session->Close().ok());
  }
  EXPECT_EQ(fake_hook.calls["begin"], 1);
  // A restart does not find a checkpoint, since none was saved.
  EXPECT_FALSE(LatestCheckpoint(logdir)->has_value());
  Restart();
  auto session = Mts(Options(logdir));
  EXPECT_EQ(Value(*session, g_.gstep.value), 0);
}

TEST_F(MonitoredTrainingSessionTest, ChiefOnlyHooksOnTheChiefOnly) {
  const std::string logdir = test::FreshTestDir();
  FakeHook chief_only, everyone;
  MonitoredTrainingSessionOptions options = Options(logdir);
  options.chief_only_hooks = {&chief_only};
  options.hooks = {&everyone};
  auto chief = Mts(options);
  EXPECT_EQ(Value(*chief, g_.do_step), 1);
  // A non-chief on the same model: only `hooks`, no checkpoints or summaries of its own.
  FakeHook worker_hook, worker_chief_only;
  MonitoredTrainingSessionOptions worker = Options(logdir);
  worker.is_chief = false;
  worker.hooks = {&worker_hook};
  worker.chief_only_hooks = {&worker_chief_only};
  auto session = Mts(worker);
  EXPECT_EQ(Value(*session, g_.do_step), 2);
  ASSERT_TRUE(session->Close().ok());
  EXPECT_EQ(worker_hook.calls["end"], 1);
  EXPECT_EQ(worker_chief_only.calls["begin"], 0);
  EXPECT_EQ(chief_only.calls["before_run"], 1);
  EXPECT_EQ(everyone.calls["before_run"], 1);
}

TEST_F(MonitoredTrainingSessionTest, StopAtStepHookEndsTraining) {
  const std::string logdir = test::FreshTestDir();
  StopAtStepHookOptions stop_options;
  stop_options.last_step = 5;
  auto stop = *StopAtStepHook::Create(stop_options);
  MonitoredTrainingSessionOptions options = Options(logdir);
  options.hooks = {stop.get()};
  auto session = Mts(options);
  int runs = 0;
  while (!session->ShouldStop()) {
    Value(*session, g_.do_step);
    ++runs;
  }
  EXPECT_EQ(runs, 5);
  ASSERT_TRUE(session->Close().ok());
  EXPECT_EQ(test::CheckpointedStep(logdir), 5);  // Saved at the end.
}

// After a recovery that restored a checkpoint at step S, the event file gets a START
// at S (TensorBoard then drops what was written after S before the failure); a
// recovery that kept the model writes none.
TEST_F(MonitoredTrainingSessionTest, SessionLogStartAtTheRestoredStepAfterARecovery) {
  for (bool ps_lost_state : {false, true}) {
    SCOPED_TRACE(ps_lost_state ? "ps lost its state" : "state survived");
    StepGraph g;
    const std::string logdir = test::FreshTestDir(ps_lost_state ? "_lost" : "_kept");
    RaiseOnceAtCountN abort_hook(4, absl::AbortedError("ps task restarted"));
    if (ps_lost_state) abort_hook.before_failing = [&g] { g.resources.Clear(); };
    MonitoredTrainingSessionOptions options = Options(logdir);
    options.resource_mgr = &g.resources;
    options.save_checkpoint_steps = 2;  // Checkpoints at steps 0 and 2.
    options.hooks = {&abort_hook};
    auto session = *MonitoredTrainingSession(g.root, options);
    EXPECT_EQ(Value(*session, g.do_step), 1);
    EXPECT_EQ(Value(*session, g.do_step), 2);
    EXPECT_EQ(Value(*session, g.do_step), 3);
    // The 4th run fails; the model is restored from step 2, or kept at step 3.
    EXPECT_EQ(Value(*session, g.do_step), ps_lost_state ? 3 : 4);
    EXPECT_EQ(session->recoveries(), 1);
    ASSERT_TRUE(session->Close().ok());
    // The SummarySaverHook writes the first START after the first run (at step 1, as
    // TensorFlow's does); the recovery that restored step 2 writes one at 2.
    if (ps_lost_state) {
      EXPECT_THAT(StartSteps(logdir), ElementsAre(1, 2));
    } else {
      EXPECT_THAT(StartSteps(logdir), ElementsAre(1));
    }
  }
}

// With MonitoredTrainingSessionOptions::metrics, the session feeds the trainer's
// metrics: steps and the global step, recoveries by code, the chief's checkpoints and
// a non-chief's wait for readiness.
TEST_F(MonitoredTrainingSessionTest, FeedsTheTrainersMetrics) {
  auto text = [](const TrainerMetrics& metrics) {
    return prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
  };
  auto has = [](const std::string& text, const std::string& line) {
    return absl::StrContains(text, line + "\n");
  };
  const std::string logdir = test::FreshTestDir();
  TrainerMetrics chief_metrics(std::make_shared<prometheus::Registry>());
  RaiseOnceAtCountN abort_hook(3, absl::AbortedError("ps task restarted"));
  MonitoredTrainingSessionOptions options = Options(logdir);
  options.save_checkpoint_steps = 2;
  options.hooks = {&abort_hook};
  options.metrics = &chief_metrics;
  auto chief = Mts(options);
  ASSERT_NE(chief, nullptr);
  EXPECT_EQ(Value(*chief, g_.do_step), 1);
  EXPECT_EQ(Value(*chief, g_.do_step), 2);
  EXPECT_EQ(Value(*chief, g_.do_step), 3);  // Recovered from ABORTED, then run again.
  std::string chief_text = text(chief_metrics);
  EXPECT_TRUE(has(chief_text, "overseer_trainer_steps_total 3")) << chief_text;
  EXPECT_TRUE(has(chief_text, "overseer_trainer_global_step 2") ||
              has(chief_text, "overseer_trainer_global_step 3"))
      << chief_text;
  EXPECT_TRUE(has(chief_text, "overseer_trainer_recoveries_total{code=\"ABORTED\"} 1"));
  EXPECT_TRUE(has(chief_text, "overseer_trainer_recoveries_total{code=\"UNAVAILABLE\"} 0"));
  EXPECT_TRUE(has(chief_text, "overseer_trainer_readiness_wait_seconds_count 0"));

  // A non-chief waits (here not long: the chief made the model ready) and runs.
  TrainerMetrics worker_metrics(std::make_shared<prometheus::Registry>());
  MonitoredTrainingSessionOptions worker = Options(logdir);
  worker.is_chief = false;
  worker.metrics = &worker_metrics;
  auto session = Mts(worker);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(Value(*session, g_.do_step), 4);
  ASSERT_TRUE(session->Close().ok());
  const std::string worker_text = text(worker_metrics);
  EXPECT_TRUE(has(worker_text, "overseer_trainer_readiness_wait_seconds_count 1")) << worker_text;
  EXPECT_TRUE(has(worker_text, "overseer_trainer_waiting_for_ready 0"));
  EXPECT_TRUE(has(worker_text, "overseer_trainer_steps_total 1"));
  EXPECT_FALSE(absl::StrContains(worker_text, "overseer_trainer_last_checkpoint_step "));

  // The chief's last save (at its end) is the newest checkpoint.
  ASSERT_TRUE(chief->Close().ok());
  chief_text = text(chief_metrics);
  EXPECT_TRUE(has(chief_text, absl::StrCat("overseer_trainer_last_checkpoint_step ",
                                           test::CheckpointedStep(logdir))))
      << chief_text;
  double saved_at = 0;
  for (const prometheus::MetricFamily& family : chief_metrics.registry()->Collect()) {
    if (family.name == "overseer_trainer_last_checkpoint_timestamp_seconds") {
      ASSERT_EQ(family.metric.size(), 1u);
      saved_at = family.metric[0].gauge.value;
    }
  }
  EXPECT_DOUBLE_EQ(saved_at, absl::ToDoubleSeconds(clock_.Now() - absl::UnixEpoch()));
}

TEST_F(MonitoredTrainingSessionTest, TheChiefSignalsJobDoneOnACleanEndOnly) {
  NullChannel channel;
  std::vector<std::string> signalled;
  auto options_for = [&](bool is_chief) {
    MonitoredTrainingSessionOptions options = Options("");
    options.master = "fake://master";
    options.is_chief = is_chief;
    options.readiness_channel = &channel;
    options.job_done_signal = [&](const std::string& master, const std::string& /*reason*/) {
      signalled.push_back(master);
      return absl::OkStatus();
    };
    return options;
  };
  {
    auto session = Mts(options_for(true));
    Value(*session, g_.do_step);
    ASSERT_TRUE(session->Close().ok());
    EXPECT_THAT(signalled, ElementsAre("fake://master"));
  }
  signalled.clear();
  {
    // A training that ended with an error does not end the job.
    RaiseOnceAtCountN fail(1, absl::InternalError("bug"));
    MonitoredTrainingSessionOptions options = options_for(true);
    options.hooks = {&fail};
    auto session = Mts(options);
    EXPECT_FALSE(session->Run({g_.do_step}, nullptr).ok());
    EXPECT_TRUE(session->Close().ok());
    EXPECT_TRUE(signalled.empty());
  }
  {
    // Other trainers do not end the job; nor does a chief told not to.
    auto worker = Mts(options_for(false));
    ASSERT_TRUE(worker->Close().ok());
    MonitoredTrainingSessionOptions quiet = options_for(true);
    quiet.signal_job_done_on_end = false;
    auto chief = Mts(quiet);
    ASSERT_TRUE(chief->Close().ok());
    EXPECT_TRUE(signalled.empty());
  }
  {
    // The default signal (SignalJobDone) refuses a target that is not grpc://: logged.
    MonitoredTrainingSessionOptions options = options_for(true);
    options.job_done_signal = MonitoredTrainingSessionOptions().job_done_signal;
    auto session = Mts(options);
    EXPECT_TRUE(session->Close().ok());
  }
  {
    // A failed signal is logged, not returned: training itself ended well.
    MonitoredTrainingSessionOptions options = options_for(true);
    options.job_done_signal = [](const std::string&, const std::string&) {
      return absl::UnavailableError("master gone");
    };
    auto session = Mts(options);
    EXPECT_TRUE(session->Close().ok());
  }
}

// summary_dir defaults to checkpoint_dir, as TensorFlow's; when that is a checkpoint
// store (no summary writer) the error says so instead of a bare UNIMPLEMENTED.
TEST_F(MonitoredTrainingSessionTest, SummariesDefaultingToACheckpointStoreAreExplained) {
  ServerRunnerOptions runner_options;
  runner_options.component = "checkpoint_store";
  runner_options.metrics_port = -1;
  runner_options.handle_signals = false;
  ServerRunner not_a_writer(runner_options);
  ASSERT_TRUE(not_a_writer.Start().ok());
  MonitoredTrainingSessionOptions options = Options(test::FreshTestDir());
  options.checkpoint_dir = absl::StrCat("grpc://", not_a_writer.address(), "/demo");
  options.summary_dir.clear();
  options.save_summaries_steps = 1;
  const absl::Status status = MonitoredTrainingSession(g_.root, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "summary_dir is unset")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "is not a summary writer")) << status;
}

TEST_F(MonitoredTrainingSessionTest, BadIntervalsAreRejected) {
  MonitoredTrainingSessionOptions options = Options(test::FreshTestDir());
  options.clock = nullptr;
  EXPECT_EQ(MonitoredTrainingSession(g_.root, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

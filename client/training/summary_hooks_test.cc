#include "client/training/summary_hooks.h"

#include <map>
#include <memory>
#include <string>

#include "client/summary/summary_ops.h"
#include "client/training/hooked_session.h"
#include "client/training/hooks_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::ReadSummaries;
using test::StepModel;
using Summaries = std::map<int64_t, std::map<std::string, float>>;

std::unique_ptr<SummaryWriter> NewWriter(const std::string& logdir, Clock* clock) {
  SummaryWriterOptions options;
  options.clock = clock;
  options.background_flush = false;
  auto writer = SummaryWriter::Create(logdir, options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  return std::move(*writer);
}

// ---- StepCounterHook ----

class StepCounterHookTest : public ::testing::Test {
 protected:
  void SetUp() override { writer_ = NewWriter(log_dir_, &clock_); }

  // A StepCounterHook with the writer and clock, Begin called on `root`.
  std::unique_ptr<StepCounterHook> NewHook(StepCounterHookOptions options, const Scope& root) {
    options.summary_writer = writer_.get();
    options.clock = &clock_;
    auto hook = StepCounterHook::Create(options);
    EXPECT_TRUE(hook.ok()) << hook.status();
    absl::Status s = (*hook)->Begin(root);
    EXPECT_TRUE(s.ok()) << s;
    return std::move(*hook);
  }
  Summaries Written() {
    EXPECT_TRUE(writer_->Flush().ok());
    return ReadSummaries(log_dir_);
  }
  // Runs `train_op` `runs` times, advancing the clock 10 ms before each.
  void Train(HookedSession* hooked, const Operation& train_op, int runs) {
    for (int i = 0; i < runs; ++i) {
      clock_.Advance(absl::Milliseconds(10));
      absl::Status s = hooked->Run({}, {}, {train_op}, nullptr);
      ASSERT_TRUE(s.ok()) << s;
    }
  }
  // Runs `runs` steps of `steps_per_run` with every_n_steps; returns the summaries.
  Summaries StepsPerRun(int64_t every_n_steps, int64_t steps_per_run, int runs) {
    StepModel m(steps_per_run);
    StepCounterHookOptions options;
    options.clock = &clock_;
    options.every_n_steps = every_n_steps;
    options.steps_per_run = steps_per_run;
    auto hook = NewHook(options, m.root);
    HookedSession hooked(m.session.get(), {hook.get()});
    Train(&hooked, m.train_op, runs);
    EXPECT_TRUE(hook->End(m.session.get()).ok());
    return Written();
  }

  std::string log_dir_ = test::TestDir();
  test::FakeClock clock_{absl::FromUnixMicros(1484695987209386)};
  std::unique_ptr<SummaryWriter> writer_;
};

TEST_F(StepCounterHookTest, RaiseUnlessExactlyOneInterval) {
  StepCounterHookOptions options;
  options.clock = &clock_;
  options.every_n_secs = absl::Seconds(1);
  EXPECT_TRUE(absl::IsInvalidArgument(StepCounterHook::Create(options).status()));
  options.every_n_steps.reset();
  options.every_n_secs.reset();
  EXPECT_TRUE(absl::IsInvalidArgument(StepCounterHook::Create(options).status()));
}

TEST_F(StepCounterHookTest, StepCounterEveryNSteps) {
  StepModel m;
  StepCounterHookOptions options;
  options.clock = &clock_;
  options.every_n_steps = 10;
  auto hook = NewHook(options, m.root);
  HookedSession hooked(m.session.get(), {hook.get()});
  ::testing::internal::CaptureStderr();
  Train(&hooked, m.train_op, 30);
  const std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(logged.find("has not been increased"), std::string::npos) << logged;
  EXPECT_NE(logged.find("global_step/sec: 100"), std::string::npos) << logged;
  ASSERT_TRUE(hook->End(m.session.get()).ok());
  Summaries written = Written();
  ASSERT_EQ(written.size(), 2u);
  // 10 steps in 10 runs of 10 ms each.
  EXPECT_FLOAT_EQ(written.at(11).at("global_step/sec"), 100.0f);
  EXPECT_FLOAT_EQ(written.at(21).at("global_step/sec"), 100.0f);
}

TEST_F(StepCounterHookTest, StepCounterEveryNSecs) {
  StepModel m;
  StepCounterHookOptions options;
  options.clock = &clock_;
  options.every_n_steps.reset();
  options.every_n_secs = absl::Milliseconds(100);
  auto hook = NewHook(options, m.root);
  HookedSession hooked(m.session.get(), {hook.get()});
  ASSERT_TRUE(hooked.Run({}, {}, {m.train_op}, nullptr).ok());
  clock_.Advance(absl::Milliseconds(200));
  ASSERT_TRUE(hooked.Run({}, {}, {m.train_op}, nullptr).ok());
  clock_.Advance(absl::Milliseconds(200));
  ASSERT_TRUE(hooked.Run({}, {}, {m.train_op}, nullptr).ok());
  ASSERT_TRUE(hook->End(m.session.get()).ok());
  Summaries written = Written();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_FLOAT_EQ(written.at(2).at("global_step/sec"), 5.0f);
  EXPECT_FLOAT_EQ(written.at(3).at("global_step/sec"), 5.0f);
}

TEST_F(StepCounterHookTest, GlobalStepName) {
  Scope root = Scope::NewRootScope();
  VariableOptions var_options;
  var_options.trainable = false;
  var_options.collections = {GraphKeys::kGlobalVariables, GraphKeys::kGlobalStep};
  Variable step = MakeVariable(root.WithOpName("bar/foo"), Input(int64_t{0}), var_options);
  Operation train_op = Operation(
      ops::AssignAdd(root.WithControlDependencies(step.value), step.ref, int64_t{1}).node());
  ResourceMgr resources;
  SessionOptions session_options;
  session_options.resource_mgr = &resources;
  auto session = std::move(*ClientSession::Create(root, session_options));
  ASSERT_TRUE(session->Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr).ok());
  StepCounterHookOptions options;
  options.clock = &clock_;
  options.every_n_steps = 1;
  auto hook = NewHook(options, root);
  HookedSession hooked(session.get(), {hook.get()});
  Train(&hooked, train_op, 2);
  Summaries written = Written();
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written.at(2).count("bar/foo/sec"), 1u);
}

TEST_F(StepCounterHookTest, LogWarningIfGlobalStepNotIncreased) {
  StepModel m(/*steps_per_run=*/0);
  StepCounterHookOptions options;
  options.clock = &clock_;
  options.every_n_steps = 1;
  auto hook = NewHook(options, m.root);
  HookedSession hooked(m.session.get(), {hook.get()});
  ASSERT_TRUE(hooked.Run({}, {}, {m.train_op}, nullptr).ok());  // Records the step.
  ::testing::internal::CaptureStderr();
  Train(&hooked, m.train_op, 30);
  const std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(logged.find("global step has not been increased"), std::string::npos) << logged;
  ASSERT_TRUE(hook->End(m.session.get()).ok());
}

TEST_F(StepCounterHookTest, StepsPerRunLessThanEveryNSteps) {
  Summaries written = StepsPerRun(/*every_n_steps=*/10, /*steps_per_run=*/5, 5);
  EXPECT_EQ(written.size(), 2u);
  for (int64_t step : {15, 25}) EXPECT_GT(written[step]["global_step/sec"], 0) << step;
}

TEST_F(StepCounterHookTest, StepsPerRunEqualEveryNSteps) {
  Summaries written = StepsPerRun(5, 5, 5);
  EXPECT_EQ(written.size(), 4u);
  for (int64_t step : {10, 15, 20, 25}) EXPECT_GT(written[step]["global_step/sec"], 0) << step;
}

TEST_F(StepCounterHookTest, StepsPerRunGreaterThanEveryNSteps) {
  Summaries written = StepsPerRun(5, 10, 5);
  EXPECT_EQ(written.size(), 4u);
  // 10 steps in 10 ms.
  for (int64_t step : {20, 30, 40, 50}) EXPECT_FLOAT_EQ(written[step]["global_step/sec"], 1000);
}

// ---- SummarySaverHook ----

class SummarySaverHookTest : public ::testing::Test {
 protected:
  SummarySaverHookTest() {
    Variable var = MakeVariable(m_.root.WithOpName("var"), 0.0f);
    Output tensor = ops::AssignAdd(m_.root, var.ref, 1.0f);
    Output tensor2 = ops::Mul(m_.root, tensor, 2.0f);
    summary_op_ = ops::ScalarSummary(m_.root, std::string("my_summary"), tensor);
    summary_op2_ = ops::ScalarSummary(m_.root, std::string("my_summary2"), tensor2);
    m_.Init();
    writer_ = NewWriter(log_dir_, &clock_);
  }

  std::unique_ptr<SummarySaverHook> NewHook(SummarySaverHookOptions options) {
    options.summary_writer = writer_.get();
    options.clock = &clock_;
    auto hook = SummarySaverHook::Create(std::move(options));
    EXPECT_TRUE(hook.ok()) << hook.status();
    absl::Status s = (*hook)->Begin(m_.root);
    EXPECT_TRUE(s.ok()) << s;
    return std::move(*hook);
  }
  // Runs the train op `runs` times, advancing the clock by `tick` after each, then End.
  Summaries Train(SummarySaverHook* hook, int runs, absl::Duration tick = absl::ZeroDuration()) {
    HookedSession hooked(m_.session.get(), {hook});
    for (int i = 0; i < runs; ++i) {
      absl::Status s = hooked.Run({}, {}, {m_.train_op}, nullptr);
      EXPECT_TRUE(s.ok()) << s;
      clock_.Advance(tick);
    }
    EXPECT_TRUE(hook->End(m_.session.get()).ok());
    return ReadSummaries(log_dir_);
  }

  StepModel m_;
  Output summary_op_, summary_op2_;
  std::string log_dir_ = test::TestDir();
  test::FakeClock clock_{absl::FromUnixMicros(1484695987209386)};
  std::unique_ptr<SummaryWriter> writer_;
};

TEST_F(SummarySaverHookTest, RaiseWhenSummaryOpAndProviderBothMissing) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.save_steps = 10;
  EXPECT_TRUE(absl::IsInvalidArgument(SummarySaverHook::Create(options).status()));
}

TEST_F(SummarySaverHookTest, RaiseWhenSummaryOpAndProviderBothPresent) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.save_steps = 10;
  options.summary_op = {summary_op_};
  options.summary_op_provider = [this]() -> absl::StatusOr<std::vector<Output>> {
    return std::vector<Output>{summary_op_};
  };
  EXPECT_TRUE(absl::IsInvalidArgument(SummarySaverHook::Create(options).status()));
}

TEST_F(SummarySaverHookTest, RaiseInBothSecsAndSteps) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.save_secs = absl::Seconds(10);
  options.save_steps = 20;
  options.summary_op = {summary_op_};
  EXPECT_TRUE(absl::IsInvalidArgument(SummarySaverHook::Create(options).status()));
}

TEST_F(SummarySaverHookTest, RaiseInNoneSecsAndSteps) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.summary_op = {summary_op_};
  EXPECT_TRUE(absl::IsInvalidArgument(SummarySaverHook::Create(options).status()));
}

TEST_F(SummarySaverHookTest, SaveSteps) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.save_steps = 8;
  options.summary_op = {summary_op_};
  Summaries written = Train(NewHook(options).get(), 30);
  EXPECT_EQ(written, (Summaries{{1, {{"my_summary", 1.0f}}},
                                {9, {{"my_summary", 2.0f}}},
                                {17, {{"my_summary", 3.0f}}},
                                {25, {{"my_summary", 4.0f}}}}));
  // The first run's step starts the session in the event file.
  int starts = 0;
  for (const Event& e : test::ReadEvents(log_dir_)) {
    if (e.session_log().status() == SessionLog::START) {
      EXPECT_EQ(e.step(), 1);
      ++starts;
    }
  }
  EXPECT_EQ(starts, 1);
}

TEST_F(SummarySaverHookTest, MultipleSummaries) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.save_steps = 8;
  options.summary_op = {summary_op_, summary_op2_};
  Summaries written = Train(NewHook(options).get(), 10);
  EXPECT_EQ(written, (Summaries{{1, {{"my_summary", 1.0f}, {"my_summary2", 2.0f}}},
                                {9, {{"my_summary", 2.0f}, {"my_summary2", 4.0f}}}}));
}

TEST_F(SummarySaverHookTest, SummaryOpFromProvider) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.save_steps = 8;
  options.summary_op_provider = [this]() -> absl::StatusOr<std::vector<Output>> {
    return std::vector<Output>{ops::MergeAllSummaries(m_.root)};
  };
  Summaries written = Train(NewHook(options).get(), 9);
  EXPECT_EQ(written, (Summaries{{1, {{"my_summary", 1.0f}, {"my_summary2", 2.0f}}},
                                {9, {{"my_summary", 2.0f}, {"my_summary2", 4.0f}}}}));
}

TEST_F(SummarySaverHookTest, SaveSecsSavingOnceEveryStep) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.save_secs = absl::Milliseconds(500);
  options.summary_op = {summary_op_};
  Summaries written = Train(NewHook(options).get(), 4, absl::Milliseconds(500));
  EXPECT_EQ(written, (Summaries{{1, {{"my_summary", 1.0f}}},
                                {2, {{"my_summary", 2.0f}}},
                                {3, {{"my_summary", 3.0f}}},
                                {4, {{"my_summary", 4.0f}}}}));
}

TEST_F(SummarySaverHookTest, SaveSecsSavingOnceEveryThreeSteps) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.save_secs = absl::Seconds(9);
  options.summary_op = {summary_op_};
  // 8 runs 3.1 s apart: saves every 9 s from the first.
  Summaries written = Train(NewHook(options).get(), 8, absl::Milliseconds(3100));
  EXPECT_EQ(written, (Summaries{{1, {{"my_summary", 1.0f}}},
                                {4, {{"my_summary", 2.0f}}},
                                {7, {{"my_summary", 3.0f}}}}));
}

TEST_F(SummarySaverHookTest, NoWriterFetchesNothing) {
  SummarySaverHookOptions options;
  options.clock = &clock_;
  options.save_steps = 1;
  options.summary_op = {summary_op_};
  auto hook = std::move(*SummarySaverHook::Create(options));
  ASSERT_TRUE(hook->Begin(m_.root).ok());
  SessionRunContext context({}, m_.session.get());
  auto args = hook->BeforeRun(&context);
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(args->fetches.empty());
}

}  // namespace
}  // namespace overseer

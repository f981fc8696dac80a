#include "client/training/basic_session_run_hooks.h"

#include <cmath>
#include <limits>

#include "client/graph/ops.h"
#include "client/training/hooked_session.h"
#include "client/training/hooks_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::StepModel;

// ---- SecondOrStepTimer ----

TEST(SecondOrStepTimerTest, RaiseInBothSecsAndSteps) {
  test::FakeClock clock;
  auto timer = SecondOrStepTimer::Create(absl::Seconds(2), 10, &clock);
  EXPECT_TRUE(absl::IsInvalidArgument(timer.status())) << timer.status();
}

TEST(SecondOrStepTimerTest, RaiseInNoneSecsAndSteps) {
  test::FakeClock clock;
  auto timer = SecondOrStepTimer::Create(std::nullopt, std::nullopt, &clock);
  EXPECT_TRUE(absl::IsInvalidArgument(timer.status())) << timer.status();
}

TEST(SecondOrStepTimerTest, EverySecs) {
  test::FakeClock clock;
  auto timer = *SecondOrStepTimer::Create(absl::Seconds(1), std::nullopt, &clock);
  EXPECT_TRUE(timer.ShouldTriggerForStep(1));
  timer.UpdateLastTriggeredStep(1);
  EXPECT_FALSE(timer.ShouldTriggerForStep(1));
  EXPECT_FALSE(timer.ShouldTriggerForStep(2));
  clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(timer.ShouldTriggerForStep(1));
  EXPECT_TRUE(timer.ShouldTriggerForStep(2));
}

TEST(SecondOrStepTimerTest, EverySteps) {
  test::FakeClock clock;
  auto timer = *SecondOrStepTimer::Create(std::nullopt, 3, &clock);
  EXPECT_TRUE(timer.ShouldTriggerForStep(1));
  timer.UpdateLastTriggeredStep(1);
  EXPECT_FALSE(timer.ShouldTriggerForStep(1));
  EXPECT_FALSE(timer.ShouldTriggerForStep(2));
  EXPECT_FALSE(timer.ShouldTriggerForStep(3));
  EXPECT_TRUE(timer.ShouldTriggerForStep(4));
}

TEST(SecondOrStepTimerTest, UpdateLastTriggeredStep) {
  test::FakeClock clock;
  auto timer = *SecondOrStepTimer::Create(std::nullopt, 1, &clock);
  SecondOrStepTimer::Elapsed e = timer.UpdateLastTriggeredStep(1);
  EXPECT_FALSE(e.time.has_value());
  EXPECT_FALSE(e.steps.has_value());
  clock.Advance(absl::Milliseconds(250));
  e = timer.UpdateLastTriggeredStep(5);
  EXPECT_EQ(*e.time, absl::Milliseconds(250));
  EXPECT_EQ(*e.steps, 4);
  clock.Advance(absl::Seconds(2));
  e = timer.UpdateLastTriggeredStep(7);
  EXPECT_EQ(*e.time, absl::Seconds(2));
  EXPECT_EQ(*e.steps, 2);
  EXPECT_EQ(timer.LastTriggeredStep(), 7);
  timer.Reset();
  EXPECT_FALSE(timer.LastTriggeredStep().has_value());
  EXPECT_TRUE(timer.ShouldTriggerForStep(7));
}

// ---- StopAtStepHook ----

TEST(StopAtStepTest, RaiseInBothLastStepAndNumSteps) {
  StopAtStepHookOptions options;
  options.num_steps = 10;
  options.last_step = 20;
  EXPECT_TRUE(absl::IsInvalidArgument(StopAtStepHook::Create(options).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(StopAtStepHook::Create({}).status()));
}

TEST(StopAtStepTest, NeedsAGlobalStep) {
  StopAtStepHookOptions options;
  options.last_step = 10;
  auto hook = *StopAtStepHook::Create(options);
  absl::Status s = hook->Begin(Scope::NewRootScope());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("global step should be created to use StopAtStepHook"),
            std::string::npos)
      << s;
}

// Runs a no-op through a fresh HookedSession (so a stop of an earlier one is
// forgotten, as TensorFlow's tests reset _should_stop) and returns ShouldStop.
bool RunNoOp(StepModel* m, SessionRunHook* hook, HookedSession* hooked = nullptr) {
  Operation no_op = ops::NoOp(m->root);
  HookedSession fresh(m->session.get(), {hook});
  HookedSession* s = hooked != nullptr ? hooked : &fresh;
  absl::Status status = s->Run({}, {}, {no_op}, nullptr);
  EXPECT_TRUE(status.ok()) << status;
  return s->ShouldStop();
}

TEST(StopAtStepTest, StopBasedOnLastStep) {
  StepModel m;
  StopAtStepHookOptions options;
  options.last_step = 10;
  auto h = *StopAtStepHook::Create(options);
  ASSERT_TRUE(h->Begin(m.root).ok());
  HookedSession hooked(m.session.get(), {h.get()});
  m.SetStep(5);
  ASSERT_TRUE(h->AfterCreateSession(m.session.get(), nullptr).ok());
  EXPECT_FALSE(RunNoOp(&m, h.get(), &hooked));
  m.SetStep(9);
  EXPECT_FALSE(RunNoOp(&m, h.get(), &hooked));
  m.SetStep(10);
  EXPECT_TRUE(RunNoOp(&m, h.get(), &hooked));
  m.SetStep(11);
  EXPECT_TRUE(RunNoOp(&m, h.get()));
}

TEST(StopAtStepTest, StopBasedOnNumStep) {
  StepModel m;
  StopAtStepHookOptions options;
  options.num_steps = 10;
  auto h = *StopAtStepHook::Create(options);
  ASSERT_TRUE(h->Begin(m.root).ok());
  HookedSession hooked(m.session.get(), {h.get()});
  m.SetStep(5);
  ASSERT_TRUE(h->AfterCreateSession(m.session.get(), nullptr).ok());
  EXPECT_FALSE(RunNoOp(&m, h.get(), &hooked));
  m.SetStep(13);
  EXPECT_FALSE(RunNoOp(&m, h.get(), &hooked));
  m.SetStep(14);
  EXPECT_FALSE(RunNoOp(&m, h.get(), &hooked));
  m.SetStep(15);
  EXPECT_TRUE(RunNoOp(&m, h.get(), &hooked));
  m.SetStep(16);
  EXPECT_TRUE(RunNoOp(&m, h.get()));
  // A recreated session keeps the goal computed at the first creation.
  ASSERT_TRUE(h->AfterCreateSession(m.session.get(), nullptr).ok());
  m.SetStep(14);
  EXPECT_FALSE(RunNoOp(&m, h.get()));
}

TEST(StopAtStepTest, StopBasedWithMultipleSteps) {
  StepModel m;
  StopAtStepHookOptions options;
  options.num_steps = 10;
  auto h = *StopAtStepHook::Create(options);
  ASSERT_TRUE(h->Begin(m.root).ok());
  HookedSession hooked(m.session.get(), {h.get()});
  m.SetStep(5);
  ASSERT_TRUE(h->AfterCreateSession(m.session.get(), nullptr).ok());
  EXPECT_FALSE(RunNoOp(&m, h.get(), &hooked));
  m.SetStep(15);
  EXPECT_TRUE(RunNoOp(&m, h.get(), &hooked));
}

TEST(StopAtStepTest, StopsWhenTheTrainOpReachesTheLastStep) {
  StepModel m;
  StopAtStepHookOptions options;
  options.last_step = 3;
  auto h = *StopAtStepHook::Create(options);
  ASSERT_TRUE(h->Begin(m.root).ok());
  ASSERT_TRUE(h->AfterCreateSession(m.session.get(), nullptr).ok());
  HookedSession hooked(m.session.get(), {h.get()});
  int runs = 0;
  while (!hooked.ShouldStop()) {
    ASSERT_TRUE(hooked.Run({}, {}, {m.train_op}, nullptr).ok());
    ++runs;
  }
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(m.Step(), 3);
}

// ---- LoggingTensorHook ----

class LoggingTensorHookTest : public ::testing::Test {
 protected:
  LoggingTensorHookTest() {
    t_ = ops::Const(m_.root.WithOpName("foo"), 42.0f);
    train_op_ = Operation(ops::Const(m_.root, 3).node());
  }

  // Runs the train op through `hooked` and returns what was logged meanwhile.
  std::string RunAndCapture(HookedSession* hooked) {
    ::testing::internal::CaptureStderr();
    absl::Status s = hooked->Run({}, {}, {train_op_}, nullptr);
    std::string logged = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(s.ok()) << s;
    return logged;
  }
  std::string EndAndCapture(SessionRunHook* hook) {
    ::testing::internal::CaptureStderr();
    absl::Status s = hook->End(m_.session.get());
    std::string logged = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(s.ok()) << s;
    return logged;
  }
  static bool Mentions(const std::string& logged, const std::string& what) {
    return logged.find(what) != std::string::npos;
  }

  void ValidatePrintEveryNSteps(LoggingTensorHook* hook, bool at_end) {
    ASSERT_TRUE(hook->Begin(m_.root).ok());
    HookedSession hooked(m_.session.get(), {hook});
    EXPECT_TRUE(Mentions(RunAndCapture(&hooked), "foo:0 = 42"));
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 9; ++j) EXPECT_FALSE(Mentions(RunAndCapture(&hooked), "foo:0"));
      EXPECT_TRUE(Mentions(RunAndCapture(&hooked), "foo:0 = 42"));
    }
    // One more run to check the count restarts properly.
    EXPECT_FALSE(Mentions(RunAndCapture(&hooked), "foo:0"));
    EXPECT_EQ(Mentions(EndAndCapture(hook), "foo:0 = 42"), at_end);
  }

  void ValidatePrintEveryNSecs(LoggingTensorHook* hook, bool at_end) {
    ASSERT_TRUE(hook->Begin(m_.root).ok());
    HookedSession hooked(m_.session.get(), {hook});
    EXPECT_TRUE(Mentions(RunAndCapture(&hooked), "foo:0"));
    EXPECT_FALSE(Mentions(RunAndCapture(&hooked), "foo:0"));
    clock_.Advance(absl::Seconds(1));
    const std::string logged = RunAndCapture(&hooked);
    EXPECT_TRUE(Mentions(logged, "foo:0 = 42 (1.000 sec)")) << logged;
    EXPECT_EQ(Mentions(EndAndCapture(hook), "foo:0"), at_end);
  }

  StepModel m_;
  Output t_;
  Operation train_op_;
  test::FakeClock clock_;
};

TEST_F(LoggingTensorHookTest, IllegalArgs) {
  LoggingTensorHookOptions options;
  options.clock = &clock_;
  options.tensors = {"t"};
  options.every_n_iter = 0;
  absl::Status s = LoggingTensorHook::Create(options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s) &&
              Mentions(std::string(s.message()), "nvalid every_n_iter"))
      << s;
  options.every_n_iter = -10;
  EXPECT_TRUE(absl::IsInvalidArgument(LoggingTensorHook::Create(options).status()));
  options.every_n_iter = 5;
  options.every_n_secs = absl::Seconds(5);
  s = LoggingTensorHook::Create(options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s) && Mentions(std::string(s.message()), "xactly one of"))
      << s;
  options.every_n_iter.reset();
  options.every_n_secs.reset();
  s = LoggingTensorHook::Create(options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s) && Mentions(std::string(s.message()), "xactly one of"))
      << s;
}

TEST_F(LoggingTensorHookTest, PrintAtEndOnly) {
  LoggingTensorHookOptions options;
  options.clock = &clock_;
  options.tensors = {t_.name()};
  options.at_end = true;
  auto hook = *LoggingTensorHook::Create(options);
  ASSERT_TRUE(hook->Begin(m_.root).ok());
  HookedSession hooked(m_.session.get(), {hook.get()});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(Mentions(RunAndCapture(&hooked), "foo:0"));
  EXPECT_TRUE(Mentions(EndAndCapture(hook.get()), "foo:0 = 42"));
}

TEST_F(LoggingTensorHookTest, PrintEveryNSteps) {
  LoggingTensorHookOptions options;
  options.clock = &clock_;
  options.tensors = {t_.name()};
  options.every_n_iter = 10;
  auto hook = *LoggingTensorHook::Create(options);
  ValidatePrintEveryNSteps(hook.get(), /*at_end=*/false);
  // Begin again resets the count.
  ValidatePrintEveryNSteps(hook.get(), /*at_end=*/false);
}

TEST_F(LoggingTensorHookTest, PrintEveryNStepsAndEnd) {
  LoggingTensorHookOptions options;
  options.clock = &clock_;
  options.tensors = {t_.name()};
  options.every_n_iter = 10;
  options.at_end = true;
  auto hook = *LoggingTensorHook::Create(options);
  ValidatePrintEveryNSteps(hook.get(), /*at_end=*/true);
  ValidatePrintEveryNSteps(hook.get(), /*at_end=*/true);
}

TEST_F(LoggingTensorHookTest, PrintFirstStep) {
  LoggingTensorHookOptions options;
  options.clock = &clock_;
  options.tagged_tensors = {{"foo", t_}};
  options.every_n_iter = 1;
  auto hook = *LoggingTensorHook::Create(options);
  ASSERT_TRUE(hook->Begin(m_.root).ok());
  HookedSession hooked(m_.session.get(), {hook.get()});
  const std::string logged = RunAndCapture(&hooked);
  EXPECT_TRUE(Mentions(logged, "foo = 42")) << logged;
  // No elapsed time in the first line.
  EXPECT_FALSE(Mentions(logged, "sec")) << logged;
}

TEST_F(LoggingTensorHookTest, PrintEveryNSecs) {
  LoggingTensorHookOptions options;
  options.clock = &clock_;
  options.tensors = {t_.name()};
  options.every_n_secs = absl::Seconds(1);
  auto hook = *LoggingTensorHook::Create(options);
  ValidatePrintEveryNSecs(hook.get(), /*at_end=*/false);
  ValidatePrintEveryNSecs(hook.get(), /*at_end=*/false);
}

TEST_F(LoggingTensorHookTest, PrintEveryNSecsAndEnd) {
  LoggingTensorHookOptions options;
  options.clock = &clock_;
  options.tensors = {t_.name()};
  options.every_n_secs = absl::Seconds(1);
  options.at_end = true;
  auto hook = *LoggingTensorHook::Create(options);
  ValidatePrintEveryNSecs(hook.get(), /*at_end=*/true);
  ValidatePrintEveryNSecs(hook.get(), /*at_end=*/true);
}

TEST_F(LoggingTensorHookTest, PrintFormatter) {
  LoggingTensorHookOptions options;
  options.clock = &clock_;
  options.tensors = {t_.name()};
  options.every_n_iter = 10;
  options.formatter = [this](const std::map<std::string, Tensor>& values) {
    return absl::StrCat("qqq=", values.at(t_.name()).scalar<float>());
  };
  auto hook = *LoggingTensorHook::Create(options);
  ASSERT_TRUE(hook->Begin(m_.root).ok());
  HookedSession hooked(m_.session.get(), {hook.get()});
  const std::string logged = RunAndCapture(&hooked);
  EXPECT_TRUE(Mentions(logged, "] qqq=42\n")) << logged;
}

TEST_F(LoggingTensorHookTest, ByOutputAndMissingName) {
  LoggingTensorHookOptions options;
  options.clock = &clock_;
  options.tensors = {t_, "no_such_tensor:0"};
  options.every_n_iter = 1;
  auto hook = *LoggingTensorHook::Create(options);
  absl::Status s = hook->Begin(m_.root);
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(Mentions(std::string(s.message()), "no_such_tensor")) << s;
}

// ---- NanTensorHook ----

TEST(NanTensorHookTest, FailsOnNanLoss) {
  StepModel m;
  Output loss = ops::Placeholder(m.root.WithOpName("loss"), DT_FLOAT);
  NanTensorHook hook(loss);
  ASSERT_TRUE(hook.Begin(m.root).ok());
  HookedSession hooked(m.session.get(), {&hook});
  ASSERT_TRUE(hooked.Run({{loss, Tensor::Scalar<float>(1.5f)}}, {}, {m.train_op}, nullptr).ok());
  absl::Status s =
      hooked.Run({{loss, Tensor::Scalar<float>(std::nanf(""))}}, {}, {m.train_op}, nullptr);
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_NE(s.message().find("NaN loss during training"), std::string::npos) << s;
  EXPECT_FALSE(hooked.ShouldStop());
}

TEST(NanTensorHookTest, RequestsStopWithoutFailing) {
  StepModel m;
  Output loss = ops::Placeholder(m.root.WithOpName("loss"), DT_DOUBLE);
  NanTensorHook hook("loss:0", /*fail_on_nan_loss=*/false);
  ASSERT_TRUE(hook.Begin(m.root).ok());
  HookedSession hooked(m.session.get(), {&hook});
  ASSERT_TRUE(hooked.Run({{loss, Tensor::Scalar<double>(2.0)}}, {}, {m.train_op}, nullptr).ok());
  EXPECT_FALSE(hooked.ShouldStop());
  ASSERT_TRUE(hooked
                  .Run({{loss, Tensor::Scalar<double>(std::numeric_limits<double>::quiet_NaN())}},
                       {}, {m.train_op}, nullptr)
                  .ok());
  EXPECT_TRUE(hooked.ShouldStop());
}

TEST(NanTensorHookTest, LossMustBeFloatingPoint) {
  StepModel m;
  NanTensorHook hook(m.global_step.value);
  EXPECT_TRUE(absl::IsInvalidArgument(hook.Begin(m.root)));
}

// ---- GlobalStepWaiterHook ----

TEST(GlobalStepWaiterHookTest, NotWaitForStepZero) {
  StepModel m;
  GlobalStepWaiterHookOptions options;
  options.wait_until_step = 0;
  test::CallbackClock clock;
  options.clock = &clock;
  auto hook = *GlobalStepWaiterHook::Create(options);
  ASSERT_TRUE(hook->Begin(m.root).ok());
  SessionRunContext context({}, m.session.get());
  EXPECT_TRUE(hook->BeforeRun(&context).ok());
  EXPECT_EQ(clock.sleeps, 0);
}

TEST(GlobalStepWaiterHookTest, WaitForStep) {
  StepModel m;
  test::CallbackClock clock;
  // Each sleep is where another worker would advance the global step.
  clock.on_sleep = [&] {
    if (clock.sleeps == 1) m.SetStep(500);
    if (clock.sleeps == 2) m.SetStep(1100);
    if (clock.sleeps > 2) ADD_FAILURE() << "BeforeRun should return after the second sleep";
  };
  GlobalStepWaiterHookOptions options;
  options.wait_until_step = 1000;
  options.clock = &clock;
  auto hook = *GlobalStepWaiterHook::Create(options);
  ASSERT_TRUE(hook->Begin(m.root).ok());
  SessionRunContext context({}, m.session.get());
  ASSERT_TRUE(hook->BeforeRun(&context).ok());
  EXPECT_EQ(clock.sleeps, 2);
  // Later runs do not wait.
  m.SetStep(0);
  ASSERT_TRUE(hook->BeforeRun(&context).ok());
  EXPECT_EQ(clock.sleeps, 2);
}

TEST(GlobalStepWaiterHookTest, GivesUpAfterMaxWait) {
  StepModel m;
  test::CallbackClock clock;
  GlobalStepWaiterHookOptions options;
  options.wait_until_step = 10;
  options.poll_interval = absl::Seconds(1);
  options.max_wait = absl::Seconds(5);
  options.clock = &clock;
  auto hook = *GlobalStepWaiterHook::Create(options);
  ASSERT_TRUE(hook->Begin(m.root).ok());
  SessionRunContext context({}, m.session.get());
  absl::Status s = hook->BeforeRun(&context).status();
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_NE(s.message().find("global step is 0"), std::string::npos) << s;
  EXPECT_EQ(clock.sleeps, 5);
}

// ---- FinalOpsHook ----

TEST(FinalOpsHookTest, FinalOpsIsScalarTensor) {
  StepModel m;
  Output final_op = ops::Const(m.root, 4);
  FinalOpsHook hook({{final_op}, {}});
  ASSERT_TRUE(hook.Begin(m.root).ok());
  EXPECT_TRUE(hook.final_ops_values().empty());
  ASSERT_TRUE(hook.End(m.session.get()).ok());
  ASSERT_EQ(hook.final_ops_values().size(), 1u);
  EXPECT_EQ(hook.final_ops_values()[0].scalar<int32_t>(), 4);
}

TEST(FinalOpsHookTest, FinalOpsIsTensor) {
  StepModel m;
  const std::vector<int32_t> expected = {1, 6, 3, 5, 2, 4};
  Output final_op = ops::Const(m.root, Tensor::FromVector<int32_t>(expected));
  FinalOpsHook hook({{final_op}, {}});
  ASSERT_TRUE(hook.End(m.session.get()).ok());
  const Tensor& t = hook.final_ops_values()[0];
  EXPECT_EQ(std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + 6), expected);
}

TEST(FinalOpsHookTest, FinalOpsTriggersOutOfRangeError) {
  StepModel m;
  Output queue = ops::FIFOQueue(m.root, {DT_INT32});
  Operation enqueue = ops::QueueEnqueue(m.root, queue, {ops::Const(m.root, 7)});
  Operation close = ops::QueueClose(m.root, queue);
  std::vector<Output> read = ops::QueueDequeue(m.root, queue, {DT_INT32});
  ASSERT_TRUE(m.session->Run({}, {}, {enqueue}, nullptr).ok());
  ASSERT_TRUE(m.session->Run({}, {}, {close}, nullptr).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(m.session->Run(read, &out).ok());
  FinalOpsHook hook({{read[0]}, {}});
  ::testing::internal::CaptureStderr();
  absl::Status s = hook.End(m.session.get());
  const std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_NE(logged.find("dependency back to some input source"), std::string::npos) << logged;
}

TEST(FinalOpsHookTest, FinalOpsWithDictionary) {
  StepModel m;
  Output final_op = ops::Placeholder(m.root.WithOpName("final"), DT_FLOAT);
  FinalOpsHook hook({{"final:0"}, {{final_op, Tensor::FromVector<float>({4, -3})}}});
  ASSERT_TRUE(hook.End(m.session.get()).ok());
  const Tensor& t = hook.final_ops_values()[0];
  EXPECT_EQ(std::vector<float>(t.data<float>(), t.data<float>() + 2), (std::vector<float>{4, -3}));
}

// ---- FeedFnHook ----

TEST(FeedFnHookTest, FeedingPlaceholder) {
  StepModel m;
  Output x = ops::Placeholder(m.root, DT_FLOAT);
  Output y = ops::Add(m.root, x, 1.0f);
  FeedFnHook hook([&]() -> std::vector<FeedPair> { return {{x, Tensor::Scalar<float>(1.0f)}}; });
  ASSERT_TRUE(hook.Begin(m.root).ok());
  HookedSession hooked(m.session.get(), {&hook});
  std::vector<Tensor> out;
  ASSERT_TRUE(hooked.Run({y}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 2.0f);
}

TEST(FeedFnHookTest, FeedFnErrorFailsTheRun) {
  StepModel m;
  Output x = ops::Placeholder(m.root, DT_FLOAT);
  FeedFnHook hook([]() -> absl::StatusOr<std::vector<FeedPair>> {
    return absl::OutOfRangeError("input exhausted");
  });
  HookedSession hooked(m.session.get(), {&hook});
  std::vector<Tensor> out;
  EXPECT_TRUE(absl::IsOutOfRange(hooked.Run({x}, &out)));
}

}  // namespace
}  // namespace overseer

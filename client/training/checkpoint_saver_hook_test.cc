#include "client/training/checkpoint_saver_hook.h"

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "client/training/hooked_session.h"
#include "client/training/hooks_test_util.h"
#include "client/training/meta_graph.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::CheckpointedStep;
using test::StepModel;

class MockCheckpointSaverListener : public CheckpointSaverListener {
 public:
  absl::Status Begin(const Scope&) override {
    ++counts["begin"];
    return absl::OkStatus();
  }
  absl::Status BeforeSave(ClientSession*, int64_t) override {
    ++counts["before_save"];
    return absl::OkStatus();
  }
  absl::StatusOr<bool> AfterSave(ClientSession*, int64_t step) override {
    ++counts["after_save"];
    saved_steps.push_back(step);
    return ask_for_stop;
  }
  absl::Status End(ClientSession*, int64_t) override {
    ++counts["end"];
    return absl::OkStatus();
  }

  std::map<std::string, int> counts;
  std::vector<int64_t> saved_steps;
  bool ask_for_stop = false;
};

std::map<std::string, int> Counts(int begin, int before_save, int after_save, int end) {
  return {{"begin", begin}, {"before_save", before_save}, {"after_save", after_save}, {"end", end}};
}

class CheckpointSaverHookTest : public ::testing::Test {
 protected:
  explicit CheckpointSaverHookTest(int64_t steps_per_run = 1)
      : m_(steps_per_run), model_dir_(test::TestDir()) {
    saver_ = std::move(*Saver::Create(m_.root, {}));
  }

  // A hook saving into model_dir_ with the test's saver (as a Scaffold's), clock and
  // listeners; Begin called.
  std::unique_ptr<CheckpointSaverHook> NewHook(CheckpointSaverHookOptions options) {
    options.checkpoint_location = model_dir_;
    if (!options.saver_provider) options.saver = saver_.get();
    options.clock = &clock_;
    auto hook = CheckpointSaverHook::Create(std::move(options));
    EXPECT_TRUE(hook.ok()) << hook.status();
    absl::Status s = (*hook)->Begin(m_.root);
    EXPECT_TRUE(s.ok()) << s;
    return std::move(*hook);
  }
  CheckpointSaverHookOptions SaveSteps(int64_t n) {
    CheckpointSaverHookOptions options;
    options.save_steps = n;
    options.clock = &clock_;
    return options;
  }
  CheckpointSaverHookOptions SaveSecs(absl::Duration d) {
    CheckpointSaverHookOptions options;
    options.save_secs = d;
    options.clock = &clock_;
    return options;
  }
  void Train(HookedSession* hooked) {
    absl::Status s = hooked->Run({}, {}, {m_.train_op}, nullptr);
    ASSERT_TRUE(s.ok()) << s;
  }
  // Runs the hook as a monitored session does: create, `runs` train steps, end.
  void RunMonitored(CheckpointSaverHook* hook, int runs) {
    ASSERT_TRUE(hook->AfterCreateSession(m_.session.get(), nullptr).ok());
    HookedSession hooked(m_.session.get(), {hook});
    for (int i = 0; i < runs && !hooked.ShouldStop(); ++i) Train(&hooked);
    ASSERT_TRUE(hook->End(m_.session.get()).ok());
  }

  StepModel m_;
  std::string model_dir_;
  std::unique_ptr<Saver> saver_;
  test::FakeClock clock_{absl::FromUnixMicros(1484695987209386)};
};

TEST_F(CheckpointSaverHookTest, SavesWhenSaverAndScaffoldBothMissing) {
  CheckpointSaverHookOptions options = SaveSteps(1);
  options.checkpoint_location = model_dir_;
  auto hook = std::move(*CheckpointSaverHook::Create(options));
  ASSERT_TRUE(hook->Begin(m_.root).ok());
  ASSERT_NE(hook->saver(), nullptr);
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 1);
}

TEST_F(CheckpointSaverHookTest, SavesWithTheProvidedSaver) {
  CheckpointSaverHookOptions options = SaveSteps(1);
  options.saver_provider = [this]() -> absl::StatusOr<Saver*> { return saver_.get(); };
  auto hook = NewHook(options);
  EXPECT_EQ(hook->saver(), saver_.get());
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 1);
}

TEST_F(CheckpointSaverHookTest, RaiseWhenSaverAndProviderBothPresent) {
  CheckpointSaverHookOptions options = SaveSteps(1);
  options.checkpoint_location = model_dir_;
  options.saver = saver_.get();
  options.saver_provider = [this]() -> absl::StatusOr<Saver*> { return saver_.get(); };
  EXPECT_TRUE(absl::IsInvalidArgument(CheckpointSaverHook::Create(options).status()));
}

TEST_F(CheckpointSaverHookTest, RaiseInBothSecsAndSteps) {
  CheckpointSaverHookOptions options = SaveSteps(20);
  options.save_secs = absl::Seconds(10);
  options.checkpoint_location = model_dir_;
  EXPECT_TRUE(absl::IsInvalidArgument(CheckpointSaverHook::Create(options).status()));
}

TEST_F(CheckpointSaverHookTest, RaiseInNoneSecsAndSteps) {
  CheckpointSaverHookOptions options;
  options.checkpoint_location = model_dir_;
  options.clock = &clock_;
  EXPECT_TRUE(absl::IsInvalidArgument(CheckpointSaverHook::Create(options).status()));
}

TEST_F(CheckpointSaverHookTest, NeedsAGlobalStep) {
  Scope other = Scope::NewRootScope();
  CheckpointSaverHookOptions options = SaveSteps(1);
  options.checkpoint_location = model_dir_;
  auto hook = std::move(*CheckpointSaverHook::Create(options));
  EXPECT_TRUE(absl::IsFailedPrecondition(hook->Begin(other)));
}

TEST_F(CheckpointSaverHookTest, SaveSecsSavesInFirstStep) {
  auto hook = NewHook(SaveSecs(absl::Seconds(2)));
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 1);
}

TEST_F(CheckpointSaverHookTest, SaveSecsCallsListenersAtBeginAndEnd) {
  MockCheckpointSaverListener listener;
  CheckpointSaverHookOptions options = SaveSecs(absl::Seconds(2));
  options.listeners = {&listener};
  auto hook = NewHook(options);
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);  // Saves here.
  Train(&hooked);  // Not here, so it does at the end.
  ASSERT_TRUE(hook->End(m_.session.get()).ok());
  EXPECT_EQ(listener.counts, Counts(1, 2, 2, 1));
  EXPECT_EQ(listener.saved_steps, (std::vector<int64_t>{1, 2}));
}

// TensorFlow's test_listener_with_monitored_session: saves at creation (step 0), after
// each of the two steps (save_steps=1), and not again at the end.
TEST_F(CheckpointSaverHookTest, ListenerThroughCreateRunsAndEnd) {
  MockCheckpointSaverListener listener;
  CheckpointSaverHookOptions options = SaveSteps(1);
  options.listeners = {&listener};
  auto hook = NewHook(options);
  RunMonitored(hook.get(), 2);
  EXPECT_EQ(m_.Step(), 2);
  EXPECT_EQ(listener.counts, Counts(1, 3, 3, 1));
  EXPECT_EQ(listener.saved_steps, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(CheckpointedStep(model_dir_), 2);
}

TEST_F(CheckpointSaverHookTest, ListenerStopsTrainingInAfterSave) {
  MockCheckpointSaverListener listener;
  CheckpointSaverHookOptions options = SaveSteps(1);
  options.listeners = {&listener};
  auto hook = NewHook(options);
  ASSERT_TRUE(hook->AfterCreateSession(m_.session.get(), nullptr).ok());
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  EXPECT_FALSE(hooked.ShouldStop());
  Train(&hooked);
  EXPECT_FALSE(hooked.ShouldStop());
  listener.ask_for_stop = true;
  Train(&hooked);
  EXPECT_TRUE(hooked.ShouldStop());
}

TEST_F(CheckpointSaverHookTest, TwoListenersWithDefaultSaver) {
  MockCheckpointSaverListener listener1, listener2;
  CheckpointSaverHookOptions options = SaveSteps(1);
  options.checkpoint_location = model_dir_;
  options.listeners = {&listener1, &listener2};
  auto hook = std::move(*CheckpointSaverHook::Create(options));
  ASSERT_TRUE(hook->Begin(m_.root).ok());
  RunMonitored(hook.get(), 2);
  EXPECT_EQ(listener1.counts, Counts(1, 3, 3, 1));
  EXPECT_EQ(listener2.counts, listener1.counts);
  EXPECT_EQ(CheckpointedStep(model_dir_), 2);
}

TEST_F(CheckpointSaverHookTest, SaveSecsSavesPeriodically) {
  const absl::Time start = clock_.Now();
  auto hook = NewHook(SaveSecs(absl::Seconds(2)));
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);  // Saved.
  clock_.Set(start + absl::Milliseconds(500));
  Train(&hooked);  // Not saved.
  EXPECT_EQ(CheckpointedStep(model_dir_), 1);
  clock_.Set(start + absl::Milliseconds(2500));
  Train(&hooked);  // Saved.
  clock_.Set(start + absl::Milliseconds(2600));
  Train(&hooked);  // Not saved.
  clock_.Set(start + absl::Milliseconds(2700));
  Train(&hooked);  // Not saved.
  EXPECT_EQ(CheckpointedStep(model_dir_), 3);
  clock_.Set(start + absl::Seconds(10));
  Train(&hooked);  // Saved.
  EXPECT_EQ(CheckpointedStep(model_dir_), 6);
}

TEST_F(CheckpointSaverHookTest, SaveSecsCallsListenersPeriodically) {
  const absl::Time start = clock_.Now();
  MockCheckpointSaverListener listener;
  CheckpointSaverHookOptions options = SaveSecs(absl::Seconds(2));
  options.listeners = {&listener};
  auto hook = NewHook(options);
  HookedSession hooked(m_.session.get(), {hook.get()});
  for (double secs : {0.5, 0.5, 3.0, 3.5, 4.0, 6.5, 7.0}) {
    clock_.Set(start + absl::Seconds(secs));
    Train(&hooked);  // Saves at 0.5, 3.0 and 6.5.
  }
  clock_.Set(start + absl::Seconds(7.5));
  ASSERT_TRUE(hook->End(m_.session.get()).ok());  // And here.
  EXPECT_EQ(listener.counts, Counts(1, 4, 4, 1));
  EXPECT_EQ(listener.saved_steps, (std::vector<int64_t>{1, 3, 6, 7}));
}

TEST_F(CheckpointSaverHookTest, SaveStepsSavesInFirstStep) {
  auto hook = NewHook(SaveSteps(2));
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 1);
}

TEST_F(CheckpointSaverHookTest, SaveStepsSavesPeriodically) {
  auto hook = NewHook(SaveSteps(2));
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 1);  // Not saved.
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 3);  // Saved.
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 3);  // Not saved.
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 5);  // Saved.
}

TEST_F(CheckpointSaverHookTest, SaveSavesAtEnd) {
  auto hook = NewHook(SaveSecs(absl::Seconds(2)));
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  Train(&hooked);
  ASSERT_TRUE(hook->End(m_.session.get()).ok());
  EXPECT_EQ(CheckpointedStep(model_dir_), 2);
}

TEST_F(CheckpointSaverHookTest, SummaryWriterGetsGraphAndCheckpointLogs) {
  const std::string logdir = model_dir_ + "/events";
  SummaryWriterOptions writer_options;
  writer_options.clock = &clock_;
  writer_options.background_flush = false;
  auto writer = std::move(*SummaryWriter::Create(logdir, writer_options));
  CheckpointSaverHookOptions options = SaveSteps(2);
  options.summary_writer = writer.get();
  auto hook = NewHook(options);
  ASSERT_TRUE(hook->AfterCreateSession(m_.session.get(), nullptr).ok());
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  Train(&hooked);
  ASSERT_TRUE(writer->Flush().ok());
  std::vector<Event> events = test::ReadEvents(logdir);
  int graphs = 0;
  int meta_graphs = 0;
  std::vector<std::pair<int64_t, std::string>> checkpoints;
  for (const Event& e : events) {
    if (!e.meta_graph_def().empty()) {
      MetaGraphDef meta;
      ASSERT_TRUE(meta.ParseFromString(e.meta_graph_def()));
      EXPECT_GT(meta.graph_def().node_size(), 0);
      EXPECT_TRUE(meta.has_saver_def());
      ++meta_graphs;
    }
    if (!e.graph_def().empty()) {
      GraphDef graph;
      ASSERT_TRUE(graph.ParseFromString(e.graph_def()));
      bool has_train_op = false;
      for (const NodeDef& node : graph.node()) has_train_op |= node.name() == "train_op";
      EXPECT_TRUE(has_train_op);
      ++graphs;
    }
    if (e.session_log().status() == SessionLog::CHECKPOINT) {
      checkpoints.emplace_back(e.step(), e.session_log().checkpoint_path());
    }
  }
  EXPECT_EQ(graphs, 1);
  EXPECT_EQ(meta_graphs, 1);
  EXPECT_EQ(checkpoints,
            (std::vector<std::pair<int64_t, std::string>>{{0, model_dir_ + "/model.ckpt-0"},
                                                          {2, model_dir_ + "/model.ckpt-2"}}));
  // TensorFlow's save_graph_def: graph.pbtxt, and a meta graph beside each checkpoint.
  EXPECT_TRUE(std::filesystem::exists(model_dir_ + "/graph.pbtxt"));
  auto meta = ReadMetaGraph(model_dir_ + "/model.ckpt-2.meta");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_TRUE(meta->has_saver_def());
}

TEST_F(CheckpointSaverHookTest, SaveGraphDefFalseWritesNoGraphFiles) {
  CheckpointSaverHookOptions options = SaveSteps(2);
  options.save_graph_def = false;
  auto hook = NewHook(options);
  ASSERT_TRUE(hook->AfterCreateSession(m_.session.get(), nullptr).ok());
  EXPECT_TRUE(std::filesystem::exists(model_dir_ + "/model.ckpt-0.index"));
  EXPECT_FALSE(std::filesystem::exists(model_dir_ + "/graph.pbtxt"));
  EXPECT_FALSE(std::filesystem::exists(model_dir_ + "/model.ckpt-0.meta"));
}

TEST_F(CheckpointSaverHookTest, SaveCheckpointBeforeFirstTrainStep) {
  auto hook = NewHook(SaveSteps(2));
  HookedSession hooked(m_.session.get(), {hook.get()});
  ASSERT_TRUE(hook->AfterCreateSession(m_.session.get(), nullptr).ok());
  EXPECT_EQ(CheckpointedStep(model_dir_), 0);  // Saved at step 0.
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 0);  // Not after one step.
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 2);  // After save_steps.
}

TEST_F(CheckpointSaverHookTest, SavesToTheCheckpointBasename) {
  CheckpointSaverHookOptions options = SaveSteps(1);
  options.checkpoint_basename = "weights";
  auto hook = NewHook(options);
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  auto latest = LatestCheckpoint(model_dir_);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ(**latest, model_dir_ + "/weights-1");
}

// Several global steps per run (TensorFlow's CheckpointSaverHookMultiStepTest).
class CheckpointSaverHookMultiStepTest : public CheckpointSaverHookTest {
 protected:
  CheckpointSaverHookMultiStepTest() : CheckpointSaverHookTest(kStepsPerRun) {}
  std::unique_ptr<CheckpointSaverHook> NewMultiStepHook() {
    CheckpointSaverHookOptions options = SaveSteps(2 * kStepsPerRun);
    options.steps_per_run = kStepsPerRun;
    return NewHook(options);
  }
  static constexpr int64_t kStepsPerRun = 5;
};

TEST_F(CheckpointSaverHookMultiStepTest, SaveStepsSavesInFirstStep) {
  auto hook = NewMultiStepHook();
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  EXPECT_EQ(CheckpointedStep(model_dir_), 5);
}

TEST_F(CheckpointSaverHookMultiStepTest, SaveStepsSavesPeriodically) {
  auto hook = NewMultiStepHook();
  HookedSession hooked(m_.session.get(), {hook.get()});
  for (int64_t expected : {5, 5, 15, 15, 25}) {
    Train(&hooked);
    EXPECT_EQ(CheckpointedStep(model_dir_), expected) << "at step " << m_.Step();
  }
}

TEST_F(CheckpointSaverHookMultiStepTest, SaveStepsSavesAtEnd) {
  auto hook = NewMultiStepHook();
  HookedSession hooked(m_.session.get(), {hook.get()});
  Train(&hooked);
  Train(&hooked);
  ASSERT_TRUE(hook->End(m_.session.get()).ok());
  EXPECT_EQ(CheckpointedStep(model_dir_), 10);
}

}  // namespace
}  // namespace overseer

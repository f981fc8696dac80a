// One trainer of between-graph replicated training of the example classifier on a
// cluster: its variables are sharded over the ps tasks (ReplicaDeviceSetter), its other
// ops run on /job:worker/task:<task_index>, and it trains until the shared global step
// reaches --last_step. Run one chief (--is_chief) and any number of non-chiefs against
// the same master; cluster_demo starts them for you.
//
//   cluster_trainer --master=grpc://127.0.0.1:2222 --is_chief --task_index=0 --num_ps=2 \
//       --checkpoint_dir=grpc://127.0.0.1:2230/demo --summary_dir=grpc://127.0.0.1:2231/demo
//
// Prints the machine-readable lines of examples/trainer_output.h on stdout (a line per
// session created, a line every --log_every steps, and "final accuracy: 0.xxxx" at the
// end) and exits 0, or exits 1 with the error on stderr.

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/basic_session_run_hooks.h"
#include "client/checkpoint_saver_hook.h"
#include "client/client_session.h"
#include "client/device_setter.h"
#include "client/hooked_session.h"
#include "client/session_run_hook.h"
#include "client/summary_hooks.h"
#include "client/summary_writer.h"
#include "client/variables.h"
#include "client/summary_ops.h"
#include "core/status_macros.h"
#include "examples/classifier.h"
#include "examples/mnist_data.h"
#include "examples/trainer_output.h"

ABSL_FLAG(std::string, master, "", "the master, grpc://host:port (required)");
ABSL_FLAG(bool, is_chief, false,
          "this trainer initialises or restores the model and saves checkpoints (exactly "
          "one trainer of a job is the chief)");
ABSL_FLAG(int, task_index, 0, "this trainer's worker task: its ops run on /job:worker/task:N");
ABSL_FLAG(int, num_ps, 2, "ps tasks to shard the variables over");
ABSL_FLAG(int64_t, last_step, 1000, "stop when the shared global step reaches this");
ABSL_FLAG(int64_t, batch_size, 50, "examples per training step");
ABSL_FLAG(int64_t, hidden_units, 64, "units of the hidden layer");
ABSL_FLAG(double, learning_rate, 0.001, "Adam learning rate");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "where the chief saves checkpoints and every trainer restores from: a local "
          "directory or grpc://host:port/<run> on a checkpoint_store_server; empty: none");
ABSL_FLAG(std::string, summary_dir, "",
          "where the chief writes TensorBoard events: a local directory or "
          "grpc://host:port/<run> on a summary_writer_server; empty: none");
ABSL_FLAG(int64_t, save_checkpoint_steps, 100,
          "save a checkpoint every this many global steps (0: use --save_checkpoint_secs)");
ABSL_FLAG(int64_t, save_checkpoint_secs, 0,
          "save a checkpoint every this many seconds when --save_checkpoint_steps is 0");
ABSL_FLAG(int64_t, save_summaries_steps, 20, "write summaries every this many global steps");
ABSL_FLAG(int64_t, log_every, 1, "print a step line every this many of this trainer's steps");
ABSL_FLAG(int64_t, num_train, 4000, "synthetic training examples");
ABSL_FLAG(int64_t, num_test, 1000, "synthetic test examples");
ABSL_FLAG(int64_t, seed, 7, "seed of the synthetic data");
ABSL_FLAG(std::string, data_dir, "",
          "directory holding the four MNIST IDX files; empty: synthetic data");

namespace overseer {
namespace examples {
namespace {

void Emit(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// Prints a session line at every session creation (so a recovery shows with the global
// step the model resumed from) and a step line every `log_every` runs.
class ProgressHook : public SessionRunHook {
 public:
  ProgressHook(Output global_step, Output loss, int64_t log_every)
      : global_step_(global_step), loss_(loss), log_every_(log_every) {}

  absl::Status AfterCreateSession(ClientSession* session, Coordinator* coord) override {
    ++sessions_;
    std::vector<Tensor> out;
    RETURN_IF_ERROR(session->Run({global_step_}, &out));
    Emit(FormatSessionLine(sessions_, out[0].scalar<int64_t>(), sessions_ - 1, WallSeconds()));
    return absl::OkStatus();
  }
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override {
    SessionRunArgs args;
    args.fetches = {global_step_, loss_};
    return args;
  }
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override {
    if (++runs_ % log_every_ == 0) {
      Emit(FormatStepLine(values.results[0].scalar<int64_t>(), values.results[1].scalar<float>(),
                          sessions_ - 1, WallSeconds()));
    }
    return absl::OkStatus();
  }

 private:
  const Output global_step_;
  const Output loss_;
  const int64_t log_every_;
  int64_t sessions_ = 0;
  int64_t runs_ = 0;
};

// What RunTraining needs besides the graph.
struct TrainingOptions {
  std::string master;
  bool is_chief = false;
  std::string checkpoint_dir;
  std::string summary_dir;
  int64_t save_checkpoint_steps = 0;
  int64_t save_checkpoint_secs = 0;
  int64_t save_summaries_steps = 0;
  std::vector<SessionRunHook*> hooks;  // Not owned.
};

// Runs `train` with the feeds of `next_feeds` until a hook requests stop.
absl::Status RunTraining(const Scope& root, Operation train,
                         const std::function<std::vector<FeedPair>()>& next_feeds,
                         const TrainingOptions& o) {
  std::vector<std::unique_ptr<SessionRunHook>> chief_hooks;
  std::unique_ptr<SummaryWriter> writer;
  if (o.is_chief && !o.summary_dir.empty()) {
    ASSIGN_OR_RETURN(writer, SummaryWriter::Create(o.summary_dir));
  }
  if (o.is_chief && !o.checkpoint_dir.empty()) {
    CheckpointSaverHookOptions saver;
    saver.checkpoint_location = o.checkpoint_dir;
    if (o.save_checkpoint_steps > 0) {
      saver.save_steps = o.save_checkpoint_steps;
    } else {
      saver.save_secs = absl::Seconds(o.save_checkpoint_secs);
    }
    saver.summary_writer = writer.get();
    ASSIGN_OR_RETURN(chief_hooks.emplace_back(), CheckpointSaverHook::Create(saver));
  }
  if (writer != nullptr) {
    SummarySaverHookOptions summaries;
    summaries.save_steps = o.save_summaries_steps;
    summaries.summary_writer = writer.get();
    summaries.summary_op = {ops::MergeAllSummaries(root.WithOpName("merged_summaries"))};
    ASSIGN_OR_RETURN(chief_hooks.emplace_back(), SummarySaverHook::Create(summaries));
    StepCounterHookOptions counter;
    counter.every_n_steps = o.save_summaries_steps;
    counter.summary_writer = writer.get();
    ASSIGN_OR_RETURN(chief_hooks.emplace_back(), StepCounterHook::Create(counter));
  }
  std::vector<SessionRunHook*> hooks = o.hooks;
  for (auto& hook : chief_hooks) hooks.push_back(hook.get());
  for (SessionRunHook* hook : hooks) RETURN_IF_ERROR(hook->Begin(root));
  Output report = ReportUninitializedVariables(root.WithOpName("report_uninitialized"));
  Operation init = GlobalVariablesInitializer(root.WithOpName("init_all"));
  RETURN_IF_ERROR(root.status());

  SessionOptions session_options;
  session_options.target = o.master;
  ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> session,
                   ClientSession::Create(root, session_options));
  if (o.is_chief) {
    RETURN_IF_ERROR(session->Run({}, {}, {init}, nullptr));
  } else {
    const absl::Time deadline = absl::Now() + absl::Minutes(2);
    while (true) {
      std::vector<Tensor> out;
      RETURN_IF_ERROR(session->Run({report}, &out));
      if (out[0].NumElements() == 0) break;
      if (absl::Now() > deadline) return absl::DeadlineExceededError("model not initialised");
      absl::SleepFor(absl::Milliseconds(100));
    }
  }
  for (SessionRunHook* hook : hooks) RETURN_IF_ERROR(hook->AfterCreateSession(session.get(), nullptr));
  HookedSession hooked(session.get(), hooks);
  while (!hooked.ShouldStop()) {
    RETURN_IF_ERROR(hooked.Run(next_feeds(), {}, {train}, nullptr));
  }
  for (SessionRunHook* hook : hooks) RETURN_IF_ERROR(hook->End(session.get()));
  if (writer != nullptr) RETURN_IF_ERROR(writer->Close());
  return session->Close();
}

absl::Status CheckFlags() {
  if (absl::GetFlag(FLAGS_master).empty()) return absl::InvalidArgumentError("--master is required");
  if (absl::GetFlag(FLAGS_task_index) < 0 || absl::GetFlag(FLAGS_num_ps) < 1 ||
      absl::GetFlag(FLAGS_last_step) < 1 || absl::GetFlag(FLAGS_batch_size) < 1 ||
      absl::GetFlag(FLAGS_hidden_units) < 1 || absl::GetFlag(FLAGS_log_every) < 1 ||
      absl::GetFlag(FLAGS_save_summaries_steps) < 1 || absl::GetFlag(FLAGS_num_train) < 1 ||
      absl::GetFlag(FLAGS_num_test) < 1 || absl::GetFlag(FLAGS_save_checkpoint_steps) < 0 ||
      absl::GetFlag(FLAGS_save_checkpoint_secs) < 0) {
    return absl::InvalidArgumentError(
        "--task_index, --save_checkpoint_steps and --save_checkpoint_secs must be >= 0; "
        "--num_ps, --last_step, --batch_size, --hidden_units, --log_every, "
        "--save_summaries_steps, --num_train and --num_test must be positive");
  }
  if (!absl::GetFlag(FLAGS_checkpoint_dir).empty() &&
      absl::GetFlag(FLAGS_save_checkpoint_steps) == 0 &&
      absl::GetFlag(FLAGS_save_checkpoint_secs) == 0) {
    return absl::InvalidArgumentError(
        "with --checkpoint_dir, --save_checkpoint_steps or --save_checkpoint_secs must be set");
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainTest> LoadData() {
  const std::string dir = absl::GetFlag(FLAGS_data_dir);
  if (!dir.empty()) return ReadMnist(dir);
  return MakeSynthetic(absl::GetFlag(FLAGS_num_train), absl::GetFlag(FLAGS_num_test),
                       static_cast<uint64_t>(absl::GetFlag(FLAGS_seed)));
}

absl::Status Train() {
  RETURN_IF_ERROR(CheckFlags());
  ASSIGN_OR_RETURN(TrainTest data, LoadData());
  const int task = absl::GetFlag(FLAGS_task_index);

  ReplicaDeviceSetterOptions setter_options;
  setter_options.num_ps_tasks = absl::GetFlag(FLAGS_num_ps);
  setter_options.worker_device = absl::StrCat("/job:worker/task:", task);
  ASSIGN_OR_RETURN(ReplicaDeviceSetter setter, ReplicaDeviceSetter::Create(setter_options));

  Scope root = Scope::NewRootScope();
  ClassifierOptions options;
  options.num_features = data.train.num_features;
  options.hidden_units = absl::GetFlag(FLAGS_hidden_units);
  options.learning_rate = absl::GetFlag(FLAGS_learning_rate);
  options.device_setter = &setter;
  ASSIGN_OR_RETURN(Classifier model, BuildClassifier(root, options));
  const Scope ops = setter.ForOps(root);
  ops::ScalarSummary(ops.WithOpName("loss_summary"), std::string("loss"), model.loss);
  ops::ScalarSummary(ops.WithOpName("accuracy_summary"), std::string("batch_accuracy"),
                     model.accuracy);
  RETURN_IF_ERROR(root.status());

  StopAtStepHookOptions stop_options;
  stop_options.last_step = absl::GetFlag(FLAGS_last_step);
  ASSIGN_OR_RETURN(std::unique_ptr<StopAtStepHook> stop, StopAtStepHook::Create(stop_options));
  ProgressHook progress(model.global_step.value, model.loss, absl::GetFlag(FLAGS_log_every));
  Tensor test_x, test_y;
  data.test.Batch(0, data.test.num_examples, &test_x, &test_y);
  FinalOpsHookOptions final_options;
  final_options.final_ops = {model.accuracy};
  final_options.final_ops_feed_dict = {{model.images, test_x}, {model.labels, test_y}};
  FinalOpsHook final_accuracy(final_options);

  TrainingOptions training;
  training.master = absl::GetFlag(FLAGS_master);
  training.is_chief = absl::GetFlag(FLAGS_is_chief);
  training.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  training.summary_dir = absl::GetFlag(FLAGS_summary_dir);
  training.save_checkpoint_steps = absl::GetFlag(FLAGS_save_checkpoint_steps);
  training.save_checkpoint_secs = absl::GetFlag(FLAGS_save_checkpoint_secs);
  training.save_summaries_steps = absl::GetFlag(FLAGS_save_summaries_steps);
  training.hooks = {stop.get(), &progress, &final_accuracy};

  // The trainers read different parts of the data.
  const int64_t batch = absl::GetFlag(FLAGS_batch_size);
  int64_t local_step = 0;
  auto next_feeds = [&]() {
    Tensor x, y;
    data.train.Batch((local_step++ * 2 + task) * batch, batch, &x, &y);
    return std::vector<FeedPair>{{model.images, x}, {model.labels, y}};
  };
  RETURN_IF_ERROR(RunTraining(root, model.train, next_feeds, training));
  if (final_accuracy.final_ops_values().empty()) {
    return absl::InternalError("training ended without the final evaluation");
  }
  Emit(FormatFinalLine(final_accuracy.final_ops_values()[0].scalar<float>()));
  return absl::OkStatus();
}

}  // namespace
}  // namespace examples
}  // namespace overseer

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "One chief or non-chief trainer of the example classifier on a cluster, under "
      "MonitoredTrainingSession.\nUsage: cluster_trainer --master=grpc://HOST:PORT "
      "[--is_chief] [--task_index=N] [--checkpoint_dir=...] [--summary_dir=...] ...");
  absl::ParseCommandLine(argc, argv);
  absl::Status status = overseer::examples::Train();
  if (!status.ok()) {
    std::fprintf(stderr, "cluster_trainer: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

// One trainer of between-graph replicated training of the example classifier on a
// cluster: its variables are sharded over the ps tasks (ReplicaDeviceSetter), its other
// ops run on /job:worker/task:<task_index>, and it trains until the shared global step
// reaches --last_step. Run one chief (--is_chief) and any number of non-chiefs against
// the same master; cluster_demo starts them for you.
//
//   cluster_trainer --master=grpc://127.0.0.1:2222 --is_chief --task_index=0 --num_ps=2
//       --checkpoint_dir=grpc://127.0.0.1:2230/demo --summary_dir=grpc://127.0.0.1:2231/demo
//
// Under MonitoredTrainingSession: the chief initialises the model (or restores the
// latest checkpoint), saves checkpoints and writes summaries; a non-chief waits until
// the model is ready. When a server restarts, the session is recreated and the step
// rerun; the chief restores the checkpoint only if a ps lost its variables. At the end
// each trainer evaluates the test set; the chief waits for the non-chiefs to end, then
// tells the cluster the job is done (servers started with --exit_when_job_done exit).
//
// Prints the machine-readable lines of examples/trainer_output.h on stdout (a line per
// session created, a line every --log_every steps, and "final accuracy: 0.xxxx" at the
// end) and exits 0, or exits 1 with the error on stderr.
//
// Serves its Prometheus metrics (client/training/trainer_metrics.h: steps, global step,
// recoveries, readiness waits, the chief's checkpoints, process_*) at
// http://<--metrics_bind>:<--metrics_port>/metrics (loopback unless told otherwise);
// --metrics_port=0 (the default) picks a free port, logs it and writes it to
// --metrics_port_file; -1 serves none.

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
#include "client/graph/device_setter.h"
#include "client/graph/ops.h"
#include "client/graph/ops_queue.h"
#include "client/session/client_session.h"
#include "client/summary/summary_ops.h"
#include "client/training/basic_session_run_hooks.h"
#include "client/training/monitored_training_session.h"
#include "client/training/recoverable_session.h"
#include "client/training/session_run_hook.h"
#include "client/training/trainer_metrics.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "core/rpc/security.h"
#include "core/status_macros.h"
#include "examples/classifier.h"
#include "examples/mnist_data.h"
#include "examples/stop_file_hook.h"
#include "examples/trainer_output.h"
#include "examples/workers_done_hook.h"

ABSL_FLAG(std::string, master, "", "the master, grpc://host:port (required)");
ABSL_FLAG(bool, is_chief, false,
          "this trainer initialises or restores the model and saves checkpoints (exactly "
          "one trainer of a job is the chief)");
ABSL_FLAG(int, task_index, 0, "this trainer's worker task: its ops run on /job:worker/task:N");
ABSL_FLAG(int, num_ps, 2, "ps tasks to shard the variables over");
ABSL_FLAG(int, num_workers, 2,
          "trainers of the job (one per worker task); the chief ends only after the others "
          "did, or after --wait_for_workers_seconds");
ABSL_FLAG(int64_t, wait_for_workers_seconds, 60,
          "how long the chief waits at the end for the other trainers to end");
ABSL_FLAG(int64_t, max_backoff_ms, 1000,
          "recovery: the longest wait between two attempts to recreate the session after "
          "a server restarted or could not be reached (the first waits 100 ms)");
ABSL_FLAG(int64_t, max_recovery_seconds, 300,
          "recovery: give up (exit 1) when a server stays unreachable this long");
ABSL_FLAG(int64_t, last_step, 1000,
          "stop when the shared global step reaches this; 0: no last step of its own (give "
          "--stop_file)");
ABSL_FLAG(std::string, stop_file, "",
          "once this file exists and holds a global step, stop when the shared global step "
          "reaches it: how whoever runs the job ends it (write the file atomically)");
ABSL_FLAG(int64_t, batch_size, 50, "examples per training step");
ABSL_FLAG(int64_t, hidden_units, 64, "units of the hidden layer");
ABSL_FLAG(double, learning_rate, 0,
          "learning rate; 0: the model's default (Adam's 0.001; the embedding model's Adagrad "
          "0.1)");
ABSL_FLAG(std::string, model, "mlp",
          "mlp (two-layer perceptron), cnn (TensorFlow's Fashion-MNIST convnet) or embedding "
          "(pixels as categorical ids in an embedding table sharded over the ps, updated "
          "sparsely where it lives)");
ABSL_FLAG(bool, sync_replicas, false,
          "synchronous training (SyncReplicasOptimizer): each update is the mean of "
          "--replicas_to_aggregate workers' gradients of the current variables");
ABSL_FLAG(int, replicas_to_aggregate, 0,
          "with --sync_replicas: gradients per update (0: --num_workers)");
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
ABSL_FLAG(std::string, data_dir, overseer::examples::kFashionMnistDir,
          "directory holding the four MNIST or Fashion-MNIST IDX files, gzipped or not "
          "(default: Fashion-MNIST, from Debian's dataset-fashion-mnist)");
ABSL_FLAG(bool, synthetic, false, "train on synthetic data instead (fast, trivially separable)");
ABSL_FLAG(int, metrics_port, 0,
          "serve this trainer's Prometheus metrics at http://BIND:PORT/metrics; 0 picks a "
          "free port (logged, and written to --metrics_port_file), -1 serves none");
ABSL_FLAG(std::string, metrics_bind, "127.0.0.1",
          "the address the metrics listener binds: loopback by default, \"0.0.0.0\" for "
          "every interface (for a Prometheus on another host or container)");
ABSL_FLAG(std::string, metrics_port_file, "",
          "once the metrics are served, write their port to this file (one line, replaced "
          "atomically): how a launcher that passed --metrics_port=0 learns it");

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

  absl::Status AfterCreateSession(ClientSession* session, Coordinator* /*coord*/) override {
    ++sessions_;
    std::vector<Tensor> out;
    RETURN_IF_ERROR(session->Run({global_step_}, &out));
    Emit(FormatSessionLine(sessions_, out[0].scalar<int64_t>(), sessions_ - 1, WallSeconds()));
    return absl::OkStatus();
  }
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* /*context*/) override {
    SessionRunArgs args;
    args.fetches = {global_step_, loss_};
    return args;
  }
  absl::Status AfterRun(SessionRunContext* /*context*/, const SessionRunValues& values) override {
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
  RecoveryOptions recovery;
  std::vector<SessionRunHook*> hooks;  // Not owned.
  TrainerMetrics* metrics = nullptr;   // Not owned; null: none.
};

// Runs `train` with the feeds of `next_feeds` under MonitoredTrainingSession until a
// hook requests stop. Recoverable errors (a server restarted) are recovered inside.
absl::Status RunTraining(const Scope& root, Operation train,
                         const std::function<std::vector<FeedPair>()>& next_feeds,
                         const TrainingOptions& o) {
  MonitoredTrainingSessionOptions options;
  options.clock = Clock::Real();
  options.master = o.master;
  options.is_chief = o.is_chief;
  options.checkpoint_dir = o.checkpoint_dir;
  options.summary_dir = o.summary_dir;
  if (o.save_checkpoint_steps > 0) {
    options.save_checkpoint_steps = o.save_checkpoint_steps;
  } else {
    options.save_checkpoint_secs = absl::Seconds(o.save_checkpoint_secs);
  }
  options.save_summaries_steps = o.save_summaries_steps;
  options.log_step_count_steps = o.save_summaries_steps;
  options.recovery = o.recovery;
  options.hooks = o.hooks;
  options.metrics = o.metrics;
  ASSIGN_OR_RETURN(std::unique_ptr<MonitoredSession> session,
                   MonitoredTrainingSession(root, options));
  while (!session->ShouldStop()) {
    absl::Status s = session->Run(next_feeds(), {}, {train}, nullptr);
    // Synchronous training's non-chiefs: the chief ended and closed the token queue.
    if (absl::IsOutOfRange(s)) break;
    RETURN_IF_ERROR(s);
  }
  if (session->recoveries() > 0) {
    LOG(INFO) << "training ended after " << session->recoveries()
              << " recoveries; the last was caused by " << session->last_recovery_cause();
  }
  return session->Close();
}

absl::Status CheckFlags() {
  if (absl::GetFlag(FLAGS_master).empty())
    return absl::InvalidArgumentError("--master is required");
  if (absl::GetFlag(FLAGS_task_index) < 0 || absl::GetFlag(FLAGS_num_ps) < 1 ||
      absl::GetFlag(FLAGS_num_workers) < 1 || absl::GetFlag(FLAGS_wait_for_workers_seconds) < 0 ||
      absl::GetFlag(FLAGS_max_backoff_ms) < 1 || absl::GetFlag(FLAGS_max_recovery_seconds) < 1 ||
      absl::GetFlag(FLAGS_last_step) < 0 || absl::GetFlag(FLAGS_batch_size) < 1 ||
      absl::GetFlag(FLAGS_hidden_units) < 1 || absl::GetFlag(FLAGS_log_every) < 1 ||
      absl::GetFlag(FLAGS_save_summaries_steps) < 1 || absl::GetFlag(FLAGS_num_train) < 1 ||
      absl::GetFlag(FLAGS_num_test) < 1 || absl::GetFlag(FLAGS_save_checkpoint_steps) < 0 ||
      absl::GetFlag(FLAGS_save_checkpoint_secs) < 0) {
    return absl::InvalidArgumentError(
        "--task_index, --last_step, --save_checkpoint_steps, --save_checkpoint_secs and "
        "--wait_for_workers_seconds must be >= 0; --num_ps, --num_workers, --max_backoff_ms, "
        "--max_recovery_seconds, --batch_size, --hidden_units, --log_every, "
        "--save_summaries_steps, --num_train and --num_test must be positive");
  }
  if (absl::GetFlag(FLAGS_replicas_to_aggregate) < 0) {
    return absl::InvalidArgumentError("--replicas_to_aggregate must be >= 0 (0: --num_workers)");
  }
  if (absl::GetFlag(FLAGS_metrics_port) < -1 || absl::GetFlag(FLAGS_metrics_port) > 65535) {
    return absl::InvalidArgumentError("--metrics_port must be a port, 0 (a free one) or -1");
  }
  if (absl::GetFlag(FLAGS_last_step) == 0 && absl::GetFlag(FLAGS_stop_file).empty()) {
    return absl::InvalidArgumentError(
        "--last_step=0 (no last step) needs --stop_file, or training would never end");
  }
  if (!absl::GetFlag(FLAGS_checkpoint_dir).empty() &&
      absl::GetFlag(FLAGS_save_checkpoint_steps) == 0 &&
      absl::GetFlag(FLAGS_save_checkpoint_secs) == 0) {
    return absl::InvalidArgumentError(
        "with --checkpoint_dir, --save_checkpoint_steps or --save_checkpoint_secs must be set");
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainTest> LoadDataFromFlags() {
  DataChoice choice;
  choice.synthetic = absl::GetFlag(FLAGS_synthetic);
  choice.data_dir = absl::GetFlag(FLAGS_data_dir);
  choice.num_train = absl::GetFlag(FLAGS_num_train);
  choice.num_test = absl::GetFlag(FLAGS_num_test);
  choice.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed));
  std::string description;
  ASSIGN_OR_RETURN(TrainTest data, LoadData(choice, &description));
  LOG(INFO) << description;
  return data;
}

absl::Status Train() {
  RETURN_IF_ERROR(CheckFlags());
  // Served before training starts, so that Prometheus sees a non-chief waiting.
  std::unique_ptr<TrainerMetrics> metrics;
  if (absl::GetFlag(FLAGS_metrics_port) >= 0) {
    TrainerMetricsOptions metrics_options;
    metrics_options.host = absl::GetFlag(FLAGS_metrics_bind);
    metrics_options.port = absl::GetFlag(FLAGS_metrics_port);
    metrics_options.port_file = absl::GetFlag(FLAGS_metrics_port_file);
    ASSIGN_OR_RETURN(metrics, TrainerMetrics::Serve(metrics_options));
    LOG(INFO) << "trainer metrics on " << metrics_options.host << ":" << metrics->port()
              << "/metrics";
  }
  ASSIGN_OR_RETURN(TrainTest data, LoadDataFromFlags());
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
  ASSIGN_OR_RETURN(options.model, ModelKindFromName(absl::GetFlag(FLAGS_model)));
  options.embedding_shards = absl::GetFlag(FLAGS_num_ps);
  if (absl::GetFlag(FLAGS_sync_replicas)) {
    const int aggregate = absl::GetFlag(FLAGS_replicas_to_aggregate);
    options.replicas_to_aggregate = aggregate > 0 ? aggregate : absl::GetFlag(FLAGS_num_workers);
    options.total_num_replicas = absl::GetFlag(FLAGS_num_workers);
  }
  ASSIGN_OR_RETURN(Classifier model, BuildClassifier(root, options));
  const Scope ops = setter.ForOps(root);
  ops::ScalarSummary(ops.WithOpName("loss_summary"), std::string("loss"), model.loss);
  ops::ScalarSummary(ops.WithOpName("accuracy_summary"), std::string("batch_accuracy"),
                     model.accuracy);
  RETURN_IF_ERROR(root.status());

  std::vector<std::unique_ptr<SessionRunHook>> stops;
  if (absl::GetFlag(FLAGS_last_step) > 0) {
    StopAtStepHookOptions stop_options;
    stop_options.last_step = absl::GetFlag(FLAGS_last_step);
    ASSIGN_OR_RETURN(std::unique_ptr<StopAtStepHook> stop, StopAtStepHook::Create(stop_options));
    stops.push_back(std::move(stop));
  }
  if (!absl::GetFlag(FLAGS_stop_file).empty()) {
    stops.push_back(std::make_unique<StopFileHook>(absl::GetFlag(FLAGS_stop_file)));
  }
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
  training.metrics = metrics.get();
  const int num_workers = absl::GetFlag(FLAGS_num_workers);
  WorkersDoneHook workers_done =
      WorkersDoneHook::Create(root, training.is_chief, num_workers - 1,
                              absl::Seconds(absl::GetFlag(FLAGS_wait_for_workers_seconds)));
  RETURN_IF_ERROR(root.status());
  std::unique_ptr<SessionRunHook> sync_hook;
  if (model.sync_replicas != nullptr) {
    ASSIGN_OR_RETURN(sync_hook, model.sync_replicas->MakeSessionRunHook(training.is_chief));
  }
  training.recovery.max_backoff = absl::Milliseconds(absl::GetFlag(FLAGS_max_backoff_ms));
  training.recovery.max_recovery_time = absl::Seconds(absl::GetFlag(FLAGS_max_recovery_seconds));
  // The final evaluation runs before this trainer says it ended.
  for (const auto& stop : stops) training.hooks.push_back(stop.get());
  training.hooks.insert(training.hooks.end(), {&progress, &final_accuracy});
  // Before WorkersDoneHook: the chief's end releases the non-chiefs waiting for a token.
  if (sync_hook != nullptr) training.hooks.push_back(sync_hook.get());
  training.hooks.push_back(&workers_done);

  // The trainers read different parts of the data.
  const int64_t batch = absl::GetFlag(FLAGS_batch_size);
  int64_t local_step = 0;
  auto next_feeds = [&]() {
    Tensor x, y;
    data.train.Batch((local_step++ * 2 + task) * batch, batch, &x, &y);
    std::vector<FeedPair> feeds = {{model.images, x}, {model.labels, y}};
    if (model.keep_prob.valid())
      feeds.emplace_back(model.keep_prob, Tensor::Scalar(kTrainKeepProb));
    return feeds;
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
  overseer::ApplyProcessSettings();
  // --tls_dir or --cluster_token_file for a secured cluster; the chief's identity may
  // end the job (docs/security.md).
  absl::Status status =
      overseer::InitSecurityFromFlags(absl::GetFlag(FLAGS_is_chief) ? "chief" : "trainer");
  if (status.ok()) status = overseer::examples::Train();
  if (!status.ok()) {
    std::fprintf(stderr, "cluster_trainer: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

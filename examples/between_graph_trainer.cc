// A trainer in the shape of TensorFlow 1.x's classic between-graph replication
// examples: every task runs this program with the same cluster; each starts a Server
// (server/server.h) serving its task. A ps task serves until the chief ends the job;
// a worker task builds the model with its variables placed on the ps tasks and trains
// it through a MonitoredTrainingSession on its own server's target, the chief (task 0)
// initialising or restoring the model and saving checkpoints. Every worker sees only the
// ps tasks and itself (device filters), so the workers need not know each other.
//
//   between_graph_trainer --ps_hosts=h0:2222 --worker_hosts=h1:2222,h2:2222
//       --job_name=worker --task_index=0 [--last_step=N] [--checkpoint_dir=DIR] ...
//
// Workers print step lines and "final accuracy: X" (on the test set) and exit 0 as they
// end (the chief after every non-chief); ps tasks exit 0 once the chief's end tells them
// the job is done. Exits 1 with a message on bad flags or an error.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/graph/device_setter.h"
#include "client/session/client_session.h"
#include "client/training/basic_session_run_hooks.h"
#include "client/training/monitored_training_session.h"
#include "core/clock.h"
#include "core/cluster/cluster_spec.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "core/rpc/server_runner.h"
#include "core/status_macros.h"
#include "examples/classifier.h"
#include "examples/mnist_data.h"
#include "examples/workers_done_hook.h"
#include "server/server.h"

ABSL_FLAG(std::string, ps_hosts, "", "comma-separated host:port of the ps tasks");
ABSL_FLAG(std::string, worker_hosts, "", "comma-separated host:port of the worker tasks");
ABSL_FLAG(std::string, job_name, "", "ps or worker");
ABSL_FLAG(int, task_index, 0, "this task's index in its job");
ABSL_FLAG(bool, any_port, false,
          "bind a free port instead of this task's port in the hosts lists (--port_file "
          "says which): for launchers that start the tasks one by one");
ABSL_FLAG(int64_t, last_step, 1000, "global step at which training ends");
ABSL_FLAG(int64_t, batch_size, 100, "examples per training step");
ABSL_FLAG(std::string, checkpoint_dir, "", "where the chief saves checkpoints (none if empty)");
ABSL_FLAG(int64_t, log_every, 100, "print a step line every this many of this worker's steps");
ABSL_FLAG(std::string, data_dir, overseer::examples::kFashionMnistDir,
          "directory of MNIST-format IDX files (default: Fashion-MNIST)");
ABSL_FLAG(bool, synthetic, false, "train on synthetic data instead (fast, trivially separable)");

namespace overseer {
namespace examples {
namespace {

absl::StatusOr<ClusterSpec> ClusterFromFlags() {
  ClusterSpec cluster;
  for (const auto& [job, hosts] : {std::pair{"ps", absl::GetFlag(FLAGS_ps_hosts)},
                                   std::pair{"worker", absl::GetFlag(FLAGS_worker_hosts)}}) {
    if (hosts.empty())
      return absl::InvalidArgumentError(absl::StrCat("--", job, "_hosts is empty"));
    RETURN_IF_ERROR(cluster.AddJob(job, absl::StrSplit(hosts, ',')));
  }
  return cluster;
}

// Prints a step line every `every` of this worker's steps.
class StepLineHook : public SessionRunHook {
 public:
  StepLineHook(Output global_step, Output loss, int64_t every)
      : global_step_(global_step), loss_(loss), every_(every) {}
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* /*context*/) override {
    SessionRunArgs args;
    args.fetches = {global_step_, loss_};
    return args;
  }
  absl::Status AfterRun(SessionRunContext* /*context*/, const SessionRunValues& values) override {
    if (++runs_ % every_ == 0) {
      std::printf("global step %lld  loss %.4f\n",
                  static_cast<long long>(values.results[0].scalar<int64_t>()),
                  values.results[1].scalar<float>());
      std::fflush(stdout);
    }
    return absl::OkStatus();
  }

 private:
  const Output global_step_, loss_;
  const int64_t every_;
  int64_t runs_ = 0;
};

absl::Status TrainWorker(const Server& server, const ClusterSpec& cluster, int task) {
  DataChoice choice;
  choice.synthetic = absl::GetFlag(FLAGS_synthetic);
  choice.data_dir = absl::GetFlag(FLAGS_data_dir);
  choice.num_train = 4000;  // The synthetic data's size.
  choice.num_test = 1000;
  std::string description;
  ASSIGN_OR_RETURN(TrainTest data, LoadData(choice, &description));
  LOG(INFO) << description;

  ReplicaDeviceSetterOptions setter_options;
  setter_options.num_ps_tasks = cluster.NumTasks("ps");
  setter_options.worker_device = absl::StrCat("/job:worker/task:", task);
  ASSIGN_OR_RETURN(ReplicaDeviceSetter setter, ReplicaDeviceSetter::Create(setter_options));
  Scope root = Scope::NewRootScope();
  ClassifierOptions model_options;
  model_options.num_features = data.train.num_features;
  model_options.device_setter = &setter;
  ASSIGN_OR_RETURN(Classifier model, BuildClassifier(root, model_options));

  const bool is_chief = task == 0;
  StopAtStepHookOptions stop_options;
  stop_options.last_step = absl::GetFlag(FLAGS_last_step);
  ASSIGN_OR_RETURN(std::unique_ptr<StopAtStepHook> stop, StopAtStepHook::Create(stop_options));
  StepLineHook lines(model.global_step.value, model.loss, absl::GetFlag(FLAGS_log_every));
  Tensor test_x, test_y;
  data.test.Batch(0, data.test.num_examples, &test_x, &test_y);
  FinalOpsHookOptions final_options;
  final_options.final_ops = {model.accuracy};
  final_options.final_ops_feed_dict = {{model.images, test_x}, {model.labels, test_y}};
  FinalOpsHook final_accuracy(final_options);
  WorkersDoneHook workers_done =
      WorkersDoneHook::Create(root, is_chief, cluster.NumTasks("worker") - 1, absl::Minutes(10));
  RETURN_IF_ERROR(root.status());

  MonitoredTrainingSessionOptions options;
  options.clock = Clock::Real();
  options.master = server.target();
  options.is_chief = is_chief;
  options.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  options.config.add_device_filters("/job:ps");
  options.config.add_device_filters(absl::StrCat("/job:worker/task:", task));
  options.hooks = {stop.get(), &lines, &final_accuracy, &workers_done};
  ASSIGN_OR_RETURN(std::unique_ptr<MonitoredSession> session,
                   MonitoredTrainingSession(root, options));
  const int64_t batch = absl::GetFlag(FLAGS_batch_size);
  const int num_workers = cluster.NumTasks("worker");
  for (int64_t step = 0; !session->ShouldStop(); ++step) {
    Tensor x, y;
    data.train.Batch((step * num_workers + task) * batch, batch, &x, &y);
    RETURN_IF_ERROR(
        session->Run({{model.images, x}, {model.labels, y}}, {}, {model.train}, nullptr));
  }
  RETURN_IF_ERROR(session->Close());
  if (final_accuracy.final_ops_values().empty()) {
    return absl::InternalError("training ended without the final evaluation");
  }
  std::printf("final accuracy: %.4f\n", final_accuracy.final_ops_values()[0].scalar<float>());
  std::fflush(stdout);
  return absl::OkStatus();
}

absl::Status Run() {
  ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterFromFlags());
  const std::string job = absl::GetFlag(FLAGS_job_name);
  if (job != "ps" && job != "worker") {
    return absl::InvalidArgumentError(
        absl::StrCat("--job_name must be ps or worker, got '", job, "'"));
  }
  if (absl::GetFlag(FLAGS_last_step) < 1 || absl::GetFlag(FLAGS_batch_size) < 1 ||
      absl::GetFlag(FLAGS_log_every) < 1) {
    return absl::InvalidArgumentError("--last_step, --batch_size and --log_every must be positive");
  }
  ServerOptions server_options;
  server_options.cluster = cluster;
  server_options.job_name = job;
  server_options.task_index = absl::GetFlag(FLAGS_task_index);
  // --port (the server runner's flag) overrides the hosts list's port when set.
  server_options.port = absl::GetFlag(FLAGS_any_port)   ? 0
                        : absl::GetFlag(FLAGS_port) > 0 ? absl::GetFlag(FLAGS_port)
                                                        : -1;
  server_options.port_file = absl::GetFlag(FLAGS_port_file);
  ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(server_options));
  if (job == "worker") {
    // A worker ends with its training (its server stops with it), as TensorFlow's.
    return TrainWorker(*server, server->cluster(), server_options.task_index);
  }
  // The chief's clean end tells every task the job is done; then Join returns.
  server->Join();
  LOG(INFO) << "ps:" << server_options.task_index << ": the job is done, exiting 0";
  return absl::OkStatus();
}

}  // namespace
}  // namespace examples
}  // namespace overseer

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "A between-graph replicated trainer in TensorFlow's classic shape: every task starts a\n"
      "Server; ps tasks serve until the job is done, workers train on their own server.\n"
      "Usage: between_graph_trainer --ps_hosts=h:p --worker_hosts=h:p,h:p --job_name=ps|worker\n"
      "       --task_index=N [--last_step=N] [--checkpoint_dir=DIR] [--synthetic] ...");
  absl::ParseCommandLine(argc, argv);
  overseer::ApplyProcessSettings();
  const absl::Status status = overseer::examples::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "between_graph_trainer: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

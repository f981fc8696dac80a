// The worker server: one binary for ps and worker tasks.
//
//   worker_server --job_name=ps --task_index=0
//       --cluster_spec="ps=localhost:2222;worker=localhost:2223,localhost:2224"
//
// Without --cluster_spec the cluster (and, unless --job_name is given, the task) come
// from the TF_CONFIG environment variable, as Kubeflow's TFJob sets it. --port 0 (the
// default) listens on this task's port in the cluster. With neither, --job_name and
// --task_index name the task, it listens on --port (0: a free port, written to
// --port_file), and it learns the cluster from the master with each session: how a
// launcher starts tasks before their ports are known. SIGTERM or SIGINT drains
// in-flight calls and exits 0; so does JobDone (the chief finished training, relayed by
// the master) under --exit_when_job_done.

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "checkpoint_store/location.h"
#include "core/cluster/cluster_spec.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "core/rpc/security.h"
#include "core/rpc/server_runner.h"
#include "core/status_macros.h"
#include "worker/rpc/grpc_worker.h"
#include "worker/rpc/grpc_worker_service.h"
#include "worker/rpc/local_calls.h"
#include "worker/rpc/local_transfer.h"
#include "worker/rpc/tensor_chunks.h"
#include "worker/worker.h"

ABSL_FLAG(std::string, job_name, "",
          "This task's job (\"ps\", \"worker\", \"chief\"); default: TF_CONFIG's task.type");
ABSL_FLAG(int, task_index, -1, "This task's index in its job; default: TF_CONFIG's task.index");
ABSL_FLAG(std::string, cluster_spec, "",
          "The cluster, \"ps=host:port,host:port;worker=host:port\"; default: the TF_CONFIG "
          "environment variable (JSON {cluster: {...}, task: {type, index}})");
ABSL_FLAG(bool, exit_when_job_done, false,
          "When the chief signals that the job is done (JobDone through the master), drain "
          "in-flight calls and exit 0 instead of serving on (a ps otherwise serves forever)");

ABSL_FLAG(std::vector<std::string>, checkpoint_roots, {},
          "Directories (absolute, comma-separated) under which save and restore kernels may "
          "use a local checkpoint location; default none: remote graphs save and restore "
          "only through checkpoint stores (grpc://host:port/run), never this host's files "
          "(docs/security.md)");

ABSL_FLAG(std::string, local_transfer_socket, "auto",
          "Unix socket over which peers on this host fetch large tensors instead of the "
          "RecvTensor stream: \"auto\" (an abstract address unique on the host), \"@name\" "
          "(abstract namespace), a file path, or \"none\"");
ABSL_FLAG(std::string, local_call_socket, "auto",
          "Unix socket over which a master or client on this host sends its RunGraph calls "
          "instead of gRPC, named in every RunGraph reply: \"auto\" (an abstract address "
          "unique on the host), \"@name\", a file path, or \"none\"; off with security on "
          "(docs/security.md)");
ABSL_FLAG(int, recv_wait_for_step_seconds, 60,
          "A RecvTensor that waits this long while no RunGraph of its step came here fails "
          "DEADLINE_EXCEEDED (its master is gone, or the caller is no peer); 0: no bound");

namespace overseer {
namespace {

struct Task {
  ClusterSpec cluster;
  std::string job;
  int index = 0;
};

absl::StatusOr<Task> TaskFromFlags() {
  Task task;
  task.job = absl::GetFlag(FLAGS_job_name);
  task.index = absl::GetFlag(FLAGS_task_index);
  const std::string spec = absl::GetFlag(FLAGS_cluster_spec);
  if (!spec.empty()) {
    ASSIGN_OR_RETURN(task.cluster, ClusterSpec::Parse(spec));
  } else if (const char* tf_config = std::getenv("TF_CONFIG");
             tf_config == nullptr || *tf_config == '\0') {
    // No cluster: the master sends it with each session.
    if (task.job.empty()) {
      return absl::InvalidArgumentError(
          "give --cluster_spec, set TF_CONFIG, or name the task with --job_name (and "
          "--task_index) to learn the cluster from the master");
    }
  } else {
    absl::StatusOr<TfConfig> config = ParseTfConfig(tf_config);
    if (!config.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("TF_CONFIG: ", config.status().message()));
    }
    task.cluster = config->cluster;
    if (task.job.empty()) task.job = config->task_type;
    if (task.index < 0) task.index = config->task_index;
  }
  if (task.job.empty()) {
    return absl::InvalidArgumentError("give --job_name (or a task in TF_CONFIG)");
  }
  if (task.index < 0) task.index = 0;
  if (!task.cluster.jobs().empty() && task.index >= task.cluster.NumTasks(task.job)) {
    return absl::InvalidArgumentError(absl::StrCat("task ", task.job, ":", task.index,
                                                   " is not in the cluster (",
                                                   task.cluster.ToString(), ")"));
  }
  return task;
}

ClusterDef ToProto(const ClusterSpec& spec) {
  ClusterDef def;
  for (const auto& [name, addresses] : spec.jobs()) {
    JobDef* job = def.add_job();
    job->set_name(name);
    for (size_t i = 0; i < addresses.size(); ++i) {
      (*job->mutable_tasks())[static_cast<int>(i)] = addresses[i];
    }
  }
  return def;
}

int Main() {
  absl::StatusOr<Task> task = TaskFromFlags();
  if (!task.ok()) {
    LOG(ERROR) << task.status().message();
    return 2;
  }
  if (absl::GetFlag(FLAGS_recv_wait_for_step_seconds) < 0) {
    LOG(ERROR) << "--recv_wait_for_step_seconds must be >= 0";
    return 2;
  }
  if (const absl::Status security = InitSecurityFromFlags("worker"); !security.ok()) {
    LOG(ERROR) << security.message();
    return 2;
  }
  ServerRunnerOptions runner_options = ServerRunnerOptionsFromFlags("worker");
  runner_options.stream_window_bytes = kWorkerStreamWindowBytes;
  runner_options.bdp_probe = true;
  // When every RecvTensor waited on a server thread for its producer, gRPC's 2 polling
  // threads kept made a ps start and end about eight threads per training step of the
  // replicated example (strace: clone3 and munmap per step), and keeping up to 16
  // raised replicated_training_bench from 88-113 to 121-155 steps/s. RecvTensor now
  // waits without a thread, or on the service's own pool (grpc_worker_service.h); the
  // synchronous control methods still keep up to 16.
  runner_options.max_pollers = kWorkerServerMaxPollers;
  if (runner_options.port == 0 && !task->cluster.jobs().empty()) {
    const std::string address = *task->cluster.TaskAddress(task->job, task->index);
    const std::string port = address.substr(address.rfind(':') + 1);
    if (!absl::SimpleAtoi(port, &runner_options.port)) {
      LOG(ERROR) << "cannot read the port of " << address;
      return 2;
    }
    const std::string host = address.substr(0, address.rfind(':'));
    if (IsLoopbackHost(runner_options.host) && !IsLoopbackHost(host)) {
      LOG(WARNING) << "the cluster names this task " << address << " but it binds "
                   << runner_options.host << ", which other hosts cannot reach: pass "
                   << "--bind=0.0.0.0 --insecure (docs/security.md) for a cluster of hosts";
    }
  }
  ServerRunner runner(runner_options);
  WorkerOptions options;
  options.job_name = task->job;
  options.task_index = task->index;
  options.cluster = ToProto(task->cluster);
  options.recv_wait_for_step = absl::Seconds(absl::GetFlag(FLAGS_recv_wait_for_step_seconds));
  WorkerEnv env;
  const bool exit_when_job_done = absl::GetFlag(FLAGS_exit_when_job_done);
  std::atomic<bool> exiting_for_job_done{false};
  env.on_job_done = [&runner, &exiting_for_job_done, exit_when_job_done](const std::string&) {
    if (!exit_when_job_done) {
      LOG(INFO) << "worker: the job is done; serving on (--exit_when_job_done is off)";
      return;
    }
    LOG(INFO) << "worker: the job is done and --exit_when_job_done is set: draining and "
                 "exiting";
    exiting_for_job_done = true;
    runner.RequestTermination();
  };
  // RunGraph calls arrive on this loop's thread, which runs the quick ones itself; the
  // tensors this worker receives from its peers are read there too.
  CompletionQueueLoop* loop = runner.AddCompletionQueueLoop();
  GrpcWorkerOptions peer_options;
  peer_options.keepalive = KeepaliveFromFlags();
  peer_options.loop = loop;
  env.worker_cache_factory =
      [peer_options](
          const ClusterDef& cluster) -> absl::StatusOr<std::unique_ptr<WorkerCacheInterface>> {
    return std::make_unique<GrpcWorkerCache>(cluster, peer_options);
  };
  Worker worker(options, env);
  std::unique_ptr<LocalTransferServer> local;
  const std::string local_socket = absl::GetFlag(FLAGS_local_transfer_socket);
  if (local_socket != "none") {
    auto started_local = LocalTransferServer::Start(
        local_socket == "auto" ? LocalTransferServer::DefaultAddress() : local_socket);
    if (!started_local.ok()) {
      LOG(ERROR) << "--local_transfer_socket: " << started_local.status();
      return 1;
    }
    local = *std::move(started_local);
  }
  GrpcWorkerService service(&worker, runner.metrics(), loop, kRecvTensorChunkBytes, local.get());
  const std::string call_socket = absl::GetFlag(FLAGS_local_call_socket);
  if (call_socket != "none" && !ProcessSecurity().enabled()) {
    const absl::Status serving = service.ServeLocalCalls(
        call_socket == "auto" ? LocalCallServer::DefaultAddress() : call_socket);
    if (!serving.ok()) {
      LOG(ERROR) << "--local_call_socket: " << serving;
      return 1;
    }
  }
  runner.AddService(&service, WorkerService::service_full_name());
  runner.AddCollectable(service.rpc_metrics());
  const absl::Status started = runner.Start();
  if (!started.ok()) {
    LOG(ERROR) << started.ToString();
    return 1;
  }
  LOG(INFO) << "worker " << worker.task_name() << " incarnation " << std::hex
            << worker.incarnation() << std::dec << " serving on " << runner.address();
  runner.SetServing(true);
  runner.WaitForTermination();
  LOG(INFO) << "worker " << worker.task_name() << ": drained, exiting 0"
            << (exiting_for_job_done ? " (the job is done and --exit_when_job_done is set)" : "");
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Overseer worker server (ps and worker tasks).\n"
      "  worker_server --job_name=ps --task_index=0 "
      "--cluster_spec='ps=h:2222;worker=h:2223' [--port=N] [--metrics_port=N]\n"
      "Without --cluster_spec, TF_CONFIG gives the cluster and task. --port=0 (the default)\n"
      "listens on this task's port in the cluster. With neither, the task (--job_name,\n"
      "--task_index) listens on --port (0: a free one; see --port_file) and learns the\n"
      "cluster from the master with each session. --exit_when_job_done: exit 0 once the\n"
      "chief signals the end of the job (else serve on).");
  // --help lists this binary's flags, the server runner's (--port, --metrics_port) and
  // the process settings' (--tune_malloc, ...).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "worker/worker_main") ||
           absl::StrContains(file, "core/rpc/server_runner") ||
           absl::StrContains(file, "core/process_settings");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  overseer::ApplyProcessSettings();
  const absl::Status roots =
      overseer::RestrictLocalCheckpointLocations(absl::GetFlag(FLAGS_checkpoint_roots));
  if (!roots.ok()) {
    LOG(ERROR) << "--checkpoint_roots: " << roots.message();
    return 2;
  }
  return overseer::Main();
}

// The master server: clients (GrpcSession) create sessions and run steps here; the
// master places and partitions each graph over the cluster's tasks and drives their
// worker_servers.
//
//   master_server --cluster_spec="ps=h:p,h:p;worker=h:p" --port=2222 --metrics_port=0
//   TF_CONFIG='{"cluster": {"ps": [...], "worker": [...]}}' master_server --port=2222
//
// SIGTERM or SIGINT drains in-flight calls, closes every session and exits 0.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/clock.h"
#include "core/cluster/cluster_def.h"
#include "core/cluster/cluster_spec.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "core/rpc/security.h"
#include "core/rpc/server_runner.h"
#include "master/cluster_worker_cache.h"
#include "master/master.h"
#include "master/rpc/grpc_master_service.h"
#include "master/rpc/readiness_metrics.h"
#include "master/rpc/session_metrics.h"
#include "worker/rpc/grpc_worker.h"

ABSL_FLAG(std::string, cluster_spec, "",
          "The cluster's tasks, \"job=host:port,host:port;job=host:port\" (e.g. "
          "\"ps=h1:2222,h2:2222;worker=h3:2222\"). When empty, the \"cluster\" of the "
          "TF_CONFIG environment variable is used.");
ABSL_FLAG(int, session_gc_seconds, 3600,
          "Close sessions that made no call and ran no step for this many seconds (a "
          "client that died never closes its own); 0 keeps them until CloseSession or "
          "Reset.");
ABSL_FLAG(int, create_session_wait_seconds, 60,
          "How long CreateSession waits for the tasks to answer when the request sets "
          "no operation timeout.");
ABSL_FLAG(int, max_graph_mib, 256,
          "The largest graph a session may hold (CreateSession's, then with every "
          "ExtendSession's nodes), in MiB; beyond, RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, max_sessions, 10000,
          "CreateSession fails RESOURCE_EXHAUSTED while this many sessions are open.");
ABSL_FLAG(int, readiness_check_ms, 500,
          "How often the master asks every task for its incarnation while models are "
          "marked ready (a restarted or dead task withdraws the mark).");
ABSL_FLAG(int, max_ready_wait_seconds, 60,
          "The longest one WaitForReady call blocks, whatever timeout it asks for.");

namespace overseer {
namespace {

constexpr char kUsage[] =
    "The Overseer master: serves MasterService (CreateSession, ExtendSession, RunStep, "
    "PartialRunSetup, CloseSession, ListDevices, Reset, "
    "MakeCallable/RunCallable/ReleaseCallable, "
    "MarkReady/WithdrawReady/WaitForReady, JobDone) over the cluster given by "
    "--cluster_spec or TF_CONFIG.\n"
    "  --port=N          gRPC port (0 picks a free one; the start-up line says which)\n"
    "  --metrics_port=N  Prometheus metrics port (0 picks a free one, -1 none)\n"
    "  --cluster_spec=S  the cluster, \"ps=h:p,h:p;worker=h:p\" (else TF_CONFIG)\n"
    "  --session_gc_seconds=N  close sessions idle for N seconds (0: never)\n"
    "  --create_session_wait_seconds=N  how long CreateSession waits for the tasks\n"
    "  --max_graph_mib=N  the largest graph of a session; --max_sessions=N  open sessions\n"
    "  --readiness_check_ms=N  how often marked-ready models' tasks are checked\n"
    "  --max_ready_wait_seconds=N  the cap on one WaitForReady\n"
    "Example: master_server --cluster_spec=\"ps=localhost:2223;worker=localhost:2224\" "
    "--port=2222";

absl::StatusOr<ClusterSpec> ClusterFromFlagsOrEnv() {
  const std::string spec = absl::GetFlag(FLAGS_cluster_spec);
  if (!spec.empty()) return ClusterSpec::Parse(spec);
  const char* tf_config = std::getenv("TF_CONFIG");
  if (tf_config == nullptr || *tf_config == '\0') {
    return absl::InvalidArgumentError(
        "no cluster: pass --cluster_spec=\"ps=h:p;worker=h:p\" or set TF_CONFIG");
  }
  absl::StatusOr<TfConfig> config = ParseTfConfig(tf_config);
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("TF_CONFIG: ", config.status().message()));
  }
  return config->cluster;
}

int Main() {
  absl::StatusOr<ClusterSpec> cluster = ClusterFromFlagsOrEnv();
  if (!cluster.ok()) {
    LOG(ERROR) << cluster.status().ToString();
    return 2;
  }
  if (absl::GetFlag(FLAGS_session_gc_seconds) < 0 ||
      absl::GetFlag(FLAGS_create_session_wait_seconds) < 1) {
    LOG(ERROR) << "--session_gc_seconds must be >= 0 and --create_session_wait_seconds >= 1";
    return 2;
  }
  if (absl::GetFlag(FLAGS_readiness_check_ms) < 1 ||
      absl::GetFlag(FLAGS_max_ready_wait_seconds) < 1) {
    LOG(ERROR) << "--readiness_check_ms and --max_ready_wait_seconds must be >= 1";
    return 2;
  }

  if (const absl::Status security = InitSecurityFromFlags("master"); !security.ok()) {
    LOG(ERROR) << security.message();
    return 2;
  }
  ServerRunner runner(ServerRunnerOptionsFromFlags("master"));
  // Steps arrive on this loop's thread, and their RunGraph calls go out and come back on
  // it: a step continues on the thread that reads its last reply.
  CompletionQueueLoop* step_loop = runner.AddCompletionQueueLoop();
  GrpcWorkerOptions worker_options;
  worker_options.keepalive = KeepaliveFromFlags();
  worker_options.loop = step_loop;
  ClusterWorkerCache workers(
      *cluster, std::make_unique<GrpcWorkerCache>(ToClusterDef(*cluster), worker_options));
  // Readiness checks and JobDone must not wait long for a task that does not answer.
  GrpcWorkerOptions probe_options;
  probe_options.keepalive = worker_options.keepalive;
  probe_options.rpc_timeout = absl::Seconds(2);
  ClusterWorkerCache probe_workers(
      *cluster, std::make_unique<GrpcWorkerCache>(ToClusterDef(*cluster), probe_options));
  MasterOptions options;
  options.session_gc_idle = absl::Seconds(absl::GetFlag(FLAGS_session_gc_seconds));
  options.create_session_wait = absl::Seconds(absl::GetFlag(FLAGS_create_session_wait_seconds));
  options.max_graph_bytes = int64_t{std::max(1, absl::GetFlag(FLAGS_max_graph_mib))} << 20;
  options.max_sessions = std::max(1, absl::GetFlag(FLAGS_max_sessions));
  options.readiness.check_period = absl::Milliseconds(absl::GetFlag(FLAGS_readiness_check_ms));
  options.readiness.max_wait = absl::Seconds(absl::GetFlag(FLAGS_max_ready_wait_seconds));
  ReadinessMetrics readiness_metrics(runner.metrics());
  SessionMetrics session_metrics(runner.metrics());
  MasterEnv env;
  env.workers = &workers;
  env.clock = Clock::Real();
  env.probe_workers = &probe_workers;
  env.readiness_listener = &readiness_metrics;
  env.session_listener = &session_metrics;
  {
    Master master(env, options);
    GrpcMasterService service(&master, runner.metrics(), step_loop);
    runner.AddService(&service, MasterService::service_full_name());
    runner.AddCollectable(service.rpc_metrics());
    // Long polls answer at once (not ready) so that they do not hold the drain up.
    runner.AddTerminationCallback([&master] { master.StopReadinessWaits(); });
    const absl::Status started = runner.Start();
    if (!started.ok()) {
      LOG(ERROR) << started.ToString();
      return 1;
    }
    LOG(INFO) << "master: cluster " << cluster->ToString();
    runner.SetServing(true);
    runner.WaitForTermination();
  }  // ~Master closes every session.
  LOG(INFO) << "master: drained and every session closed";
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(overseer::kUsage);
  // --help lists this binary's flags, the server runner's (--port, --metrics_port) and
  // the process settings' (--tune_malloc, ...).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "master/master_main") ||
           absl::StrContains(file, "core/rpc/server_runner") ||
           absl::StrContains(file, "core/process_settings");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  overseer::ApplyProcessSettings();
  return overseer::Main();
}

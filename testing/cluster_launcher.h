#ifndef OVERSEER_TESTING_CLUSTER_LAUNCHER_H_
#define OVERSEER_TESTING_CLUSTER_LAUNCHER_H_

// A whole Overseer cluster as processes on loopback, the way an orchestrator would run
// it on one machine: worker_server processes for the ps and worker tasks, a
// master_server, and optionally a checkpoint_store_server and a summary_writer_server.
// Each server binds port 0 itself and writes the port it got to a port file
// (--port_file), which the launcher reads: no port is picked for a server that another
// process could take first. The ps and worker tasks start without a cluster spec and
// learn the cluster from the master, which starts once their ports are known. Start
// returns once every server's gRPC health service says SERVING (or fails with the
// server's log). Any server can be stopped with a signal (SIGKILL: a crash) and
// restarted on the same port (retrying the bind while the port is briefly held), as an
// orchestrator restarts a failed pod. Used by the multi-process tests (through
// LocalCluster), the benchmarks and the cluster demo. Not thread-safe.
//
// Servers are named by job and index: "ps"/"worker" tasks of the cluster spec, and
// "master", "store" and "writer" with index 0.
//
//   ClusterLauncherOptions options;
//   options.num_ps = 2;
//   options.num_workers = 2;
//   options.checkpoint_store = options.summary_writer = true;
//   options.log_dir = "/tmp/run";
//   ASSIGN_OR_RETURN(auto cluster, ClusterLauncher::Start(options));
//   ... cluster->master_target() ...
//   cluster->Stop("ps", 1, SIGKILL);
//   cluster->Restart("ps", 1);

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/cluster/cluster_spec.h"
#include "testing/child_process.h"

namespace overseer {

struct ClusterLauncherOptions {
  int num_ps = 1;
  int num_workers = 1;
  // Also run a checkpoint_store_server (--root=checkpoint_root) as "store".
  bool checkpoint_store = false;
  // Also run a summary_writer_server (--logdir=summary_logdir) as "writer".
  bool summary_writer = false;
  // Empty: <log_dir>/checkpoints and <log_dir>/logdir (created if missing).
  std::string checkpoint_root;
  std::string summary_logdir;
  // Directory of the servers' logs (<job>_<index>.log, the stderr of each) and port
  // files (<job>_<index>.port); created if missing. Empty: $TEST_TMPDIR, or /tmp.
  std::string log_dir;
  // Where the server binaries are (e.g. bazel-bin); empty: the running program's
  // runfiles (list the servers as data of its target). See FindBinary.
  std::string bin_dir;
  // How long Start and Restart wait for a server to become SERVING.
  absl::Duration start_timeout = absl::Seconds(60);
  // Extra flags for master_server (e.g. "--session_gc_seconds=5").
  std::vector<std::string> master_flags;
  // Extra flags for every worker_server, ps and worker (e.g. "--exit_when_job_done").
  std::vector<std::string> worker_flags;
  std::vector<std::string> store_flags;
  std::vector<std::string> writer_flags;
  // Serve the master's Prometheus metrics on a free port (master_metrics_port()); off:
  // --metrics_port=-1.
  bool master_metrics = false;
  // Serve every server's metrics on a free port (metrics_port(job, index)).
  bool metrics = false;
};

class ClusterLauncher {
 public:
  // Starts every server and waits until each is SERVING. Errors: NOT_FOUND for a
  // missing binary; INTERNAL naming a server that exited before serving, with its
  // log; DEADLINE_EXCEEDED naming one that wrote no port file or was not SERVING
  // after start_timeout. On error the servers already started are killed.
  static absl::StatusOr<std::unique_ptr<ClusterLauncher>> Start(ClusterLauncherOptions options);
  // SIGKILLs every server still running.
  ~ClusterLauncher() = default;
  ClusterLauncher(const ClusterLauncher&) = delete;
  ClusterLauncher& operator=(const ClusterLauncher&) = delete;

  // "grpc://127.0.0.1:<master port>", for SessionOptions::target.
  std::string master_target() const;
  // "grpc://127.0.0.1:<port>" of the checkpoint store and the summary writer, to
  // which a run name is appended ("grpc://127.0.0.1:1234/run1"); empty without them.
  std::string store_target() const;
  std::string writer_target() const;
  // "127.0.0.1:<port>" of server job:index; empty for an unknown one.
  std::string address(const std::string& job, int index) const;
  const ClusterSpec& cluster() const { return cluster_; }
  const ClusterLauncherOptions& options() const { return options_; }
  // The port of the master's /metrics on 127.0.0.1; -1 without master_metrics.
  int master_metrics_port() const { return master_metrics_port_; }
  // The port of server job:index's /metrics on 127.0.0.1 (since its latest start); -1
  // if it serves none or is unknown.
  int metrics_port(const std::string& job, int index) const;

  // Sends `signal` to server job:index and waits for its exit; returns its exit code
  // (-1 if killed by a signal). NOT_FOUND for an unknown or stopped server;
  // DEADLINE_EXCEEDED if it has not exited after `timeout` (it is left running).
  absl::StatusOr<int> Stop(const std::string& job, int index, int signal,
                           absl::Duration timeout = absl::Seconds(60));

  // Starts server job:index again (a new incarnation) on its port and waits for
  // SERVING. The server retries binding the port for up to 30 s if another process
  // holds it. FAILED_PRECONDITION if it is running; errors as Start.
  absl::Status Restart(const std::string& job, int index);

  // Waits up to `timeout` for server job:index to exit by itself; its exit code (-1 if
  // killed by a signal), also when it had exited already. DEADLINE_EXCEEDED if it
  // still runs (it is left running); NOT_FOUND for an unknown server or one never
  // started.
  absl::StatusOr<int> WaitForExit(const std::string& job, int index, absl::Duration timeout);

  // Whether server job:index is running (started and not exited).
  bool IsRunning(const std::string& job, int index);
  // Its process id while it runs, else -1.
  pid_t pid(const std::string& job, int index) const;
  // Its log so far (its stderr) and the log file's path.
  std::string Log(const std::string& job, int index) const;
  std::string log_path(const std::string& job, int index) const;
  // Every server as (job, index), ps and workers first, then the master, store, writer.
  std::vector<std::pair<std::string, int>> servers() const;

 private:
  struct Server {
    // The program and its flags but --port.
    std::vector<std::string> flags;
    std::string log_path;
    std::string port_file;
    // 0 until the server first reported its port; then the port it keeps.
    int port = 0;
    // Its metrics port since its latest start, -1 without one.
    int metrics_port = -1;
    std::string address;
    // The current run; null before the first start.
    std::unique_ptr<ChildProcess> process;
  };

  explicit ClusterLauncher(ClusterLauncherOptions options) : options_(std::move(options)) {}
  absl::Status Add(const std::string& job, int index, const std::string& binary,
                   std::vector<std::string> flags);
  // Starts the server's process: on port 0 the first time, on its port after that.
  absl::Status StartServer(const std::string& job, int index);
  // Waits for the port file of the server's current run and notes its ports.
  absl::Status ReadPorts(const std::string& job, int index);
  absl::Status WaitServing(const std::string& job, int index);
  Server* Find(const std::string& job, int index);
  const Server* Find(const std::string& job, int index) const;

  ClusterLauncherOptions options_;
  ClusterSpec cluster_;
  int master_metrics_port_ = -1;
  // Keyed by "job:index".
  std::map<std::string, Server> servers_;
  std::vector<std::pair<std::string, int>> order_;
};

}  // namespace overseer

#endif  // OVERSEER_TESTING_CLUSTER_LAUNCHER_H_

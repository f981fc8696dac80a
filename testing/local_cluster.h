#ifndef OVERSEER_TESTING_LOCAL_CLUSTER_H_
#define OVERSEER_TESTING_LOCAL_CLUSTER_H_

// A real cluster on loopback for multi-process tests: worker_server processes for the
// ps and worker tasks and a master_server, each on a free port, started from the
// test's runfiles (list //master:master_server and //worker:worker_server as data).
// Start returns once every server's gRPC health service says SERVING (or fails with
// the server's log). Tasks can be killed (SIGKILL or SIGTERM) and restarted on the
// same port. Servers log to files under TEST_TMPDIR. A test-facing view of
// ClusterLauncher (testing/cluster_launcher.h), which also runs a checkpoint store and
// a summary writer. Not thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/cluster/cluster_spec.h"
#include "testing/cluster_launcher.h"

namespace overseer {
namespace test {

struct LocalClusterOptions {
  int num_ps = 1;
  int num_workers = 1;
  // How long Start and Restart wait for a server to become SERVING.
  absl::Duration start_timeout = absl::Seconds(60);
  // Extra flags for master_server (e.g. "--session_gc_seconds=5").
  std::vector<std::string> master_flags;
  // Extra flags for every worker_server (e.g. "--exit_when_job_done").
  std::vector<std::string> worker_flags;
  // Serve the master's Prometheus metrics on a free port (master_metrics_port());
  // off: --metrics_port=-1.
  bool master_metrics = false;
};

class LocalCluster {
 public:
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(LocalClusterOptions options);
  // SIGKILLs every server still running.
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // "grpc://127.0.0.1:<master port>", for SessionOptions::target.
  std::string master_target() const;
  // "127.0.0.1:<master port>", the address a GrpcMaster channel dials directly.
  std::string master_address() const { return launcher_->address("master", 0); }
  const ClusterSpec& cluster() const { return launcher_->cluster(); }

  // Sends `signal` to task job:index and waits for it to exit; returns its exit code
  // (-1 if killed by a signal). NOT_FOUND for an unknown or stopped task.
  absl::StatusOr<int> Stop(const std::string& job, int index, int signal);

  // Starts the task again (a new incarnation) on its port and waits for SERVING.
  // FAILED_PRECONDITION if it is running.
  absl::Status Restart(const std::string& job, int index);

  // The task's log so far (its stderr).
  std::string Log(const std::string& job, int index) const;

  // Waits up to `timeout` for task job:index to exit by itself; returns its exit code
  // (-1 if killed by a signal), also when it had exited already. DEADLINE_EXCEEDED if
  // it still runs (it is left running); NOT_FOUND for an unknown task.
  absl::StatusOr<int> WaitForExit(const std::string& job, int index, absl::Duration timeout);

  // Whether task job:index is running (started and not exited).
  bool IsRunning(const std::string& job, int index);
  // Its process id while it runs, else -1 (to send it a signal without waiting, e.g.
  // SIGSTOP to freeze it).
  pid_t pid(const std::string& job, int index) const { return launcher_->pid(job, index); }

  // The port of the master's /metrics on 127.0.0.1; -1 without master_metrics.
  int master_metrics_port() const { return launcher_->master_metrics_port(); }

 private:
  explicit LocalCluster(std::unique_ptr<ClusterLauncher> launcher)
      : launcher_(std::move(launcher)) {}

  const std::unique_ptr<ClusterLauncher> launcher_;
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_TESTING_LOCAL_CLUSTER_H_

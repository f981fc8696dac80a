#include "testing/local_cluster.h"

namespace overseer {
namespace test {

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(LocalClusterOptions options) {
  ClusterLauncherOptions launcher;
  launcher.num_ps = options.num_ps;
  launcher.num_workers = options.num_workers;
  launcher.start_timeout = options.start_timeout;
  launcher.master_flags = std::move(options.master_flags);
  launcher.worker_flags = std::move(options.worker_flags);
  launcher.master_metrics = options.master_metrics;
  // Logs under TEST_TMPDIR, binaries from the test's runfiles (the launcher's defaults).
  absl::StatusOr<std::unique_ptr<ClusterLauncher>> started = ClusterLauncher::Start(launcher);
  if (!started.ok()) return started.status();
  return std::unique_ptr<LocalCluster>(new LocalCluster(*std::move(started)));
}

LocalCluster::~LocalCluster() = default;

std::string LocalCluster::master_target() const { return launcher_->master_target(); }

absl::StatusOr<int> LocalCluster::Stop(const std::string& job, int index, int signal) {
  return launcher_->Stop(job, index, signal);
}

absl::Status LocalCluster::Restart(const std::string& job, int index) {
  return launcher_->Restart(job, index);
}

std::string LocalCluster::Log(const std::string& job, int index) const {
  return launcher_->Log(job, index);
}

absl::StatusOr<int> LocalCluster::WaitForExit(const std::string& job, int index,
                                              absl::Duration timeout) {
  return launcher_->WaitForExit(job, index, timeout);
}

bool LocalCluster::IsRunning(const std::string& job, int index) {
  return launcher_->IsRunning(job, index);
}

}  // namespace test
}  // namespace overseer

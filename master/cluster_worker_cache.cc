#include "master/cluster_worker_cache.h"

#include <algorithm>
#include <utility>

#include "core/cluster/cluster_def.h"

namespace overseer {
namespace {

std::vector<std::string> TaskNames(const ClusterSpec& cluster) {
  std::vector<std::string> names;
  for (const TaskId& task : cluster.Tasks()) names.push_back(task.Name());
  return names;
}

}  // namespace

ClusterWorkerCache::ClusterWorkerCache(ClusterSpec cluster,
                                       std::unique_ptr<WorkerCacheInterface> workers)
    : cluster_(std::move(cluster)),
      cluster_def_(ToClusterDef(cluster_)),
      tasks_(TaskNames(cluster_)),
      workers_(std::move(workers)) {}

std::vector<std::string> ClusterWorkerCache::ListTasks() const { return tasks_; }

WorkerInterface* ClusterWorkerCache::GetWorker(const std::string& task) {
  if (std::find(tasks_.begin(), tasks_.end(), task) == tasks_.end()) return nullptr;
  absl::MutexLock lock(&mu_);
  auto it = resolved_.find(task);
  if (it != resolved_.end()) return it->second.get();
  absl::StatusOr<std::shared_ptr<WorkerInterface>> worker = workers_->GetWorker(task);
  if (!worker.ok() || *worker == nullptr) return nullptr;
  WorkerInterface* raw = worker->get();
  resolved_.emplace(task, *std::move(worker));
  return raw;
}

}  // namespace overseer

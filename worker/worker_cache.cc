#include "worker/worker_cache.h"

#include "absl/strings/str_cat.h"

namespace overseer {

void LocalWorkerCache::Add(const std::string& task, WorkerInterface* worker) {
  absl::MutexLock lock(&mu_);
  workers_[task] = worker;
}

absl::StatusOr<std::shared_ptr<WorkerInterface>> LocalWorkerCache::GetWorker(
    const std::string& task) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(task);
  if (it == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("no worker for task ", task, " in the cluster"));
  }
  // Not owned: the deleter does nothing.
  return std::shared_ptr<WorkerInterface>(it->second, [](WorkerInterface*) {});
}

}  // namespace overseer

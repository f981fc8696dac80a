#ifndef OVERSEER_WORKER_WORKER_CACHE_H_
#define OVERSEER_WORKER_WORKER_CACHE_H_

// How a worker (or the master) reaches the other tasks of a cluster by task name
// ("/job:ps/replica:0/task:1"). GrpcWorkerCache (worker/rpc/grpc_worker_cache.h) dials
// the addresses of a ClusterDef; LocalWorkerCache (below) hands out workers of the same
// process, for embedded use and tests.

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/cluster.pb.h"
#include "worker/worker_interface.h"

namespace overseer {

// Thread-safe.
class WorkerCacheInterface {
 public:
  virtual ~WorkerCacheInterface() = default;

  // The worker of `task`. NOT_FOUND naming the task if the cluster has no such task.
  // The returned worker may be shared with other callers.
  virtual absl::StatusOr<std::shared_ptr<WorkerInterface>> GetWorker(const std::string& task) = 0;
};

// Builds the cache of a worker session from the cluster given to CreateWorkerSession.
using WorkerCacheFactory =
    std::function<absl::StatusOr<std::unique_ptr<WorkerCacheInterface>>(const ClusterDef&)>;

// Workers registered by task name. Thread-safe.
class LocalWorkerCache : public WorkerCacheInterface {
 public:
  LocalWorkerCache() = default;

  // Makes `worker` (not owned; must outlive every use) the worker of `task`.
  void Add(const std::string& task, WorkerInterface* worker);

  absl::StatusOr<std::shared_ptr<WorkerInterface>> GetWorker(const std::string& task) override;

 private:
  absl::Mutex mu_;
  std::map<std::string, WorkerInterface*> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_WORKER_WORKER_CACHE_H_

#ifndef OVERSEER_MASTER_WORKER_CACHE_H_
#define OVERSEER_MASTER_WORKER_CACHE_H_

// (Named apart from worker/worker_cache.h's WorkerCacheInterface, which workers use.)
// How the master reaches the tasks of its cluster: by task name
// ("/job:ps/replica:0/task:0"). Implementations: GrpcWorkerCache (master/rpc/) and,
// in tests, a map of in-process workers.

#include <string>
#include <vector>

#include "proto/cluster.pb.h"
#include "worker/worker_interface.h"

namespace overseer {

// Thread-safe.
class MasterWorkerCacheInterface {
 public:
  virtual ~MasterWorkerCacheInterface() = default;

  // Every task of the cluster, in job-name then index order.
  virtual std::vector<std::string> ListTasks() const = 0;

  // The worker of `task` (owned by the cache, valid as long as it), or nullptr for a
  // task not in the cluster.
  virtual WorkerInterface* GetWorker(const std::string& task) = 0;

  // The cluster, for CreateWorkerSessionRequest.cluster.
  virtual ClusterDef cluster_def() const = 0;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_WORKER_CACHE_H_

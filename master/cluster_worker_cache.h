#ifndef OVERSEER_MASTER_CLUSTER_WORKER_CACHE_H_
#define OVERSEER_MASTER_CLUSTER_WORKER_CACHE_H_

// The master's view of a cluster (MasterWorkerCacheInterface) built from a ClusterSpec
// and a worker cache (worker/worker_cache.h) that reaches its tasks: GrpcWorkerCache in
// master_server, LocalWorkerCache for in-process clusters.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/cluster/cluster_spec.h"
#include "master/worker_cache.h"
#include "worker/worker_cache.h"

namespace overseer {

// Thread-safe.
class ClusterWorkerCache : public MasterWorkerCacheInterface {
 public:
  // `workers` reaches every task of `cluster` by task name ("/job:ps/replica:0/task:0").
  ClusterWorkerCache(ClusterSpec cluster, std::unique_ptr<WorkerCacheInterface> workers);

  // Every task of the cluster, in job-name then index order.
  std::vector<std::string> ListTasks() const override;
  // The worker of `task`, or nullptr for a task not in the cluster or one `workers`
  // cannot provide. Valid as long as this cache.
  WorkerInterface* GetWorker(const std::string& task) override;
  ClusterDef cluster_def() const override { return cluster_def_; }

 private:
  const ClusterSpec cluster_;
  const ClusterDef cluster_def_;
  const std::vector<std::string> tasks_;
  const std::unique_ptr<WorkerCacheInterface> workers_;
  absl::Mutex mu_;
  // Keeps the shared workers alive for the raw pointers handed out.
  std::map<std::string, std::shared_ptr<WorkerInterface>> resolved_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_CLUSTER_WORKER_CACHE_H_

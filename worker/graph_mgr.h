#ifndef OVERSEER_WORKER_GRAPH_MGR_H_
#define OVERSEER_WORKER_GRAPH_MGR_H_

// The graphs registered in one worker session: each partition is validated once and
// gets its own executor (and kernel cache), reused by every RunGraph of the handle.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/executor/executor.h"
#include "core/executor/kernel_cache.h"
#include "core/executor/thread_pool.h"
#include "proto/graph.pb.h"

namespace overseer {

// A registered partition. The kernel cache outlives the executor that uses it.
struct RegisteredGraph {
  KernelCache kernels;
  std::unique_ptr<Executor> executor;
  // How long its runs take: an exponential average of the executor's recent run times,
  // in microseconds; -1 before the first run.
  std::atomic<int64_t> recent_run_us{-1};
  void RecordRun(absl::Duration took);
};

// Thread-safe.
class GraphMgr {
 public:
  // `local_task` ("/job:J/replica:0/task:I") and `incarnation` are those of this
  // worker; the graphs' nodes run on `pool` (not owned; must outlive the GraphMgr).
  GraphMgr(std::string local_task, uint64_t incarnation, ThreadPool* pool);
  GraphMgr(const GraphMgr&) = delete;
  GraphMgr& operator=(const GraphMgr&) = delete;

  // Validates `def` and builds its executor (every node runs in each step). Returns
  // the graph handle. INVALID_ARGUMENT naming the node for a malformed graph, an
  // unknown op, bad attrs, a node without a kernel, or a node placed on another task;
  // ABORTED naming this task for a _Send/_Recv whose key names another incarnation of
  // it (the partition was built before this worker restarted).
  absl::StatusOr<std::string> Register(GraphDef def);

  // NOT_FOUND naming the handle if it is not registered.
  absl::StatusOr<std::shared_ptr<RegisteredGraph>> Lookup(const std::string& handle) const;
  absl::Status Deregister(const std::string& handle);
  int num_graphs() const;

 private:
  absl::Status CheckPlacement(const GraphDef& def) const;

  const std::string local_task_;
  const uint64_t incarnation_;
  ThreadPool* const pool_;
  mutable absl::Mutex mu_;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, std::shared_ptr<RegisteredGraph>> graphs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_WORKER_GRAPH_MGR_H_

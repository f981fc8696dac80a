#ifndef OVERSEER_CLIENT_SESSION_DIRECT_SESSION_H_
#define OVERSEER_CLIENT_SESSION_DIRECT_SESSION_H_

// DirectSession: the in-process Session (target ""). Each distinct (feeds, fetches,
// targets) signature is pruned and given an executor once; later Runs of the same
// signature only check the feeds and run the cached executor. Kernels are shared by
// every executor of the session (one per node), so stateful kernels keep their state.
// Variables and queues live in SessionOptions::resource_mgr (default
// ResourceMgr::Default()) and outlive the session; with ConfigProto's
// isolate_session_state (and no resource_mgr given) the session has its own, which
// goes with it. log_device_placement logs each node of a signature when it is built.
//
// NewSession with target "" returns one when this library is linked.

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "client/session/session.h"
#include "core/clock.h"
#include "core/executor/executor.h"
#include "core/executor/kernel_cache.h"
#include "core/executor/partial_run.h"
#include "core/executor/step_timer.h"
#include "core/executor/thread_pool.h"
#include "core/graph/feed_check.h"
#include "core/graph/update_gate.h"
#include "core/graph/validate.h"

namespace overseer {

// Thread-safe, as Session requires.
class DirectSession : public Session {
 public:
  explicit DirectSession(const SessionOptions& options);
  ~DirectSession() override;

  // See Session. Extend on a session without a graph acts as Create; a node name that
  // already exists is INVALID_ARGUMENT naming it.
  absl::Status Create(const GraphDef& graph) override;
  absl::Status Extend(const GraphDef& graph) override;
  using Session::Run;
  // See Session. Also: a feed whose dtype differs from its tensor's, or whose shape
  // does not fit a Placeholder's declared shape, is INVALID_ARGUMENT naming the feed;
  // a fetch, feed or target not in the graph is INVALID_ARGUMENT naming it; the step
  // timeout is options.timeout_in_ms, else ConfigProto.operation_timeout_in_ms; with
  // options.trace_level != NO_TRACE, metadata->step_stats gets one entry per node run.
  // FAILED_PRECONDITION before Create and after Close.
  absl::Status Run(const RunOptions& options,
                   const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override;
  // See Session. A callable shares the executor of its signature with Run.
  absl::StatusOr<CallableHandle> MakeCallable(const CallableOptions& options) override;
  absl::Status RunCallable(CallableHandle handle, const std::vector<Tensor>& feeds,
                           std::vector<Tensor>* fetches, RunMetadata* metadata) override;
  absl::Status ReleaseCallable(CallableHandle handle) override;
  // See Session. A partial run's step runs on a thread of its own until its last
  // PartialRun; its _Recv and _Send kernels stay in the session's kernel cache.
  absl::StatusOr<std::string> PartialRunSetup(const std::vector<std::string>& feeds,
                                              const std::vector<std::string>& fetches,
                                              const std::vector<std::string>& targets) override;
  absl::Status PartialRun(const std::string& handle,
                          const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches,
                          std::vector<Tensor>* outputs) override;
  absl::Status Close() override;
  // See Session: one device, this process's CPU.
  absl::StatusOr<std::vector<DeviceAttributes>> ListDevices() override;
  // See Session: clears containers of SessionOptions::resource_mgr (shared with every
  // session given the same one, by default the process's) and closes this session;
  // other sessions stay open.
  absl::Status Reset(const std::vector<std::string>& containers) override;

  // The pool that runs the session's nodes, and the threads of its kernels' Eigen
  // device (for tests).
  const ThreadPool* inter_op_pool() const { return pool_; }
  int intra_op_threads() const;
  // Signatures with a cached executor (for tests).
  int NumCachedExecutors() const;

 private:
  // What one signature needs at Run time.
  struct Signature {
    std::vector<FeedCheck> feeds;
    std::unique_ptr<Executor> executor;
    // How its steps pass the update gate (core/graph/update_gate.h).
    GatePass gate;
  };

  struct Callable {
    std::shared_ptr<const Signature> signature;
    RunOptions run_options;
    int num_fetches = 0;
  };

  // The cached signature under `key` (see SignatureKey), built on a miss from the
  // names `feeds` gives.
  absl::StatusOr<std::shared_ptr<const Signature>> GetSignature(
      const std::string& key, const std::function<std::vector<std::string>()>& feeds,
      const std::vector<std::string>& fetches, const std::vector<std::string>& targets);
  absl::StatusOr<std::shared_ptr<const Signature>> BuildSignature(
      const ValidatedGraph& graph, const std::vector<std::string>& feeds,
      const std::vector<std::string>& fetches, const std::vector<std::string>& targets);
  // Checks the feeds and runs the signature's executor.
  absl::Status RunSignature(const Signature& sig, absl::Span<const Tensor* const> feeds,
                            const RunOptions& options, std::vector<Tensor>* outputs,
                            RunMetadata* metadata);
  absl::Status SetGraph(GraphDef graph) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK if steps may run: the session is open and has a graph with a node.
  absl::Status Runnable() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // What every step's executor gets (a new step id); a timeout of 0 or less means
  // ConfigProto.operation_timeout_in_ms.
  ExecutorRunArgs NewRunArgs(int64_t timeout_ms);

  const SessionOptions options_;
  Clock* const clock_;    // options_.clock, or the real clock. Never null.
  StepTimer step_timer_;  // Cancels steps at their timeout, on clock_.
  // With ConfigProto.isolate_session_state and no SessionOptions::resource_mgr: the
  // session's own variables and queues.
  const std::unique_ptr<ResourceMgr> own_resources_;
  ResourceMgr* const resource_mgr_;
  // Runs the nodes of every step: the session's own pool (ConfigProto
  // use_per_session_threads, or inter_op_parallelism_threads threads to start with), or
  // the one that the process's in-process sessions share.
  const std::unique_ptr<ThreadPool> own_pool_;
  ThreadPool* const pool_;
  // With ConfigProto.intra_op_parallelism_threads: the kernels' own Eigen pool.
  struct IntraOpPool;
  const std::unique_ptr<IntraOpPool> intra_op_;
  KernelCache kernels_;

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  GraphDef graph_def_ ABSL_GUARDED_BY(mu_);  // With attr defaults.
  std::shared_ptr<const ValidatedGraph> graph_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const Signature>> signatures_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<CallableHandle, Callable> callables_ ABSL_GUARDED_BY(mu_);
  CallableHandle next_callable_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, std::shared_ptr<PartialRunStep>> partial_runs_
      ABSL_GUARDED_BY(mu_);
  int64_t next_partial_run_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_DIRECT_SESSION_H_

#ifndef OVERSEER_CORE_EXECUTOR_EXECUTOR_H_
#define OVERSEER_CORE_EXECUTOR_EXECUTOR_H_

// Runs one pruned graph (core/graph/prune.h), step after step. Nodes run as soon as
// their data and control inputs are ready; independent nodes run in parallel on a
// ThreadPool while the calling thread takes part too (a step makes progress even when
// the pool is busy with kernels blocked by other steps). A thread runs the cheap nodes
// it makes ready itself (OpKernel::IsExpensive false and MayWait false: constants,
// variables, identities, sends; and kernels whose cost follows the few elements they
// touch, kInlineElements), and of the others it keeps one when it has nothing else to
// run (so a chain of nodes runs on one thread) and hands the rest to the pool;
// a node that may wait thus never holds up work of its thread. An async kernel
// (OpKernel::IsAsync, a _Recv from another task) holds no thread while it waits: the
// thread its reply arrives on ends it, runs the cheap nodes that then become ready and
// hands the others to the pool. The first error, or the timeout, cancels the step; Run
// returns once no kernel of the step is running or waiting (RunAsync calls back then).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/cancellation.h"
#include "core/clock.h"
#include "core/executor/kernel_cache.h"
#include "core/executor/step_timer.h"
#include "core/executor/thread_pool.h"
#include "core/graph/prune.h"
#include "core/resource_mgr.h"
#include "core/tensor.h"
#include "proto/config.pb.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace overseer {

class Rendezvous;
struct TensorValue;

struct ExecutorRunArgs {
  int64_t step_id = 0;
  // Where kernels find variables and queues. Required.
  ResourceMgr* resource_mgr = nullptr;
  // The value of each feed, in the order of PrunedGraph::feed_nodes. The caller has
  // checked dtypes and shapes. Must outlive Run.
  absl::Span<const Tensor* const> feeds;
  // A step still running after this long on `clock` is cancelled (by `timer`) and fails
  // DEADLINE_EXCEEDED "step exceeded timeout of N ms". Zero or negative: no timeout.
  int64_t timeout_ms = 0;
  // Time source for the step's timeout and kernels' deadlines. Required.
  Clock* clock = nullptr;
  // Cancels the step at its timeout; must run on `clock`. Required when timeout_ms > 0.
  // Not owned.
  StepTimer* timer = nullptr;
  // When set, receives one NodeExecStats per node run (its times and thread), under one
  // DeviceStepStats.
  StepStats* stats = nullptr;
  // With `stats`: also each node's outputs (dtype, shape, bytes), as FULL_TRACE asks.
  bool trace_outputs = false;
  // Where kernels split their work (OpKernelContext::eigen_device); null: the
  // process-wide default. Not owned.
  const Eigen::ThreadPoolDevice* eigen_device = nullptr;
  // Handed to kernels (OpKernelContext::rendezvous) for _Send/_Recv; not owned.
  Rendezvous* rendezvous = nullptr;
  // When set and cancelled (before or during the run), the step fails with its reason
  // and every waiting kernel is woken, as by the step's own first error. Not owned.
  CancellationManager* cancellation = nullptr;
};

// Thread-safe: Run may be called from several threads at once (steps do not share
// per-step state; shared kernels must be thread-safe, as OpKernel requires).
class Executor {
 public:
  // Builds (or takes from `kernels`, which must outlive the executor) a kernel for every
  // node but the feed nodes. Nodes run on `pool` (required, not owned, must outlive the
  // executor). Errors are CreateOpKernel's, naming the node.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(PrunedGraph graph, KernelCache* kernels,
                                                          ThreadPool* pool);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // A kernel whose cost follows its elements (OpKernel::CostFollowsElements) that
  // touches at most this many runs inline: a pass over them costs less than handing the
  // node to another thread (microseconds), even for a transcendental function.
  static constexpr int64_t kInlineElements = 256;

  // Runs one step; `fetches` receives the value of each PrunedGraph::fetches entry (a
  // reference output gives the variable's value now). Kernel errors come back prefixed
  // "node 'x' (op 'Y'): "; after the first error the remaining nodes do not run.
  absl::Status Run(const ExecutorRunArgs& args, std::vector<Tensor>* fetches);
  // The same step, without waiting for it: `done` gets what Run would return, on the
  // thread that ends the step (this one, if it ends at once; a pool thread, or the
  // thread an async kernel's reply came on, otherwise). This thread runs only the
  // nodes that run inline, as a thread an async kernel's reply arrived on does, and
  // never waits: a caller serving many calls on one thread may call it there.
  // `args`, `fetches` and what they point to must outlive `done`'s call.
  void RunAsync(const ExecutorRunArgs& args, std::vector<Tensor>* fetches,
                std::function<void(absl::Status)> done);

  const Graph& graph() const { return *graph_.graph; }
  // True if a kernel of the graph may wait for other work (OpKernel::MayWait).
  bool may_wait() const { return may_wait_; }
  // True if the only kernels of the graph that may wait are async ones (their waits
  // hold no thread): the graph's nodes that run inline never wait.
  bool waits_only_async() const { return waits_only_async_; }

 private:
  struct NodeItem;
  struct Step;
  struct StepRun;

  explicit Executor(PrunedGraph graph, ThreadPool* pool);
  absl::Status Init(KernelCache* kernels);

  absl::Status CheckArgs(const ExecutorRunArgs& args) const;
  // Sets a run's step up: its timeout, its link to the caller's cancellation.
  void BeginRun(StepRun* run);
  // After the step's last node: what Run returns. Releases the step.
  absl::Status EndRun(StepRun* run);

  std::unique_ptr<Step> AcquireStep();
  void ReleaseStep(std::unique_ptr<Step> step);

  // Nodes ready to run on the current thread.
  using ReadyNodes = absl::InlinedVector<int, 8>;
  // Splits newly `ready` nodes between this thread (`here`: the ones that run inline,
  // or one other node when this thread has nothing else and is not `foreign`) and the
  // pool (`elsewhere`). A foreign thread is one an async kernel's `done` ran on (a
  // reply's): it runs only nodes that run inline.
  void Dispatch(const Step* step, absl::Span<const int> ready, ReadyNodes* here,
                absl::InlinedVector<int, 8>* elsewhere, bool foreign) const;
  // Whether ready node `id` runs on the thread that made it ready: a cheap kernel that
  // never waits, an async one, or one whose cost follows its elements and that touches
  // at most kInlineElements of them.
  bool RunsInline(const Step* step, int id) const;
  // Makes the graph's roots outstanding in `step`: queues the ones that go to the pool
  // and returns those this thread runs (Dispatch). `on_end`: RunAsync's end (null for
  // Run), set before any node can end the step.
  ReadyNodes StartRoots(Step* step, bool foreign, std::function<void()> on_end);
  // Runs the nodes of `here` and those they make ready here, until none is left.
  void RunNodes(Step* step, ReadyNodes* here, bool foreign);
  // Runs one node (or starts it, if its kernel is async) and dispatches the nodes it
  // made ready.
  void RunNode(Step* step, int node, ReadyNodes* here, bool foreign);
  // Checks a computed node's outputs and `status`, passes its outputs on (or fails the
  // step) and ends it (EndNode).
  void EndCompute(Step* step, int node, absl::Status status, std::vector<TensorValue>* outputs,
                  ReadyNodes* here, bool foreign);
  // Hands `outputs` of `item` to the inputs of the nodes they feed (and to the fetches),
  // and adds the nodes that became ready to `ready`.
  void Propagate(Step* step, const NodeItem& item, TensorValue* outputs, ReadyNodes* ready);
  // Ends a node that made `ready` ready: clears its inputs and dispatches them.
  void EndNode(Step* step, int node, absl::Span<const int> ready, ReadyNodes* here, bool foreign);
  // A pool task: runs a node taken from the step's ready queue, if any.
  void RunQueued(Step* step);
  // Records the first error and cancels the step.
  void Fail(Step* step, absl::Status status);
  absl::Status CollectFetches(Step* step, std::vector<Tensor>* fetches);

  PrunedGraph graph_;
  ThreadPool* const pool_;
  std::vector<NodeItem> items_;
  std::vector<int> roots_;
  std::vector<std::shared_ptr<OpKernel>> kernels_;  // Keeps the shared kernels alive.
  bool may_wait_ = false;
  bool waits_only_async_ = true;

  absl::Mutex free_mu_;
  std::vector<std::unique_ptr<Step>> free_steps_ ABSL_GUARDED_BY(free_mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CORE_EXECUTOR_EXECUTOR_H_

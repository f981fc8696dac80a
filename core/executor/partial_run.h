#ifndef OVERSEER_CORE_EXECUTOR_PARTIAL_RUN_H_
#define OVERSEER_CORE_EXECUTOR_PARTIAL_RUN_H_

// A partial run (TensorFlow's partial_run): one step whose feeds arrive and whose
// fetches are taken over several calls. The step's pruned graph is rewritten so that
// each feed is a _Recv and each fetch a _Send on a rendezvous of the step's own; the
// executor starts at once on a thread of the step, and nodes run as their feeds come.
//
//   PartialRunGraph g = MakePartialRunGraph(pruned, feeds, fetches, device, incarnation);
//   executor = Executor::Create(std::move(g.graph), ...);
//   PartialRunStep step(std::move(executor), g, checks, args);
//   step.Run({{"a:0", &a}}, {"r:0"}, &out);   // ... until step.done()

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/cancellation.h"
#include "core/executor/executor.h"
#include "core/graph/feed_check.h"
#include "core/graph/prune.h"
#include "core/rendezvous.h"
#include "core/tensor.h"

namespace overseer {

// "node" reads as "node:0"; "node:k" stays.
std::string CanonicalTensorName(absl::string_view name);

// INVALID_ARGUMENT naming a fetch that a partial run's setup names twice ("x" and
// "x:0" are one tensor).
absl::Status CheckPartialRunFetches(const std::vector<std::string>& fetches);

// The feeds (indices into `step`'s feeds) that each fetch of `step` depends on through
// data and control inputs, in order.
std::vector<std::vector<int>> FeedsNeededByFetches(const PrunedGraph& step);

// The bookkeeping of one partial run's feeds and fetches, and its errors
// (Session::PartialRun). Not thread-safe.
class PartialRunTracker {
 public:
  // `feeds` and `fetches` as the setup named them; `needs` from FeedsNeededByFetches.
  PartialRunTracker(const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                    std::vector<std::vector<int>> needs);

  // What one call gives and takes: indices into the setup's feeds and fetches, in the
  // call's order, and whether the call completes the partial run.
  struct Call {
    std::vector<int> feeds;
    std::vector<int> fetches;
    bool last = false;
  };
  // Checks a call's names; on success records them as given and taken. On error
  // (INVALID_ARGUMENT naming the tensor) nothing changes.
  absl::StatusOr<Call> Take(const std::vector<std::string>& feeds,
                            const std::vector<std::string>& fetches);

  const std::vector<std::string>& feeds() const { return feeds_; }      // Canonical.
  const std::vector<std::string>& fetches() const { return fetches_; }  // Canonical.

 private:
  std::vector<std::string> feeds_;
  std::vector<std::string> fetches_;
  std::vector<std::vector<int>> needs_;
  std::vector<bool> fed_;
  std::vector<bool> fetched_;
  int remaining_ = 0;  // Feeds to give plus fetches to take.
};

// A step graph rewritten for a partial run.
struct PartialRunGraph {
  // No feed nodes (each is a _Recv); the targets are the step's and a _Send per fetch.
  PrunedGraph graph;
  std::vector<RendezvousKey> feed_keys;       // Where feed i is sent.
  std::vector<RendezvousKey> fetch_keys;      // Where fetch i is received.
  std::vector<std::vector<int>> fetch_needs;  // FeedsNeededByFetches of the step.
};

// Rewrites `step` (PruneGraph of the session's graph for `feeds`, `fetches` and the
// targets) for a partial run; the _Send and _Recv nodes name `device` and
// `incarnation` in their keys. INVALID_ARGUMENT for a fetch named twice, or if a name
// the rewrite needs is taken by a node of the graph.
absl::StatusOr<PartialRunGraph> MakePartialRunGraph(const PrunedGraph& step,
                                                    const std::vector<std::string>& feeds,
                                                    const std::vector<std::string>& fetches,
                                                    absl::string_view device, uint64_t incarnation);

// Runs one step of an executor on a thread of its own. Thread-safe.
class BackgroundRun {
 public:
  // Starts `executor->Run(args, nullptr)`; `on_error` (may be empty) is called on that
  // thread with a failed run's status before Wait returns it. `executor` and
  // everything `args` points to must outlive the BackgroundRun.
  BackgroundRun(Executor* executor, const ExecutorRunArgs& args,
                std::function<void(const absl::Status&)> on_error);
  // Waits for the run: cancel it first (through args.cancellation) if it may block.
  ~BackgroundRun();
  BackgroundRun(const BackgroundRun&) = delete;
  BackgroundRun& operator=(const BackgroundRun&) = delete;

  // Waits for the run to end and returns its status.
  absl::Status Wait();
  // Whether the run has ended, and its status then.
  bool finished() const;
  absl::Status status() const;

 private:
  mutable absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// One in-process partial run: its graph's executor on a rendezvous of its own.
// Thread-safe.
class PartialRunStep {
 public:
  // Starts `executor` (built from `graph.graph`) with `args` (its rendezvous and
  // cancellation are the step's own). `feeds` and `fetches` are the setup's names;
  // `checks` has one FeedCheck per feed, in order (MakeFeedChecks).
  PartialRunStep(std::unique_ptr<Executor> executor, PartialRunGraph graph,
                 const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                 std::vector<FeedCheck> checks, ExecutorRunArgs args);
  // Cancels the step if it is still running and waits for it.
  ~PartialRunStep();
  PartialRunStep(const PartialRunStep&) = delete;
  PartialRunStep& operator=(const PartialRunStep&) = delete;

  // Gives `feeds` and takes `fetches` (Session::PartialRun's errors); `outputs` gets
  // one tensor per fetch. When this call completes the step (every feed given and
  // every fetch taken), it waits for the step's end and returns its status, and
  // done() becomes true; a kernel error also ends the step, and done() is true then.
  absl::Status Run(const std::vector<std::pair<std::string, const Tensor*>>& feeds,
                   const std::vector<std::string>& fetches, std::vector<Tensor>* outputs);

  // True once the step has ended (completed or failed); the handle is then spent.
  bool done() const;

  // Ends the step with `status` (not OK): waiting calls return it.
  void Cancel(absl::Status status);

 private:
  // Waits for the executor; the step is done after. Returns the executor's error, or
  // `otherwise` if it succeeded.
  absl::Status End(absl::Status otherwise);

  const std::unique_ptr<Executor> executor_;
  const PartialRunGraph graph_;
  const std::vector<FeedCheck> checks_;
  const std::shared_ptr<LocalRendezvous> rendezvous_;
  CancellationManager cancellation_;

  mutable absl::Mutex mu_;
  PartialRunTracker tracker_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;

  // Last: started once everything above exists, and waited for first.
  BackgroundRun run_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_EXECUTOR_PARTIAL_RUN_H_

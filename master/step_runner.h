#ifndef OVERSEER_MASTER_STEP_RUNNER_H_
#define OVERSEER_MASTER_STEP_RUNNER_H_

// Runs one step of registered partitions: a RunGraph per task, all in parallel; the
// first failure cancels the step on every task (CleanupGraph), and every task's step
// state is cleaned up afterwards: in the background after a successful step (as
// TensorFlow's CleanupPartitionsAsync), so that the caller does not wait a round trip.
// The step runs asynchronously (RunRegisteredStepAsync: the thread that receives the
// last RunGraph reply finishes it, as TensorFlow's master does with RunGraphAsync);
// RunRegisteredStep waits for it.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/cancellation.h"
#include "core/executor/thread_pool.h"
#include "master/partitioner.h"
#include "master/worker_cache.h"
#include "proto/config.pb.h"
#include "proto/tensor.pb.h"
#include "proto/worker.pb.h"

namespace overseer {

// The partitions of one signature, registered on their tasks.
struct RegisteredStep {
  std::map<std::string, std::string> graph_handles;  // Task -> graph handle.
  // Tasks whose partition may wait (RegisterGraphResponse.may_wait).
  std::set<std::string> may_wait;
  // Tasks whose partition sends tensors to other tasks (their step state must live
  // until the step is over: CleanupGraph). The others free theirs as RunGraph returns
  // (RunGraphRequest.cleanup_on_return).
  std::set<std::string> peer_senders;
  std::vector<PartitionEndpoint> feeds;
  std::vector<PartitionEndpoint> fetches;
  // Forwarding: a task whose partition sends tensors to other tasks but receives none
  // from them runs first, and returns its sent tensors in its RunGraph reply (up to
  // kMaxForwardBytes); the master carries them to their consumers in the consumers'
  // RunGraph, which then starts. Each small tensor so costs no RecvTensor, and the
  // producer keeps no state after its step. Key -> consuming task, per such task.
  std::map<std::string, std::map<std::string, std::string>> forwarders;
  // Forwarders that once returned fewer than all their keys (a tensor too large):
  // later steps run them with the others, their consumers pulling by RecvTensor.
  // Shared by every step of the signature.
  struct Declined {
    absl::Mutex mu;
    std::set<std::string> tasks ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<Declined> declined = std::make_shared<Declined>();
};

// How many encoded bytes of its sent tensors a forwarding task returns per step
// (RunGraphRequest.forward_max_bytes).
inline constexpr int64_t kMaxForwardBytes = 64 << 10;

struct StepArgs {
  std::string session_handle;
  int64_t step_id = 0;
  std::vector<const TensorProto*> feeds;  // One per RegisteredStep::feeds.
  int64_t timeout_in_ms = 0;              // 0: none.
  // Whether every task records step stats (RunGraphRequest.exec_opts.record_timeline),
  // with each node's outputs (record_outputs).
  bool trace = false;
  bool trace_outputs = false;
  // Whether every task returns the partition graph it ran (record_partition_graphs).
  bool partition_graphs = false;
  // Cancels the step as the caller's cancellation does (optional, not owned, outlives
  // the step's `done`): its session was aborted, so that a step waiting on a task that
  // is still up (a dequeue from a queue no one will fill now) ends too.
  CancellationManager* session_cancellation = nullptr;
};

// Cleans up finished steps on the tasks that kept their state (they sent tensors to
// peers). A step's cleanup waits for the next RunGraph of the session to its task and
// rides in it (TakeFor: RunGraphRequest.cleanup_step_id), so that a step loop sends no
// CleanupGraph at all. What waits longer goes by CleanupGraph: when `max_waiting`
// steps wait for one task (a loop that no longer runs there), and everything when the
// cleaner is destroyed (the session closes), which waits until it is sent. CleanupGraph
// is sent from a thread of a process-wide pool (at most kMaxStepCleanerThreads) while
// some are queued: a cleaner holds no thread of its own, so a master with a thousand
// sessions open does not keep a thousand threads. When `max_pending` steps are queued
// for sending, Enqueue blocks until the sending catches up, so a fast step loop cannot
// grow the queue without bound. Thread-safe.
inline constexpr int kMaxStepCleanerThreads = 32;

class StepCleaner {
 public:
  explicit StepCleaner(MasterWorkerCacheInterface* workers, int max_waiting = 64,
                       int max_pending = 1024);
  ~StepCleaner();
  StepCleaner(const StepCleaner&) = delete;
  StepCleaner& operator=(const StepCleaner&) = delete;

  // Queues the cleanup of `step_id` on `tasks`.
  void Enqueue(const std::vector<std::string>& tasks, int64_t step_id);
  // Moves the cleanups waiting for `task` into `request`.
  void TakeFor(const std::string& task, RunGraphRequest* request);
  // Queues again the cleanups that `request`, a RunGraph to `task` that failed, carried
  // (it may not have reached the task).
  void GiveBack(const std::string& task, const RunGraphRequest& request);

 private:
  // Shared with the task that sends, which may end after the destructor's wait did.
  struct Queue;
  static void Send(std::shared_ptr<Queue> queue);
  static ThreadPool* Pool();

  const std::shared_ptr<Queue> queue_;
};

// Where the master's step path does what blocks (cancelling and cleaning up a failed
// step, asking its tasks whether they restarted, building and registering a
// signature), so that a gRPC completion thread never waits. Process-wide; grows rather
// than make a task wait.
ThreadPool* StepBlockingThreads();

// Runs the step without blocking: starts every task's RunGraphAsync on this thread
// and calls `done` once, with what RunRegisteredStep returns. After a success, the
// thread of the last RunGraph reply fills `fetches` (and `metadata`) and calls `done`; a
// failed step is cancelled and cleaned up on a StepBlockingThreads() thread, which
// then calls `done`. `cancellation` (optional) ends the step's RunGraph calls with
// CANCELLED when it starts cancelling (the caller gave up). `step`, `fetches`,
// `metadata`, `cleaner`, `cancellation` and the tensors of args.feeds must live until
// `done` is called.
void RunRegisteredStepAsync(MasterWorkerCacheInterface* workers, const RegisteredStep& step,
                            const StepArgs& args, std::vector<TensorProto>* fetches,
                            RunMetadata* metadata, StepCleaner* cleaner,
                            CancellationManager* cancellation,
                            std::function<void(absl::Status)> done);

// Runs the step and waits for it. On success `fetches` gets one tensor per RegisteredStep::fetches
// and `metadata` (optional) the step stats every task returned (with args.trace, one
// DeviceStepStats per task, naming its device) and with args.partition_graphs the partition
// graphs, in task order. Errors are those of the first task that failed (CANCELLED ones from
// the cancellation are ignored), prefixed with the task name, code kept. A task that is not in
// `workers` is UNAVAILABLE. A successful step's cleanup goes to `cleaner` (null: cleaned up before
// returning); a failed step is cancelled and cleaned up before returning.
absl::Status RunRegisteredStep(MasterWorkerCacheInterface* workers, const RegisteredStep& step,
                               const StepArgs& args, std::vector<TensorProto>* fetches,
                               RunMetadata* metadata, StepCleaner* cleaner = nullptr);

// Prefixes `status`'s message with "task <task>: ", keeping its code.
absl::Status TaskError(const std::string& task, const absl::Status& status);

}  // namespace overseer

#endif  // OVERSEER_MASTER_STEP_RUNNER_H_

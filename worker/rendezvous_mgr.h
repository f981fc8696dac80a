#ifndef OVERSEER_WORKER_RENDEZVOUS_MGR_H_
#define OVERSEER_WORKER_RENDEZVOUS_MGR_H_

// The rendezvous of each step on a worker. A step's state is created by whichever
// comes first, its RunGraph or a peer's RecvTensor, and freed by CleanupGraph, which
// also cancels everything of the step still waiting. State that only RecvTensor calls
// created (the step never ran here: its master died or gave up before the RunGraph
// came) is freed when the last of those calls ends. StepRendezvous is what the
// kernels of one RunGraph see: keys produced on this task stay local, keys produced by
// another task are pulled from that task with RecvTensor.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/cancellation.h"
#include "core/rendezvous.h"
#include "worker/worker_cache.h"

namespace overseer {

// One step on this worker. Both members are shared and never null.
struct StepState {
  std::shared_ptr<LocalRendezvous> rendezvous;
  // Cancelled (with the rendezvous aborted) by CleanupGraph.
  std::shared_ptr<CancellationManager> cancellation;
};

// Thread-safe.
class RendezvousMgr {
 public:
  // Remembers up to `max_cleaned_steps` cleaned-up step ids so that a late RecvTensor
  // for one of them fails instead of recreating the step.
  explicit RendezvousMgr(int max_cleaned_steps = 100000);
  RendezvousMgr(const RendezvousMgr&) = delete;
  RendezvousMgr& operator=(const RendezvousMgr&) = delete;

  // The state of `step_id` for a RunGraph, created if absent (also for a step id that
  // was cleaned up before: the master may reuse ids after it restarts).
  StepState FindOrCreate(int64_t step_id);
  // The state of `step_id` for a RecvTensor, created if absent; CANCELLED naming the
  // step if it was already cleaned up. Every state returned is handed back to EndRecv
  // when the RecvTensor ends, however it ends.
  absl::StatusOr<StepState> FindForRecv(int64_t step_id);
  // A RecvTensor of `step_id` that FindForRecv gave `state` ended. The step is
  // forgotten if no RunGraph has used it and no other RecvTensor waits on it.
  void EndRecv(int64_t step_id, const StepState& state);
  // Whether a RunGraph has used the step whose state FindForRecv gave as `state` (false
  // if that step was cleaned up meanwhile).
  bool Ran(int64_t step_id, const StepState& state) const;
  // Aborts the step's rendezvous and cancels it with CANCELLED, then forgets it.
  void Cleanup(int64_t step_id);
  // Forgets a finished step that nobody will ask for a tensor of (no abort, no
  // record of the id).
  void Release(int64_t step_id);
  // Steps currently held.
  int num_steps() const;

 private:
  struct Entry {
    StepState state;
    // A RunGraph used the step: it stays until CleanupGraph or Release.
    bool ran = false;
    // RecvTensor calls between FindForRecv and EndRecv.
    int receivers = 0;
  };

  Entry& CreateLocked(int64_t step_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_cleaned_steps_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int64_t, Entry> steps_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> cleaned_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> cleaned_order_ ABSL_GUARDED_BY(mu_);
};

// The rendezvous of one RunGraph. Thread-safe; must outlive the run.
class StepRendezvous : public Rendezvous {
 public:
  // `local_task` is "/job:J/replica:0/task:I"; `peers` (not owned, may be null when
  // the session has no cluster) reaches the other tasks.
  StepRendezvous(int64_t step_id, std::string local_task, StepState state,
                 WorkerCacheInterface* peers);

  // Keys produced by another task whose tensors the master carried in the RunGraph
  // request (RunGraphRequest.forwarded) and that were sent to the step's
  // LocalRendezvous: received there, with no RecvTensor. Called before the run.
  void SetForwarded(absl::flat_hash_set<std::string> keys) { forwarded_ = std::move(keys); }

  absl::Status Send(const RendezvousKey& key, const Tensor& value) override;
  // Local and forwarded keys: the step's LocalRendezvous. Other keys produced by
  // another task: RecvTensor on that task, cancelled by wait.cancellation or by the
  // step's cleanup, with the time left until wait.deadline as its timeout. The peer's
  // error keeps its code (ABORTED for a restarted producer, UNAVAILABLE for a dead
  // one) and names the tensor and task.
  absl::StatusOr<Tensor> Recv(const RendezvousKey& key, const RendezvousWait& wait) override;
  // The same without a thread: the step's LocalRendezvous::RecvAsync, or the peer's
  // WorkerInterface::RecvTensorAsync (over gRPC, read on the worker's completion queue
  // loop).
  void RecvAsync(const RendezvousKey& key, const RendezvousWait& wait, RecvDone done) override;
  void StartAbort(absl::Status status) override;

 private:
  // A receive from another task: its call, and its cancellation linked to the kernel's
  // and the step's.
  struct PeerRecv {
    struct Link {
      CancellationManager* parent;
      CancellationManager::Token token;
    };
    std::shared_ptr<WorkerInterface> peer;
    std::string task;
    std::string tensor_name;
    RecvTensorRequest request;
    std::shared_ptr<CancellationManager> cancel;
    std::vector<Link> links;

    // Unlinks the cancellation; returns `status` with the tensor and task named.
    absl::Status End(const absl::Status& status);
  };
  absl::StatusOr<std::shared_ptr<PeerRecv>> StartPeerRecv(const std::string& task,
                                                          const RendezvousKey& key,
                                                          const RendezvousWait& wait);

  // Whether `key`'s tensor is in the step's LocalRendezvous: produced here or
  // forwarded.
  bool IsLocal(const std::string& task, const RendezvousKey& key) const {
    return task == local_task_ || (!forwarded_.empty() && forwarded_.contains(key.full));
  }

  const int64_t step_id_;
  const std::string local_task_;
  const StepState state_;
  WorkerCacheInterface* const peers_;
  absl::flat_hash_set<std::string> forwarded_;
};

// The task ("/job:J/replica:0/task:I") of a full device name. INVALID_ARGUMENT naming
// the device if it is malformed or names no job and task.
absl::StatusOr<std::string> TaskOfDevice(absl::string_view device);

}  // namespace overseer

#endif  // OVERSEER_WORKER_RENDEZVOUS_MGR_H_

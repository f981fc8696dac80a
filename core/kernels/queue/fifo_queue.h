#ifndef OVERSEER_CORE_KERNELS_QUEUE_FIFO_QUEUE_H_
#define OVERSEER_CORE_KERNELS_QUEUE_FIFO_QUEUE_H_

// A bounded first-in first-out queue of tuples of tensors, shared through a ResourceMgr
// by the queue ops (TensorFlow's FIFOQueue semantics).

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/clock.h"
#include "core/resource_mgr.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"

namespace overseer {

// How long a blocking call may wait and what wakes it early. Nothing is owned.
struct QueueWait {
  // Cancelling it wakes the call, which then fails CANCELLED. May be null.
  CancellationManager* cancellation = nullptr;
  // Measures `deadline`. May be null only when the deadline is absl::InfiniteFuture() or
  // absl::InfinitePast() (else the call fails INVALID_ARGUMENT).
  Clock* clock = nullptr;
  // Reaching it wakes the call, which then fails DEADLINE_EXCEEDED.
  absl::Time deadline = absl::InfiniteFuture();
};

// Thread-safe. Enqueue attempts are served in arrival order, as are dequeue attempts.
class FIFOQueue : public ResourceBase, public std::enable_shared_from_this<FIFOQueue> {
 public:
  using Tuple = std::vector<Tensor>;

  // `shapes` is empty (any shape) or one shape per component; `capacity` < 0 means
  // unbounded. INVALID_ARGUMENT for no components or a shapes/types length mismatch.
  static absl::StatusOr<std::shared_ptr<FIFOQueue>> Create(std::string name,
                                                           std::vector<DataType> types,
                                                           std::vector<PartialShape> shapes,
                                                           int64_t capacity);

  const std::string& name() const { return name_; }
  const std::vector<DataType>& component_types() const { return types_; }
  // INVALID_ARGUMENT naming both signatures unless they equal this queue's.
  absl::Status MatchesSignature(const std::vector<DataType>& types,
                                const std::vector<PartialShape>& shapes, int64_t capacity) const;

  // Adds one element; blocks while the queue is full. CANCELLED if the queue is closed
  // (or gets closed with cancel_pending_enqueues) or the wait is cancelled;
  // DEADLINE_EXCEEDED at the deadline; INVALID_ARGUMENT naming the component index for a
  // dtype or shape mismatch.
  absl::Status Enqueue(const Tuple& tuple, const QueueWait& wait);
  // Adds the slices along dimension 0 of every component (all of one length), as many
  // at a time as fit, blocking while full. Errors as Enqueue; elements already added
  // when an error occurs stay in the queue.
  absl::Status EnqueueMany(const Tuple& batch, const QueueWait& wait);

  // Removes the oldest element; blocks while the queue is empty. OUT_OF_RANGE once the
  // queue is closed and empty; CANCELLED / DEADLINE_EXCEEDED as Enqueue.
  absl::StatusOr<Tuple> Dequeue(const QueueWait& wait);
  // Removes the `n` oldest elements, stacked along a new dimension 0. OUT_OF_RANGE if
  // the queue is closed before `n` are available (they then stay in the queue);
  // INVALID_ARGUMENT for n < 0 or elements of differing shapes. With `up_to`
  // (TensorFlow's DequeueUpTo), a queue closed with fewer than `n` elements left gives
  // those that are left; OUT_OF_RANGE only once it is closed and empty.
  absl::StatusOr<Tuple> DequeueMany(int64_t n, const QueueWait& wait, bool up_to = false);

  // Rejects further enqueues. With `cancel_pending_enqueues`, blocked enqueues fail
  // CANCELLED too; otherwise they still complete as space frees. Blocked dequeues that
  // can no longer be served fail OUT_OF_RANGE. Idempotent.
  void Close(bool cancel_pending_enqueues);

  int64_t Size() const;
  bool IsClosed() const;
  std::string DebugString() const override;
  int64_t MemoryUsed() const override;

 private:
  FIFOQueue(std::string name, std::vector<DataType> types, std::vector<PartialShape> shapes,
            int64_t capacity);

  class Waiter;
  class Turn;

  // Validates one element, or with `batched` a batch of elements along dimension 0.
  absl::Status Validate(const Tuple& tuple, bool batched) const;
  // Waits, holding mu_, until the attempt holding `turn` is at the head of its line and
  // `ready()` holds. OK then; CANCELLED if `waiter` was cancelled; DEADLINE_EXCEEDED at
  // the deadline. `what` names the attempt ("enqueue", "dequeue") in errors.
  template <typename Ready>
  absl::Status WaitFor(const Turn& turn, const Waiter& waiter, Ready ready, const QueueWait& wait,
                       absl::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ClosedError() const;
  absl::Status InsufficientError(int64_t requested) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const std::vector<DataType> types_;
  const std::vector<PartialShape> shapes_;
  const int64_t capacity_;

  mutable absl::Mutex mu_;
  std::deque<Tuple> elements_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancel_enqueues_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<int64_t> enqueuers_ ABSL_GUARDED_BY(mu_);
  std::set<int64_t> dequeuers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_QUEUE_FIFO_QUEUE_H_

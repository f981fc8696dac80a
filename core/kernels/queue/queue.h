#ifndef OVERSEER_CORE_KERNELS_QUEUE_QUEUE_H_
#define OVERSEER_CORE_KERNELS_QUEUE_QUEUE_H_

// A bounded queue of tuples of tensors, shared through a ResourceMgr by the queue ops,
// in TensorFlow's three kinds: FIFOQueue (first in, first out), RandomShuffleQueue
// (elements leave in a random order, and until the queue is closed at least
// min_after_dequeue stay behind for mixing) and PaddingFIFOQueue (first in, first out;
// components may have dimensions of unknown size, and DequeueMany pads each to the
// largest in the batch with zeros or empty strings).

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
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

// One blocking call's registration with its wait's CancellationManager: cancellation sets
// a flag under `mu` (the resource's mutex, which wakes a condition waiting on it). The
// callback holds `owner` (the resource) and the flag alive, since deregistration does
// not wait for a running callback.
class QueueWaiter {
 public:
  QueueWaiter(std::shared_ptr<void> owner, absl::Mutex* mu, const QueueWait& wait);
  ~QueueWaiter();
  QueueWaiter(const QueueWaiter&) = delete;
  QueueWaiter& operator=(const QueueWaiter&) = delete;
  // Read with `mu` held.
  bool cancelled() const { return *cancelled_; }

 private:
  CancellationManager* cm_;
  CancellationManager::Token token_ = CancellationManager::kInvalidToken;
  std::shared_ptr<bool> cancelled_;
};

// Waits, holding `mu`, until `ready()` holds (with `mu` held) or `waiter` is cancelled or
// `wait`'s deadline passes: OK, CANCELLED or DEADLINE_EXCEEDED; INVALID_ARGUMENT for a
// deadline without a clock. `what` ("dequeue on FIFOQueue 'q'") names the call in errors.
absl::Status AwaitQueueWait(absl::Mutex* mu, const QueueWaiter& waiter,
                            const std::function<bool()>& ready, const QueueWait& wait,
                            absl::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

struct QueueOptions {
  enum class Kind { kFifo, kRandomShuffle, kPaddingFifo };
  Kind kind = Kind::kFifo;
  int64_t capacity = -1;  // < 0: unbounded.
  // kRandomShuffle: until the queue is closed, a dequeue leaves at least this many.
  int64_t min_after_dequeue = 0;
  // kRandomShuffle: the order's seeds (TensorFlow's seed and seed2); both 0: a
  // nondeterministic order.
  int64_t seed = 0;
  int64_t seed2 = 0;

  bool operator==(const QueueOptions& o) const {
    return kind == o.kind && capacity == o.capacity && min_after_dequeue == o.min_after_dequeue &&
           seed == o.seed && seed2 == o.seed2;
  }
};

// "FIFOQueue", "RandomShuffleQueue" or "PaddingFIFOQueue" (the op's name).
const char* QueueKindName(QueueOptions::Kind kind);

// Thread-safe. Enqueue attempts are served in arrival order, as are dequeue attempts.
class Queue : public ResourceBase, public std::enable_shared_from_this<Queue> {
 public:
  using Tuple = std::vector<Tensor>;

  // `shapes` is empty (any shape) or one shape per component. INVALID_ARGUMENT for no
  // components, a shapes/types length mismatch, a negative min_after_dequeue or one that
  // a bounded queue cannot exceed, or a padding queue without a shape of known rank for
  // every component.
  static absl::StatusOr<std::shared_ptr<Queue>> Create(std::string name,
                                                       std::vector<DataType> types,
                                                       std::vector<PartialShape> shapes,
                                                       const QueueOptions& options = {});

  const std::string& name() const { return name_; }
  const std::vector<DataType>& component_types() const { return types_; }
  // INVALID_ARGUMENT naming both signatures unless they equal this queue's.
  absl::Status MatchesSignature(const std::vector<DataType>& types,
                                const std::vector<PartialShape>& shapes,
                                const QueueOptions& options) const;

  // Adds one element; blocks while the queue is full. CANCELLED if the queue is closed
  // (or gets closed with cancel_pending_enqueues) or the wait is cancelled;
  // DEADLINE_EXCEEDED at the deadline; INVALID_ARGUMENT naming the component index for a
  // dtype or shape mismatch.
  absl::Status Enqueue(const Tuple& tuple, const QueueWait& wait);
  // Adds the slices along dimension 0 of every component (all of one length), as many
  // at a time as fit, blocking while full. Errors as Enqueue; elements already added
  // when an error occurs stay in the queue.
  absl::Status EnqueueMany(const Tuple& batch, const QueueWait& wait);

  // Removes the oldest element (a random one in a RandomShuffleQueue); blocks while the
  // queue is empty (holds no more than min_after_dequeue, until closed). OUT_OF_RANGE once
  // the queue is closed and empty; CANCELLED / DEADLINE_EXCEEDED as Enqueue.
  absl::StatusOr<Tuple> Dequeue(const QueueWait& wait);
  // Removes `n` elements as Dequeue does, stacked along a new dimension 0 (in a
  // PaddingFIFOQueue each padded to the largest). OUT_OF_RANGE if the queue is closed
  // before `n` are available (they then stay in the queue); INVALID_ARGUMENT for n < 0 or
  // elements of differing shapes. With `up_to`
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
  Queue(std::string name, std::vector<DataType> types, std::vector<PartialShape> shapes,
        const QueueOptions& options);

  class Turn;

  // Validates one element, or with `batched` a batch of elements along dimension 0.
  absl::Status Validate(const Tuple& tuple, bool batched) const;
  // Waits, holding mu_, until the attempt holding `turn` is at the head of its line and
  // `ready()` holds. OK then; CANCELLED if `waiter` was cancelled; DEADLINE_EXCEEDED at
  // the deadline. `what` names the attempt ("enqueue", "dequeue") in errors.
  template <typename Ready>
  absl::Status WaitFor(const Turn& turn, const QueueWaiter& waiter, Ready ready,
                       const QueueWait& wait, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether an element fits now.
  bool HasRoom() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Elements a dequeue may take now.
  int64_t Available() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes one element (Available() > 0): the oldest, or a random one.
  Tuple TakeOne() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Tensor> StackComponent(const std::deque<Tuple>& tuples, int c) const;
  absl::Status ClosedError() const;
  absl::Status InsufficientError(int64_t requested) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const std::vector<DataType> types_;
  const std::vector<PartialShape> shapes_;
  const QueueOptions options_;
  const int64_t capacity_;
  // "FIFOQueue 'name'" and the like, for messages.
  const std::string label_;

  mutable absl::Mutex mu_;
  std::deque<Tuple> elements_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancel_enqueues_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<int64_t> enqueuers_ ABSL_GUARDED_BY(mu_);
  std::set<int64_t> dequeuers_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_QUEUE_QUEUE_H_

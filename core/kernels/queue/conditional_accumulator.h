#ifndef OVERSEER_CORE_KERNELS_QUEUE_CONDITIONAL_ACCUMULATOR_H_
#define OVERSEER_CORE_KERNELS_QUEUE_CONDITIONAL_ACCUMULATOR_H_

// TensorFlow's ConditionalAccumulator: a resource (shared through a ResourceMgr) that
// sums dense gradients computed at the accumulator's current time step and hands out
// their mean (or sum) once enough have arrived. The building block of synchronous
// training (client/training/sync_replicas_optimizer.h):
//
//   - ApplyGradient(local_step, g) adds g when local_step >= the global step; an older
//     (stale) gradient is dropped and counted in stale_dropped().
//   - TakeGradient(n) blocks until n gradients are in, returns their mean, empties the
//     accumulator and advances the global step by one, so the gradients of the step just
//     taken become stale.
//   - SetGlobalStep(s) sets the global step (the chief does after a restart, from the
//     restored global step).

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/kernels/queue/queue.h"
#include "core/resource_mgr.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"

namespace overseer {

// Thread-safe. Takes are served in arrival order.
class ConditionalAccumulator : public ResourceBase,
                               public std::enable_shared_from_this<ConditionalAccumulator> {
 public:
  enum class Reduction { kMean, kSum };

  // `dtype` is DT_FLOAT or DT_DOUBLE, else INVALID_ARGUMENT; gradients must be compatible
  // with `shape`, and all of one shape.
  static absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> Create(std::string name,
                                                                        DataType dtype,
                                                                        PartialShape shape,
                                                                        Reduction reduction);

  // INVALID_ARGUMENT naming both unless this accumulator has the same dtype, shape and
  // reduction.
  absl::Status MatchesSignature(DataType dtype, const PartialShape& shape,
                                Reduction reduction) const;

  // Adds `grad` if `local_step` is not older than the global step; drops it otherwise
  // (OK either way). INVALID_ARGUMENT for another dtype, or a shape incompatible with the
  // declared one or with the gradients already in.
  absl::Status ApplyGradient(int64_t local_step, const Tensor& grad);

  // Waits until `num_required` (>= 1, else INVALID_ARGUMENT) gradients are in, then
  // returns their mean (or sum), empties the accumulator and advances the global step.
  // CANCELLED / DEADLINE_EXCEEDED as the queues' waits.
  absl::StatusOr<Tensor> TakeGradient(int32_t num_required, const QueueWait& wait);

  // Wakes the waiting takes, which fail CANCELLED, as do later ones until SetGlobalStep.
  void CancelTakes();

  // Sets the global step and lets takes wait again; a step older than the current one is logged,
  // and set all the same (TensorFlow's behaviour). Gradients already in stay.
  void SetGlobalStep(int64_t step);

  int64_t global_step() const;
  int32_t num_accumulated() const;
  // Gradients dropped as stale since creation.
  int64_t stale_dropped() const;

  std::string DebugString() const override;
  int64_t MemoryUsed() const override;

 private:
  ConditionalAccumulator(std::string name, DataType dtype, PartialShape shape, Reduction reduction);

  absl::Status TakesCancelledError() const;

  const std::string name_;
  const DataType dtype_;
  const PartialShape shape_;
  const Reduction reduction_;

  mutable absl::Mutex mu_;
  Tensor sum_ ABSL_GUARDED_BY(mu_);  // Uninitialized while empty.
  int32_t count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t global_step_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t stale_dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool takes_cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<int64_t> takers_ ABSL_GUARDED_BY(mu_);  // Waiting takes, in arrival order.
};

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_QUEUE_CONDITIONAL_ACCUMULATOR_H_

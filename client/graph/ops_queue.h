#ifndef OVERSEER_CLIENT_GRAPH_OPS_QUEUE_H_
#define OVERSEER_CLIENT_GRAPH_OPS_QUEUE_H_

// Queue ops: FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue (TensorFlow's V1 queue ops; the handle
// is a string naming the queue resource), and the ConditionalAccumulator's. Conventions as in
// ops_array.h. Dequeues block until elements arrive; once the queue is closed and drained they fail
// OUT_OF_RANGE.

#include <string>
#include <vector>

#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"
#include "core/tensor_shape.h"

namespace overseer {
namespace ops {

struct FIFOQueueAttrs {
  // Fixed shapes of the components (empty: any shape, DequeueMany not possible).
  std::vector<PartialShape> shapes;
  int64_t capacity = -1;  // -1: unbounded.
  std::string container;
  std::string shared_name;
};

// The queue's handle.
Output FIFOQueue(const Scope& scope, const std::vector<DataType>& component_types,
                 const FIFOQueueAttrs& attrs = {});

struct RandomShuffleQueueAttrs {
  std::vector<PartialShape> shapes;
  int64_t capacity = -1;  // -1: unbounded; else more than min_after_dequeue.
  // Until the queue is closed, a dequeue leaves at least this many (for mixing).
  int64_t min_after_dequeue = 0;
  // Both 0: a nondeterministic order.
  int64_t seed = 0;
  int64_t seed2 = 0;
  std::string container;
  std::string shared_name;
};

// A queue whose elements leave in a random order (tf.RandomShuffleQueue).
Output RandomShuffleQueue(const Scope& scope, const std::vector<DataType>& component_types,
                          const RandomShuffleQueueAttrs& attrs = {});
// A FIFO queue whose `attrs.shapes` (required, one per component, of known rank) may
// have dimensions of unknown size (-1); QueueDequeueMany pads each to the largest in
// the batch with zeros or empty strings (tf.PaddingFIFOQueue).
Output PaddingFIFOQueue(const Scope& scope, const std::vector<DataType>& component_types,
                        const FIFOQueueAttrs& attrs);
// Enqueues one element (one tensor per component).
Operation QueueEnqueue(const Scope& scope, Input handle, const InputList& components,
                       int64_t timeout_ms = -1);
// Enqueues the slices along dimension 0 of each component.
Operation QueueEnqueueMany(const Scope& scope, Input handle, const InputList& components,
                           int64_t timeout_ms = -1);
// One element's components, typed `component_types`.
std::vector<Output> QueueDequeue(const Scope& scope, Input handle,
                                 const std::vector<DataType>& component_types,
                                 int64_t timeout_ms = -1);
// `n` elements stacked along a new dimension 0.
std::vector<Output> QueueDequeueMany(const Scope& scope, Input handle, Input n,
                                     const std::vector<DataType>& component_types,
                                     int64_t timeout_ms = -1);
// As QueueDequeueMany, but a closed queue gives the fewer than `n` elements left
// (TensorFlow's dequeue_up_to; a final smaller batch).
std::vector<Output> QueueDequeueUpTo(const Scope& scope, Input handle, Input n,
                                     const std::vector<DataType>& component_types,
                                     int64_t timeout_ms = -1);
Operation QueueClose(const Scope& scope, Input handle, bool cancel_pending_enqueues = false);
// The number of elements, an int32 scalar.
Output QueueSize(const Scope& scope, Input handle);

struct ConditionalAccumulatorAttrs {
  std::string container;
  std::string shared_name;
  std::string reduction_type = "MEAN";  // Or "SUM".
};

// TensorFlow's ConditionalAccumulator (core/kernels/queue/conditional_accumulator.h): its
// handle. `dtype` is float or double; gradients must be compatible with `shape`.
Output ConditionalAccumulator(const Scope& scope, DataType dtype, const PartialShape& shape,
                              const ConditionalAccumulatorAttrs& attrs = {});
// Adds `gradient` unless `local_step` (int64 scalar) is older than the global step.
Operation AccumulatorApplyGradient(const Scope& scope, Input handle, Input local_step,
                                   Input gradient);
// Waits for `num_required` (int32 scalar) gradients; their mean, typed `dtype`.
Output AccumulatorTakeGradient(const Scope& scope, Input handle, Input num_required,
                               DataType dtype);
Operation AccumulatorSetGlobalStep(const Scope& scope, Input handle, Input new_global_step);
// Fails the waiting and later takes CANCELLED until the next AccumulatorSetGlobalStep.
Operation AccumulatorCancelTakes(const Scope& scope, Input handle);
Output AccumulatorNumAccumulated(const Scope& scope, Input handle);

}  // namespace ops
}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPS_QUEUE_H_

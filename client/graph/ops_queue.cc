#include "client/graph/ops_queue.h"

#include <functional>
#include <string>

#include "client/graph/graph_builder.h"

namespace overseer {
namespace ops {

namespace {

// A queue op with the attrs every kind has; `extra` adds the kind's own.
Output QueueOp(const Scope& scope, const char* op, const std::vector<DataType>& component_types,
               const std::vector<PartialShape>& shapes, int64_t capacity,
               const std::string& container, const std::string& shared_name,
               const std::function<void(NodeBuilder*)>& extra = nullptr) {
  NodeBuilder builder(scope, op);
  builder.Attr("component_types", component_types)
      .Attr("shapes", shapes)
      .Attr("capacity", capacity)
      .Attr("container", container)
      .Attr("shared_name", shared_name);
  if (extra) extra(&builder);
  return FirstOutput(builder.Finalize());
}

}  // namespace

Output FIFOQueue(const Scope& scope, const std::vector<DataType>& component_types,
                 const FIFOQueueAttrs& attrs) {
  return QueueOp(scope, "FIFOQueue", component_types, attrs.shapes, attrs.capacity, attrs.container,
                 attrs.shared_name);
}

Output RandomShuffleQueue(const Scope& scope, const std::vector<DataType>& component_types,
                          const RandomShuffleQueueAttrs& attrs) {
  return QueueOp(scope, "RandomShuffleQueue", component_types, attrs.shapes, attrs.capacity,
                 attrs.container, attrs.shared_name, [&](NodeBuilder* builder) {
                   builder->Attr("min_after_dequeue", attrs.min_after_dequeue)
                       .Attr("seed", attrs.seed)
                       .Attr("seed2", attrs.seed2);
                 });
}

Output PaddingFIFOQueue(const Scope& scope, const std::vector<DataType>& component_types,
                        const FIFOQueueAttrs& attrs) {
  return QueueOp(scope, "PaddingFIFOQueue", component_types, attrs.shapes, attrs.capacity,
                 attrs.container, attrs.shared_name);
}

Operation QueueEnqueue(const Scope& scope, Input handle, const InputList& components,
                       int64_t timeout_ms) {
  return NodeBuilder(scope, "QueueEnqueue")
      .Input(handle)
      .Input(components)
      .Attr("timeout_ms", timeout_ms)
      .Finalize();
}

Operation QueueEnqueueMany(const Scope& scope, Input handle, const InputList& components,
                           int64_t timeout_ms) {
  return NodeBuilder(scope, "QueueEnqueueMany")
      .Input(handle)
      .Input(components)
      .Attr("timeout_ms", timeout_ms)
      .Finalize();
}

std::vector<Output> QueueDequeue(const Scope& scope, Input handle,
                                 const std::vector<DataType>& component_types, int64_t timeout_ms) {
  return AllOutputs(NodeBuilder(scope, "QueueDequeue")
                        .Input(handle)
                        .Attr("component_types", component_types)
                        .Attr("timeout_ms", timeout_ms)
                        .Finalize());
}

namespace {

// QueueDequeueMany or QueueDequeueUpTo.
std::vector<Output> DequeueN(const Scope& scope, const char* op, Input handle, Input n,
                             const std::vector<DataType>& component_types, int64_t timeout_ms) {
  return AllOutputs(NodeBuilder(scope, op)
                        .Input(handle)
                        .Input(n)
                        .Attr("component_types", component_types)
                        .Attr("timeout_ms", timeout_ms)
                        .Finalize());
}

}  // namespace

std::vector<Output> QueueDequeueMany(const Scope& scope, Input handle, Input n,
                                     const std::vector<DataType>& component_types,
                                     int64_t timeout_ms) {
  return DequeueN(scope, "QueueDequeueMany", handle, n, component_types, timeout_ms);
}

std::vector<Output> QueueDequeueUpTo(const Scope& scope, Input handle, Input n,
                                     const std::vector<DataType>& component_types,
                                     int64_t timeout_ms) {
  return DequeueN(scope, "QueueDequeueUpTo", handle, n, component_types, timeout_ms);
}

Operation QueueClose(const Scope& scope, Input handle, bool cancel_pending_enqueues) {
  return NodeBuilder(scope, "QueueClose")
      .Input(handle)
      .Attr("cancel_pending_enqueues", cancel_pending_enqueues)
      .Finalize();
}

Output QueueSize(const Scope& scope, Input handle) {
  return FirstOutput(NodeBuilder(scope, "QueueSize").Input(handle).Finalize());
}

Output ConditionalAccumulator(const Scope& scope, DataType dtype, const PartialShape& shape,
                              const ConditionalAccumulatorAttrs& attrs) {
  return FirstOutput(NodeBuilder(scope, "ConditionalAccumulator")
                         .Attr("dtype", dtype)
                         .Attr("shape", shape)
                         .Attr("container", attrs.container)
                         .Attr("shared_name", attrs.shared_name)
                         .Attr("reduction_type", attrs.reduction_type)
                         .Finalize());
}

Operation AccumulatorApplyGradient(const Scope& scope, Input handle, Input local_step,
                                   Input gradient) {
  return NodeBuilder(scope, "AccumulatorApplyGradient")
      .Input(handle)
      .Input(local_step)
      .Input(gradient)
      .Finalize();
}

Output AccumulatorTakeGradient(const Scope& scope, Input handle, Input num_required,
                               DataType dtype) {
  return FirstOutput(NodeBuilder(scope, "AccumulatorTakeGradient")
                         .Input(handle)
                         .Input(num_required)
                         .Attr("dtype", dtype)
                         .Finalize());
}

Operation AccumulatorSetGlobalStep(const Scope& scope, Input handle, Input new_global_step) {
  return NodeBuilder(scope, "AccumulatorSetGlobalStep")
      .Input(handle)
      .Input(new_global_step)
      .Finalize();
}

Operation AccumulatorCancelTakes(const Scope& scope, Input handle) {
  return NodeBuilder(scope, "AccumulatorCancelTakes").Input(handle).Finalize();
}

Output AccumulatorNumAccumulated(const Scope& scope, Input handle) {
  return FirstOutput(NodeBuilder(scope, "AccumulatorNumAccumulated").Input(handle).Finalize());
}

}  // namespace ops
}  // namespace overseer

#include "client/training/input.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/graph/ops.h"
#include "client/training/queue_runner.h"
#include "core/status_macros.h"

namespace overseer {

absl::StatusOr<std::vector<Output>> Batch(const Scope& scope, const std::vector<Output>& tensors,
                                          const BatchOptions& options) {
  if (tensors.empty()) return absl::InvalidArgumentError("Batch: no tensors to batch");
  if (options.batch_size < 1 || options.num_threads < 1 || options.capacity < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Batch: batch_size, num_threads and capacity must be at least 1, got ",
                     options.batch_size, ", ", options.num_threads, " and ", options.capacity));
  }
  if (!options.shapes.empty() && options.shapes.size() != tensors.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Batch: ", options.shapes.size(), " shapes for ", tensors.size(), " tensors"));
  }
  std::vector<DataType> types;
  ops::FIFOQueueAttrs attrs;
  attrs.capacity = options.capacity;
  InputList components;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Output& t = tensors[i];
    if (!t.valid()) return absl::InvalidArgumentError("Batch: a null tensor");
    const PartialShape& shape = options.shapes.empty() ? t.shape() : options.shapes[i];
    if (!shape.IsFullyDefined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Batch: the element shape of ", t.name(), " is ", shape.DebugString(),
                       "; batching needs it fully known (give BatchOptions::shapes)"));
    }
    types.push_back(RemoveRefType(t.dtype()));
    attrs.shapes.push_back(shape);
    components.push_back(t);
  }
  const Scope s = scope.NewSubScope(options.name);
  Output queue = ops::FIFOQueue(s.WithOpName("fifo_queue"), types, attrs);
  std::vector<Operation> enqueues;
  for (int i = 0; i < options.num_threads; ++i) {
    enqueues.push_back(ops::QueueEnqueue(s, queue, components));
  }
  RETURN_IF_ERROR(scope.status());
  ASSIGN_OR_RETURN(std::unique_ptr<QueueRunner> runner, QueueRunner::Create(s, queue, enqueues));
  AddQueueRunner(scope.graph(), *runner, options.collection);
  Output n = ops::Const(s.WithOpName("n"), static_cast<int32_t>(options.batch_size));
  std::vector<Output> batch = options.allow_smaller_final_batch
                                  ? ops::QueueDequeueUpTo(s.WithOpName("dequeue"), queue, n, types)
                                  : ops::QueueDequeueMany(s.WithOpName("dequeue"), queue, n, types);
  RETURN_IF_ERROR(scope.status());
  return batch;
}

}  // namespace overseer

#include "client/training/input.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/graph/ops.h"
#include "client/training/queue_runner.h"
#include "core/status_macros.h"

namespace overseer {

namespace {

// What Batch and ShuffleBatch share.
struct Common {
  const char* what;  // "Batch" or "ShuffleBatch", for errors.
  int64_t batch_size;
  int num_threads;
  int64_t capacity;
  std::vector<PartialShape> shapes;
  bool allow_smaller_final_batch;
  bool dynamic_pad;
  std::string collection;
  std::string name;
};

// Builds the queue in the sub-scope from the component types and element shapes.
using QueueBuilder =
    std::function<Output(const Scope&, const std::vector<DataType>&, std::vector<PartialShape>)>;

absl::StatusOr<std::vector<Output>> BatchThrough(const Scope& scope,
                                                 const std::vector<Output>& tensors,
                                                 const Common& options,
                                                 const QueueBuilder& make_queue) {
  const char* what = options.what;
  if (tensors.empty())
    return absl::InvalidArgumentError(absl::StrCat(what, ": no tensors to batch"));
  if (options.batch_size < 1 || options.num_threads < 1 || options.capacity < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": batch_size, num_threads and capacity must be at least 1, got ",
                     options.batch_size, ", ", options.num_threads, " and ", options.capacity));
  }
  if (!options.shapes.empty() && options.shapes.size() != tensors.size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", options.shapes.size(),
                                                   " shapes for ", tensors.size(), " tensors"));
  }
  std::vector<DataType> types;
  std::vector<PartialShape> shapes;
  InputList components;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Output& t = tensors[i];
    if (!t.valid()) return absl::InvalidArgumentError(absl::StrCat(what, ": a null tensor"));
    const PartialShape& shape = options.shapes.empty() ? t.shape() : options.shapes[i];
    if (options.dynamic_pad ? !shape.known_rank() : !shape.IsFullyDefined()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": the element shape of ", t.name(), " is ", shape.DebugString(),
          options.dynamic_pad ? "; dynamic_pad needs its rank known (give the options' shapes)"
                              : "; batching needs it fully known (give the options' shapes, "
                                "or dynamic_pad to pad dimensions of unknown size)"));
    }
    types.push_back(RemoveRefType(t.dtype()));
    shapes.push_back(shape);
    components.push_back(t);
  }
  const Scope s = scope.NewSubScope(options.name);
  Output queue = make_queue(s, types, std::move(shapes));
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

}  // namespace

absl::StatusOr<std::vector<Output>> Batch(const Scope& scope, const std::vector<Output>& tensors,
                                          const BatchOptions& options) {
  const Common common{"Batch",
                      options.batch_size,
                      options.num_threads,
                      options.capacity,
                      options.shapes,
                      options.allow_smaller_final_batch,
                      options.dynamic_pad,
                      options.collection,
                      options.name};
  return BatchThrough(
      scope, tensors, common,
      [&](const Scope& s, const std::vector<DataType>& types, std::vector<PartialShape> shapes) {
        ops::FIFOQueueAttrs attrs;
        attrs.capacity = options.capacity;
        attrs.shapes = std::move(shapes);
        return options.dynamic_pad
                   ? ops::PaddingFIFOQueue(s.WithOpName("padding_fifo_queue"), types, attrs)
                   : ops::FIFOQueue(s.WithOpName("fifo_queue"), types, attrs);
      });
}

absl::StatusOr<std::vector<Output>> ShuffleBatch(const Scope& scope,
                                                 const std::vector<Output>& tensors,
                                                 const ShuffleBatchOptions& options) {
  if (options.min_after_dequeue < 0 || options.min_after_dequeue >= options.capacity) {
    return absl::InvalidArgumentError(
        absl::StrCat("ShuffleBatch: min_after_dequeue must be at least 0 and below capacity ",
                     options.capacity, ", got ", options.min_after_dequeue));
  }
  const Common common{"ShuffleBatch",        options.batch_size, options.num_threads,
                      options.capacity,      options.shapes,     options.allow_smaller_final_batch,
                      /*dynamic_pad=*/false, options.collection, options.name};
  return BatchThrough(
      scope, tensors, common,
      [&](const Scope& s, const std::vector<DataType>& types, std::vector<PartialShape> shapes) {
        ops::RandomShuffleQueueAttrs attrs;
        attrs.capacity = options.capacity;
        attrs.min_after_dequeue = options.min_after_dequeue;
        attrs.seed = options.seed;
        attrs.shapes = std::move(shapes);
        return ops::RandomShuffleQueue(s.WithOpName("random_shuffle_queue"), types, attrs);
      });
}

}  // namespace overseer

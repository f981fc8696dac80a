#ifndef OVERSEER_CLIENT_TRAINING_INPUT_H_
#define OVERSEER_CLIENT_TRAINING_INPUT_H_

// TensorFlow's tf.train.batch and tf.train.shuffle_batch: batches of input tensors
// through a queue that a QueueRunner fills. The enqueue ops run `tensors` (one element per run)
// into a FIFOQueue of `capacity` in `num_threads` threads; the returned tensors dequeue
// `batch_size` elements stacked along a new dimension 0. Once the input is exhausted
// (an enqueue fails OUT_OF_RANGE, e.g. a source queue was closed and drained) the queue
// closes, the last batch is smaller with allow_smaller_final_batch (else dropped), and
// the next dequeue fails OUT_OF_RANGE: the end of input.
//
//   ASSIGN_OR_RETURN(std::vector<Output> batch, Batch(root, {image, label}, {.batch_size = 32}));
//   ... StartQueueRunners(session, &coord) (or a Supervisor / MonitoredTrainingSession) ...
//   session->Run({batch[0], batch[1]}, &out);   // [32, ...] each

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "core/tensor_shape.h"

namespace overseer {

struct BatchOptions {
  int64_t batch_size = 1;
  int num_threads = 1;
  // Elements the queue holds at most.
  int64_t capacity = 32;
  // Each element's shape, one per tensor (TensorFlow's `shapes`); empty: the shapes
  // inferred for the tensors, which must then be fully known.
  std::vector<PartialShape> shapes;
  // The final batch may hold fewer than batch_size elements (QueueDequeueUpTo; its
  // dimension 0 is then unknown in the graph).
  bool allow_smaller_final_batch = false;
  // Elements may differ in the size of some dimensions (the shapes' -1, with every rank
  // known): a PaddingFIFOQueue pads each batch to its largest with zeros.
  bool dynamic_pad = false;
  // The queue runner goes to this collection (StartQueueRunners finds it there).
  std::string collection = GraphKeys::kQueueRunners;
  // Name scope of the queue, the enqueue and the dequeue.
  std::string name = "batch";
};

struct ShuffleBatchOptions {
  int64_t batch_size = 1;
  int num_threads = 1;
  // Elements the queue holds at most; more than min_after_dequeue.
  int64_t capacity = 32;
  // Until the input is exhausted, at least this many elements stay in the queue after
  // each dequeue: the pool a batch is drawn from at random.
  int64_t min_after_dequeue = 0;
  // The order's seed; 0: nondeterministic.
  int64_t seed = 0;
  std::vector<PartialShape> shapes;
  bool allow_smaller_final_batch = false;
  std::string collection = GraphKeys::kQueueRunners;
  std::string name = "shuffle_batch";
};

// The batched tensors, one per input, in order. INVALID_ARGUMENT for no tensors,
// batch_size, num_threads or capacity below 1, `shapes` of another length, or an
// element shape that is not fully known (the queue needs it); errors of building the
// queue runner. An element of another shape fails the enqueue, which the queue runner
// reports to the coordinator.
absl::StatusOr<std::vector<Output>> Batch(const Scope& scope, const std::vector<Output>& tensors,
                                          const BatchOptions& options = {});

// As Batch, through a RandomShuffleQueue: each batch is drawn at random from the
// elements in the queue, of which at least min_after_dequeue stay behind until the
// input is exhausted. INVALID_ARGUMENT as Batch, and for min_after_dequeue below 0 or
// not below capacity.
absl::StatusOr<std::vector<Output>> ShuffleBatch(const Scope& scope,
                                                 const std::vector<Output>& tensors,
                                                 const ShuffleBatchOptions& options);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_INPUT_H_

// Op definitions of the queues (FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue). A queue op
// outputs a handle (a string scalar "container/name") naming the queue resource; the other ops take
// that handle.

#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

absl::Status HandleInput(ShapeContext* c) { return c->WithRank(0, 0); }

// A queue handle and a scalar count; the stacked components' shapes are not known.
absl::Status DequeueManyShape(ShapeContext* c) {
  RETURN_IF_ERROR(HandleInput(c));
  RETURN_IF_ERROR(c->WithRank(1, 0));
  return shape_fn::Unknown(c);
}

}  // namespace

REGISTER_OP("FIFOQueue")
    .Output("handle: string")
    .Attr("component_types: list(type) >= 1")
    .Attr("shapes: list(shape) = []")
    .Attr("capacity: int = -1")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fn::Scalar);

// Elements leave in a random order; until the queue is closed, a dequeue leaves at
// least min_after_dequeue behind. seed and seed2 both 0: a nondeterministic order.
REGISTER_OP("RandomShuffleQueue")
    .Output("handle: string")
    .Attr("component_types: list(type) >= 1")
    .Attr("shapes: list(shape) = []")
    .Attr("capacity: int = -1")
    .Attr("min_after_dequeue: int = 0")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fn::Scalar);

// A FIFOQueue whose shapes (one per component, of known rank) may have dimensions of
// unknown size (-1): QueueDequeueMany pads each to the largest in the batch with zeros.
REGISTER_OP("PaddingFIFOQueue")
    .Output("handle: string")
    .Attr("component_types: list(type) >= 1")
    .Attr("shapes: list(shape) = []")
    .Attr("capacity: int = -1")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fn::Scalar);

REGISTER_OP("QueueEnqueue")
    .Input("handle: string")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(HandleInput);

// Enqueues the slices of the components along dimension 0.
REGISTER_OP("QueueEnqueueMany")
    .Input("handle: string")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(HandleInput);

REGISTER_OP("QueueDequeue")
    .Input("handle: string")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn([](ShapeContext* c) {
      RETURN_IF_ERROR(HandleInput(c));
      return shape_fn::Unknown(c);
    });

// Dequeues n elements stacked along a new dimension 0.
REGISTER_OP("QueueDequeueMany")
    .Input("handle: string")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(DequeueManyShape);

// As QueueDequeueMany, but once the queue is closed it gives the fewer than n elements
// left (OUT_OF_RANGE only when none are).
REGISTER_OP("QueueDequeueUpTo")
    .Input("handle: string")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(DequeueManyShape);

REGISTER_OP("QueueClose")
    .Input("handle: string")
    .Attr("cancel_pending_enqueues: bool = false")
    .SetIsStateful()
    .SetShapeFn(HandleInput);

REGISTER_OP("QueueSize")
    .Input("handle: string")
    .Output("size: int32")
    .SetIsStateful()
    .SetShapeFn([](ShapeContext* c) {
      RETURN_IF_ERROR(HandleInput(c));
      return shape_fn::Scalar(c);
    });

}  // namespace overseer

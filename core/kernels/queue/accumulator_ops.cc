// Op definitions of TensorFlow's ConditionalAccumulator and its ops (V1, with the handle a
// string scalar "container/name" as the queues'). The blocks of synchronous training.

#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

absl::Status HandleScalar(ShapeContext* c) { return c->WithRank(0, 0); }

}  // namespace

// Sums the gradients of its current time step; see conditional_accumulator.h.
REGISTER_OP("ConditionalAccumulator")
    .Output("handle: string")
    .Attr("dtype: {float, double}")
    .Attr("shape: shape")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("reduction_type: string = 'MEAN'")  // or 'SUM'
    .SetIsStateful()
    .SetShapeFn(shape_fn::Scalar);

// Adds `gradient` unless local_step is older than the accumulator's global step.
REGISTER_OP("AccumulatorApplyGradient")
    .Input("handle: string")
    .Input("local_step: int64")
    .Input("gradient: dtype")
    .Attr("dtype: {float, double}")
    .SetIsStateful()
    .SetShapeFn([](ShapeContext* c) {
      RETURN_IF_ERROR(HandleScalar(c));
      return c->WithRank(1, 0);
    });

// Waits for num_required gradients, outputs their mean, advances the global step.
REGISTER_OP("AccumulatorTakeGradient")
    .Input("handle: string")
    .Input("num_required: int32")
    .Output("average: dtype")
    .Attr("dtype: {float, double}")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn([](ShapeContext* c) {
      RETURN_IF_ERROR(HandleScalar(c));
      RETURN_IF_ERROR(c->WithRank(1, 0));
      return shape_fn::Unknown(c);
    });

REGISTER_OP("AccumulatorSetGlobalStep")
    .Input("handle: string")
    .Input("new_global_step: int64")
    .SetIsStateful()
    .SetShapeFn([](ShapeContext* c) {
      RETURN_IF_ERROR(HandleScalar(c));
      return c->WithRank(1, 0);
    });

// Not in TensorFlow: fails the waiting and later takes CANCELLED until the next
// AccumulatorSetGlobalStep (the chief's thread ends with its session instead of
// staying blocked).
REGISTER_OP("AccumulatorCancelTakes")
    .Input("handle: string")
    .SetIsStateful()
    .SetShapeFn(HandleScalar);

REGISTER_OP("AccumulatorNumAccumulated")
    .Input("handle: string")
    .Output("num_accumulated: int32")
    .SetIsStateful()
    .SetShapeFn([](ShapeContext* c) {
      RETURN_IF_ERROR(HandleScalar(c));
      return shape_fn::Scalar(c);
    });

}  // namespace overseer

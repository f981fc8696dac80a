// Summary ops: each outputs one serialized Summary proto as a DT_STRING scalar, which a
// SummaryWriter writes to an event file (TensorFlow's summary ops, same specs).

#include "core/op_registry.h"
#include "core/shape_inference.h"

namespace overseer {

REGISTER_OP("ScalarSummary")
    .Input("tags: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: {float, double, int32, int64}")
    .SetShapeFn(shape_fn::Scalar);

REGISTER_OP("HistogramSummary")
    .Input("tag: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: {float, double, int32, int64} = float")
    .SetShapeFn(shape_fn::Scalar);

REGISTER_OP("TensorSummaryV2")
    .Input("tag: string")
    .Input("tensor: T")
    .Input("serialized_summary_metadata: string")
    .Output("summary: string")
    .Attr("T: type")
    .SetShapeFn(shape_fn::Scalar);

REGISTER_OP("TensorSummary")
    .Input("tensor: T")
    .Output("summary: string")
    .Attr("T: type")
    .Attr("description: string = ''")
    .Attr("labels: list(string) = []")
    .Attr("display_name: string = ''")
    .SetShapeFn(shape_fn::Scalar);

REGISTER_OP("MergeSummary")
    .Input("inputs: N * string")
    .Output("summary: string")
    .Attr("N: int >= 1")
    .SetShapeFn(shape_fn::Scalar);

}  // namespace overseer

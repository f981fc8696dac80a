// Op definitions of the basic array ops: constants, placeholders, identities, shapes
// and fills.

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

absl::Status ConstShape(ShapeContext* c) {
  Tensor value;
  RETURN_IF_ERROR(c->GetAttr("value", &value));
  c->set_output(0, PartialShape(value.shape()));
  return absl::OkStatus();
}

absl::Status ShapeAttrShape(ShapeContext* c) {
  PartialShape shape;
  RETURN_IF_ERROR(c->GetAttr("shape", &shape));
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status PlaceholderWithDefaultShape(ShapeContext* c) {
  PartialShape shape;
  RETURN_IF_ERROR(c->GetAttr("shape", &shape));
  if (!shape.IsCompatibleWith(c->input(0))) {
    return c->Error(absl::StrCat("default value of shape ", c->input(0).DebugString(),
                                 " is incompatible with the declared shape ", shape.DebugString()));
  }
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status ShapeOfShape(ShapeContext* c) {
  const PartialShape& in = c->input(0);
  c->set_output(0, PartialShape({in.known_rank() ? in.rank() : -1}));
  return absl::OkStatus();
}

absl::Status FillShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(0, 1));
  RETURN_IF_ERROR(c->WithRank(1, 0));
  c->set_output(0, ShapeFromShapeInput(*c, 0));
  return absl::OkStatus();
}

absl::Status ReducedShapeShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(0, 1));
  const PartialShape& in = c->input(0);
  c->set_output(0, PartialShape({in.known_rank() ? in.dim(0) : -1}));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Const")
    .Output("output: dtype")
    .Attr("value: tensor")
    .Attr("dtype: type")
    .SetShapeFn(ConstShape);

REGISTER_OP("Placeholder")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape = unknown")
    .SetShapeFn(ShapeAttrShape);

REGISTER_OP("PlaceholderWithDefault")
    .Input("input: dtype")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .SetShapeFn(PlaceholderWithDefaultShape);

REGISTER_OP("Identity")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fn::Unchanged);

REGISTER_OP("StopGradient")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fn::Unchanged);

REGISTER_OP("NoOp").SetShapeFn(shape_fn::NoOutputs);

REGISTER_OP("Shape")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(ShapeOfShape);

REGISTER_OP("Size")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(shape_fn::Scalar);

REGISTER_OP("Fill")
    .Input("dims: index_type")
    .Input("value: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("index_type: {int32, int64} = DT_INT32")
    .SetShapeFn(FillShape);

REGISTER_OP("ZerosLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: type")
    .SetShapeFn(shape_fn::Unchanged);

REGISTER_OP("OnesLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {float, double, int32, int64, bool}")
    .SetShapeFn(shape_fn::Unchanged);

// input_shape with every axis in `axes` set to 1 (negative axes count from the end);
// what a reduction's gradient reshapes to before broadcasting back.
REGISTER_OP("ReducedShape")
    .Input("input_shape: int32")
    .Input("axes: int32")
    .Output("output: int32")
    .SetShapeFn(ReducedShapeShape);

}  // namespace overseer

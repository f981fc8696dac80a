// Op definitions of variables and their assignments.

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

absl::Status VariableShape(ShapeContext* c) {
  PartialShape shape;
  RETURN_IF_ERROR(c->GetAttr("shape", &shape));
  c->set_output(0, shape);
  return absl::OkStatus();
}

// Output = the variable's shape merged with the value's; with validate_shape=false the
// value's shape (an Assign may then change the variable's shape).
absl::Status AssignShape(ShapeContext* c) {
  bool validate = true;
  if (c->op().FindAttr("validate_shape") != nullptr) {
    RETURN_IF_ERROR(c->GetAttr("validate_shape", &validate));
  }
  if (!validate) {
    c->set_output(0, c->input(1));
    return absl::OkStatus();
  }
  auto merged = c->input(0).Merge(c->input(1));
  if (!merged.ok()) {
    return c->Error(absl::StrCat("variable of shape ", c->input(0).DebugString(),
                                 " cannot take a value of shape ", c->input(1).DebugString()));
  }
  c->set_output(0, *merged);
  return absl::OkStatus();
}

absl::Status CountUpToShape(ShapeContext* c) {
  const PartialShape& ref = c->input(0);
  if (ref.known_rank() && ref.rank() != 0) {
    return c->Error(
        absl::StrCat("CountUpTo needs a scalar variable, got shape ", ref.DebugString()));
  }
  c->set_output(0, PartialShape::Scalar());
  return absl::OkStatus();
}

absl::Status VectorOfUnknownLength(ShapeContext* c) {
  c->set_output(0, PartialShape({-1}));
  return absl::OkStatus();
}

}  // namespace

// A variable: a persistent tensor in the resource container `container` (the default
// container when empty) under `shared_name` (the node's name when empty).
REGISTER_OP("VariableV2")
    .Output("ref: Ref(dtype)")
    .Attr("shape: shape")
    .Attr("dtype: type")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(VariableShape);

REGISTER_OP("Assign")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: type")
    .Attr("validate_shape: bool = true")
    .Attr("use_locking: bool = true")
    .SetShapeFn(AssignShape);

REGISTER_OP("AssignAdd")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: {float, double, int32, int64}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(AssignShape);

REGISTER_OP("AssignSub")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: {float, double, int32, int64}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(AssignShape);

// ref *= value, read and written under the variable's lock: an Overseer op, for
// updates that must not be lost when steps interleave (Adam's beta powers).
REGISTER_OP("AssignMul")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: {float, double, int32, int64}")
    .SetShapeFn(AssignShape);

// ref[indices[i], ...] = updates[i, ...] (ScatterUpdate), += (ScatterAdd), -=
// (ScatterSub); updates.shape = indices.shape + ref.shape[1:]. Repeated indices apply in
// order. Outputs the variable.
#define OVERSEER_SCATTER_OP(name, types)                \
  REGISTER_OP(name)                                     \
      .Input("ref: Ref(T)")                             \
      .Input("indices: Tindices")                       \
      .Input("updates: T")                              \
      .Output("output_ref: Ref(T)")                     \
      .Attr("T: " types)                                \
      .Attr("Tindices: {int32, int64}")                 \
      .Attr("use_locking: bool = true")                 \
      .SetShapeFn([](ShapeContext* c) -> absl::Status { \
        c->set_output(0, c->input(0));                  \
        return absl::OkStatus();                        \
      })
OVERSEER_SCATTER_OP("ScatterUpdate", "type");
OVERSEER_SCATTER_OP("ScatterAdd", "{float, double, int32, int64}");
OVERSEER_SCATTER_OP("ScatterSub", "{float, double, int32, int64}");
#undef OVERSEER_SCATTER_OP

// TensorFlow's CountUpTo: adds 1 to the scalar `ref` and outputs the value it had,
// until that value reaches `limit`: then OUT_OF_RANGE ("Reached limit of <limit>")
// and `ref` is left as it is.
REGISTER_OP("CountUpTo")
    .Input("ref: Ref(T)")
    .Output("output: T")
    .Attr("limit: int")
    .Attr("T: {int32, int64}")
    .SetShapeFn(CountUpToShape);

REGISTER_OP("IsVariableInitialized")
    .Input("ref: Ref(dtype)")
    .Output("is_initialized: bool")
    .Attr("dtype: type")
    .SetShapeFn(shape_fn::Scalar);

// The names in var_names whose is_initialized flag is false, in order.
REGISTER_OP("ReportUninitializedVariables")
    .Input("is_initialized: N * bool")
    .Output("uninitialized: string")
    .Attr("N: int >= 0")
    .Attr("var_names: list(string) = []")
    .SetShapeFn(VectorOfUnknownLength);

}  // namespace overseer

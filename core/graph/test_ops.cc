// Ops used only by the graph tests (no kernels): sources, unary/binary ops and a
// variable-like ref producer.

#include "core/op_registry.h"
#include "core/shape_inference.h"

namespace overseer {
namespace {

absl::Status ShapeFromAttr(ShapeContext* c) {
  PartialShape shape;
  if (auto s = c->GetAttr("shape", &shape); !s.ok()) return s;
  c->set_output(0, shape);
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("TestSource")
    .Output("out: T")
    .Attr("T: type = DT_FLOAT")
    .Attr("shape: shape = { unknown_rank: true }")
    .SetShapeFn(ShapeFromAttr);

REGISTER_OP("TestUnary")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {float, int32}")
    .SetShapeFn(shape_fn::Unchanged);

REGISTER_OP("TestBinary")
    .Input("x: T")
    .Input("y: T")
    .Output("z: T")
    .Attr("T: type")
    .SetShapeFn(shape_fn::BroadcastBinary);

REGISTER_OP("TestRefSource")
    .Output("ref: Ref(T)")
    .Attr("T: type")
    .SetIsStateful()
    .SetShapeFn(shape_fn::Unknown);

REGISTER_OP("TestAssignRef")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("out: Ref(T)")
    .Attr("T: type")
    .SetShapeFn(shape_fn::Unchanged);

REGISTER_OP("TestNeedsInt").Output("out: float").Attr("n: int >= 1").SetShapeFn(shape_fn::Scalar);

REGISTER_OP("TestTwoOutputs").Output("a: float").Output("b: int32").SetShapeFn(shape_fn::Scalar);

}  // namespace overseer

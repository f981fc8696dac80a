// Op definitions of the math group: elementwise arithmetic and comparisons, AddN,
// BroadcastGradientArgs, MatMul, reductions, ArgMax, Cast and Select. Names, arguments
// and attrs follow TensorFlow's.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/math/axes.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

constexpr char kNumeric[] = "T: {float, double, int32, int64}";
constexpr char kFloating[] = "T: {float, double}";

absl::Status BroadcastGradientArgsShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(0, 1));
  RETURN_IF_ERROR(c->WithRank(1, 1));
  const Tensor* s0 = c->input_tensor(0);
  const Tensor* s1 = c->input_tensor(1);
  if (s0 == nullptr || s1 == nullptr) {
    c->set_output(0, PartialShape({-1}));
    c->set_output(1, PartialShape({-1}));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> v0, ReadIndexVector(*s0, "s0"));
  ASSIGN_OR_RETURN(std::vector<int64_t> v1, ReadIndexVector(*s1, "s1"));
  std::vector<int64_t> r0, r1;
  absl::Status status = BroadcastGradientAxes(v0, v1, &r0, &r1);
  if (!status.ok()) return c->Error(status.message());
  c->set_output(0, PartialShape({static_cast<int64_t>(r0.size())}));
  c->set_output(1, PartialShape({static_cast<int64_t>(r1.size())}));
  return absl::OkStatus();
}

absl::Status MatMulShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(0, 2));
  RETURN_IF_ERROR(c->WithRank(1, 2));
  bool transpose_a = false, transpose_b = false;
  RETURN_IF_ERROR(c->GetAttr("transpose_a", &transpose_a));
  RETURN_IF_ERROR(c->GetAttr("transpose_b", &transpose_b));
  const PartialShape& a = c->input(0);
  const PartialShape& b = c->input(1);
  const int64_t m = a.known_rank() ? a.dim(transpose_a ? 1 : 0) : -1;
  const int64_t ka = a.known_rank() ? a.dim(transpose_a ? 0 : 1) : -1;
  const int64_t kb = b.known_rank() ? b.dim(transpose_b ? 1 : 0) : -1;
  const int64_t n = b.known_rank() ? b.dim(transpose_b ? 0 : 1) : -1;
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return c->Error(absl::StrCat("Dimensions must be equal, but are ", ka, " and ", kb,
                                 " for MatMul with input shapes: ", a.DebugString(), ", ",
                                 b.DebugString()));
  }
  c->set_output(0, PartialShape({m, n}));
  return absl::OkStatus();
}

absl::Status ReductionShape(ShapeContext* c) {
  bool keep_dims = false;
  RETURN_IF_ERROR(c->GetAttr("keep_dims", &keep_dims));
  const PartialShape& in = c->input(0);
  const Tensor* axes_tensor = c->input_tensor(1);
  if (!in.known_rank()) return absl::OkStatus();
  if (axes_tensor == nullptr) {
    if (keep_dims) c->set_output(0, PartialShape(std::vector<int64_t>(in.rank(), -1)));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ReadIndexVector(*axes_tensor, "reduction_indices"));
  absl::StatusOr<std::vector<bool>> mask = ReductionMask(axes, in.rank());
  if (!mask.ok()) return c->Error(mask.status().message());
  std::vector<int64_t> dims;
  for (int d = 0; d < in.rank(); ++d) {
    if (!(*mask)[d]) {
      dims.push_back(in.dim(d));
    } else if (keep_dims) {
      dims.push_back(1);
    }
  }
  c->set_output(0, PartialShape(std::move(dims)));
  return absl::OkStatus();
}

absl::Status ArgMaxShape(ShapeContext* c) {
  const PartialShape& in = c->input(0);
  if (!in.known_rank()) return absl::OkStatus();
  if (in.rank() == 0) return c->Error("ArgMax of a scalar: the input must have rank >= 1");
  const Tensor* dim_tensor = c->input_tensor(1);
  if (dim_tensor == nullptr) {
    c->set_output(0, PartialShape(std::vector<int64_t>(in.rank() - 1, -1)));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> axis, ReadIndexVector(*dim_tensor, "dimension"));
  if (axis.size() != 1) return c->Error("dimension must hold exactly one axis");
  absl::StatusOr<std::vector<bool>> mask = ReductionMask(axis, in.rank());
  if (!mask.ok()) return c->Error(mask.status().message());
  std::vector<int64_t> dims;
  for (int d = 0; d < in.rank(); ++d) {
    if (!(*mask)[d]) dims.push_back(in.dim(d));
  }
  c->set_output(0, PartialShape(std::move(dims)));
  return absl::OkStatus();
}

absl::Status SelectShape(ShapeContext* c) {
  const PartialShape& cond = c->input(0);
  const PartialShape& t = c->input(1);
  const PartialShape& e = c->input(2);
  absl::StatusOr<PartialShape> values = BroadcastShapes(t, e);
  if (!values.ok()) return c->Error(values.status().message());
  // TensorFlow's case: a vector condition picks whole rows of higher-rank values.
  if (cond.known_rank() && cond.rank() == 1 && values->known_rank() && values->rank() > 1) {
    const int64_t rows = values->dim(0), n = cond.dim(0);
    if (rows >= 0 && n >= 0 && rows != n) {
      return c->Error(absl::StrCat("A vector condition of shape ", cond.DebugString(),
                                   " must match the first dimension of ", values->DebugString()));
    }
    std::vector<int64_t> dims = values->dims();
    if (dims[0] < 0) dims[0] = n;
    c->set_output(0, PartialShape(std::move(dims)));
    return absl::OkStatus();
  }
  absl::StatusOr<PartialShape> out = BroadcastShapes(cond, *values);
  if (!out.ok()) return c->Error(out.status().message());
  c->set_output(0, *out);
  return absl::OkStatus();
}

}  // namespace

#define OVERSEER_UNARY_OP(name, types) \
  REGISTER_OP(name).Input("x: T").Output("y: T").Attr(types).SetShapeFn(shape_fn::Unchanged)
OVERSEER_UNARY_OP("Neg", kNumeric);
OVERSEER_UNARY_OP("Square", kNumeric);
OVERSEER_UNARY_OP("Sqrt", kFloating);
OVERSEER_UNARY_OP("Exp", kFloating);
OVERSEER_UNARY_OP("Log", kFloating);
OVERSEER_UNARY_OP("Reciprocal", kFloating);
OVERSEER_UNARY_OP("Floor", kFloating);
OVERSEER_UNARY_OP("Sin", kFloating);
OVERSEER_UNARY_OP("Cos", kFloating);
#undef OVERSEER_UNARY_OP

#define OVERSEER_BINARY_OP(name, types, out)                                        \
  REGISTER_OP(name).Input("x: T").Input("y: T").Output(out).Attr(types).SetShapeFn( \
      shape_fn::BroadcastBinary)
OVERSEER_BINARY_OP("Add", kNumeric, "z: T");
OVERSEER_BINARY_OP("Sub", kNumeric, "z: T");
OVERSEER_BINARY_OP("Mul", kNumeric, "z: T");
OVERSEER_BINARY_OP("Div", kNumeric, "z: T");
OVERSEER_BINARY_OP("Maximum", kNumeric, "z: T");
OVERSEER_BINARY_OP("Minimum", kNumeric, "z: T");
OVERSEER_BINARY_OP("Pow", kNumeric, "z: T");
OVERSEER_BINARY_OP("Equal", "T: {float, double, int32, int64, bool}", "z: bool");
OVERSEER_BINARY_OP("NotEqual", "T: {float, double, int32, int64, bool}", "z: bool");
OVERSEER_BINARY_OP("Less", kNumeric, "z: bool");
OVERSEER_BINARY_OP("LessEqual", kNumeric, "z: bool");
OVERSEER_BINARY_OP("Greater", kNumeric, "z: bool");
OVERSEER_BINARY_OP("GreaterEqual", kNumeric, "z: bool");
#undef OVERSEER_BINARY_OP

REGISTER_OP("LogicalAnd")
    .Input("x: bool")
    .Input("y: bool")
    .Output("z: bool")
    .SetShapeFn(shape_fn::BroadcastBinary);

REGISTER_OP("AddN")
    .Input("inputs: N * T")
    .Output("sum: T")
    .Attr("N: int >= 1")
    .Attr(kNumeric)
    .SetShapeFn(shape_fn::MergeAllInputs);

REGISTER_OP("BroadcastGradientArgs")
    .Input("s0: T")
    .Input("s1: T")
    .Output("r0: T")
    .Output("r1: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn(BroadcastGradientArgsShape);

REGISTER_OP("MatMul")
    .Input("a: T")
    .Input("b: T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr(kNumeric)
    .SetShapeFn(MatMulShape);

#define OVERSEER_REDUCTION_OP(name)            \
  REGISTER_OP(name)                            \
      .Input("input: T")                       \
      .Input("reduction_indices: Tidx")        \
      .Output("output: T")                     \
      .Attr("keep_dims: bool = false")         \
      .Attr(kNumeric)                          \
      .Attr("Tidx: {int32, int64} = DT_INT32") \
      .SetShapeFn(ReductionShape)
OVERSEER_REDUCTION_OP("Sum");
OVERSEER_REDUCTION_OP("Mean");
OVERSEER_REDUCTION_OP("Max");
OVERSEER_REDUCTION_OP("Prod");
#undef OVERSEER_REDUCTION_OP

REGISTER_OP("ArgMax")
    .Input("input: T")
    .Input("dimension: Tidx")
    .Output("output: output_type")
    .Attr(kNumeric)
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .Attr("output_type: {int32, int64} = DT_INT64")
    .SetShapeFn(ArgMaxShape);

REGISTER_OP("Cast")
    .Input("x: SrcT")
    .Output("y: DstT")
    .Attr("SrcT: {float, double, int32, int64, bool}")
    .Attr("DstT: {float, double, int32, int64, bool}")
    .Attr("Truncate: bool = false")
    .SetShapeFn(shape_fn::Unchanged);

REGISTER_OP("Select")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64, bool}")
    .SetShapeFn(SelectShape);

}  // namespace overseer

// Gradients of the math ops (ops_math.h).

#include <vector>

#include "client/graph/gradients.h"
#include "client/graph/gradients_util.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_math.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

using grad_util::BroadcastBinaryGrads;
using grad_util::ScalarLike;
using grad_util::ToInt32;

absl::Status AddGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  return BroadcastBinaryGrads(scope, op, grads[0], grads[0], out);
}
REGISTER_GRADIENT("Add", AddGrad);

absl::Status SubGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  return BroadcastBinaryGrads(scope, op, grads[0], ops::Neg(scope, grads[0]), out);
}
REGISTER_GRADIENT("Sub", SubGrad);

absl::Status MulGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  const Output& g = grads[0];
  return BroadcastBinaryGrads(scope, op, ops::Mul(scope, g, op.input(1)),
                              ops::Mul(scope, op.input(0), g), out);
}
REGISTER_GRADIENT("Mul", MulGrad);

absl::Status DivGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  // d(x/y)/dx = 1/y; d(x/y)/dy = -x/y^2.
  const Output& g = grads[0];
  Output x = op.input(0), y = op.input(1);
  Output gx = ops::Div(scope, g, y);
  Output gy = ops::Mul(scope, g, ops::Div(scope, ops::Div(scope, ops::Neg(scope, x), y), y));
  return BroadcastBinaryGrads(scope, op, gx, gy, out);
}
REGISTER_GRADIENT("Div", DivGrad);

// Maximum/Minimum: the gradient goes to x where x wins (ties to x), else to y.
absl::Status MaxMinGrad(const Scope& scope, const Operation& op, const Output& g,
                        const Output& x_wins, std::vector<Output>* out) {
  Output zeros = ops::ZerosLike(scope, g);
  return BroadcastBinaryGrads(scope, op, ops::Select(scope, x_wins, g, zeros),
                              ops::Select(scope, x_wins, zeros, g), out);
}

absl::Status MaximumGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                         std::vector<Output>* out) {
  Output mask = ops::GreaterEqual(scope, op.input(0), op.input(1));
  return MaxMinGrad(scope, op, grads[0], mask, out);
}
REGISTER_GRADIENT("Maximum", MaximumGrad);

absl::Status MinimumGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                         std::vector<Output>* out) {
  Output mask = ops::LessEqual(scope, op.input(0), op.input(1));
  return MaxMinGrad(scope, op, grads[0], mask, out);
}
REGISTER_GRADIENT("Minimum", MinimumGrad);

// d(x^y)/dx = y x^(y-1); d(x^y)/dy = x^y log(x), taken as 0 where x <= 0 (as TensorFlow).
absl::Status PowGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  const Output& g = grads[0];
  Output x = op.input(0), y = op.input(1), z = op.output(0);
  Output gx =
      ops::Mul(scope, g,
               ops::Mul(scope, y, ops::Pow(scope, x, ops::Sub(scope, y, ScalarLike(scope, y, 1)))));
  Output log_x = ops::Select(scope, ops::Greater(scope, x, ops::ZerosLike(scope, x)),
                             ops::Log(scope, x), ops::ZerosLike(scope, x));
  Output gy = ops::Mul(scope, g, ops::Mul(scope, z, log_x));
  return BroadcastBinaryGrads(scope, op, gx, gy, out);
}
REGISTER_GRADIENT("Pow", PowGrad);

absl::Status AddNGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                      std::vector<Output>* out) {
  out->assign(op.num_inputs(), grads[0]);
  return scope.status();
}
REGISTER_GRADIENT("AddN", AddNGrad);

absl::Status NegGrad(const Scope& scope, const Operation& /*op*/, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  out->push_back(ops::Neg(scope, grads[0]));
  return scope.status();
}
REGISTER_GRADIENT("Neg", NegGrad);

absl::Status SquareGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                        std::vector<Output>* out) {
  Output x = op.input(0);
  out->push_back(ops::Mul(scope, grads[0], ops::Mul(scope, ScalarLike(scope, x, 2), x)));
  return scope.status();
}
REGISTER_GRADIENT("Square", SquareGrad);

absl::Status SqrtGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                      std::vector<Output>* out) {
  out->push_back(ops::SqrtGrad(scope, op.output(0), grads[0]));
  return scope.status();
}
REGISTER_GRADIENT("Sqrt", SqrtGrad);

absl::Status ExpGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  out->push_back(ops::Mul(scope, grads[0], op.output(0)));
  return scope.status();
}
REGISTER_GRADIENT("Exp", ExpGrad);

absl::Status LogGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  out->push_back(ops::Mul(scope, grads[0], ops::Reciprocal(scope, op.input(0))));
  return scope.status();
}
REGISTER_GRADIENT("Log", LogGrad);

absl::Status ReciprocalGrad(const Scope& scope, const Operation& op,
                            const std::vector<Output>& grads, std::vector<Output>* out) {
  // d(1/x)/dx = -1/x^2 = -y^2.
  out->push_back(ops::Mul(scope, grads[0], ops::Neg(scope, ops::Square(scope, op.output(0)))));
  return scope.status();
}
REGISTER_GRADIENT("Reciprocal", ReciprocalGrad);

absl::Status SinGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  out->push_back(ops::Mul(scope, grads[0], ops::Cos(scope, op.input(0))));
  return scope.status();
}
REGISTER_GRADIENT("Sin", SinGrad);

absl::Status CosGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  out->push_back(ops::Mul(scope, grads[0], ops::Neg(scope, ops::Sin(scope, op.input(0)))));
  return scope.status();
}
REGISTER_GRADIENT("Cos", CosGrad);

// Floor is flat almost everywhere: no gradient flows through it (TensorFlow's None).
REGISTER_NO_GRADIENT("Floor");

absl::Status SigmoidGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                         std::vector<Output>* out) {
  out->push_back(ops::SigmoidGrad(scope, op.output(0), grads[0]));
  return scope.status();
}
REGISTER_GRADIENT("Sigmoid", SigmoidGrad);

absl::Status TanhGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                      std::vector<Output>* out) {
  out->push_back(ops::TanhGrad(scope, op.output(0), grads[0]));
  return scope.status();
}
REGISTER_GRADIENT("Tanh", TanhGrad);

absl::Status MatMulGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                        std::vector<Output>* out) {
  bool ta = false, tb = false;
  RETURN_IF_ERROR(GetNodeAttr(op.node()->def(), "transpose_a", &ta));
  RETURN_IF_ERROR(GetNodeAttr(op.node()->def(), "transpose_b", &tb));
  const Output& g = grads[0];
  Output a = op.input(0), b = op.input(1);
  if (!ta && !tb) {
    out->push_back(ops::MatMul(scope, g, b, false, true));
    out->push_back(ops::MatMul(scope, a, g, true, false));
  } else if (!ta && tb) {
    out->push_back(ops::MatMul(scope, g, b, false, false));
    out->push_back(ops::MatMul(scope, g, a, true, false));
  } else if (ta && !tb) {
    out->push_back(ops::MatMul(scope, b, g, false, true));
    out->push_back(ops::MatMul(scope, a, g, false, false));
  } else {
    out->push_back(ops::MatMul(scope, b, g, true, true));
    out->push_back(ops::MatMul(scope, g, a, true, true));
  }
  return scope.status();
}
REGISTER_GRADIENT("MatMul", MatMulGrad);

// The gradient of a reduction, before scaling: grads[0] reshaped to the input's rank
// (reduced axes of size 1) and broadcast to the input's shape.
Output BroadcastReducedGrad(const Scope& scope, const Operation& op, const Output& g) {
  Output input_shape = ops::Shape(scope, op.input(0));
  Output kept = ops::ReducedShape(scope, input_shape, ToInt32(scope, op.input(1)));
  return ops::BroadcastTo(scope, ops::Reshape(scope, g, kept), input_shape);
}

absl::Status SumGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  out->push_back(BroadcastReducedGrad(scope, op, grads[0]));
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("Sum", SumGrad);

absl::Status MeanGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                      std::vector<Output>* out) {
  const DataType t = RemoveRefType(op.input(0).dtype());
  Output in_size = ops::Cast(scope, ops::Size(scope, op.input(0)), t);
  Output out_size = ops::Maximum(scope, ops::Cast(scope, ops::Size(scope, op.output(0)), t),
                                 ops::ConstOfType(scope, t, 1));
  Output factor = ops::Div(scope, in_size, out_size);
  out->push_back(ops::Div(scope, BroadcastReducedGrad(scope, op, grads[0]), factor));
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("Mean", MeanGrad);

absl::Status MaxGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  // The gradient is split evenly among the elements equal to the maximum.
  Output x = op.input(0), axes = op.input(1);
  Output kept = ops::ReducedShape(scope, ops::Shape(scope, x), ToInt32(scope, axes));
  Output y = ops::Reshape(scope, op.output(0), kept);
  Output g = ops::Reshape(scope, grads[0], kept);
  Output indicators = ops::Cast(scope, ops::Equal(scope, y, x), RemoveRefType(x.dtype()));
  Output num_selected = ops::Reshape(scope, ops::Sum(scope, indicators, axes), kept);
  out->push_back(ops::Mul(scope, ops::Div(scope, indicators, num_selected), g));
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("Max", MaxGrad);

REGISTER_NO_GRADIENT("Equal");
REGISTER_NO_GRADIENT("Less");
REGISTER_NO_GRADIENT("Greater");
REGISTER_NO_GRADIENT("LessEqual");
REGISTER_NO_GRADIENT("GreaterEqual");
REGISTER_NO_GRADIENT("ArgMax");
REGISTER_NO_GRADIENT("BroadcastGradientArgs");

}  // namespace
}  // namespace overseer

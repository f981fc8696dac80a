#include "client/graph/gradients_util.h"

#include "client/graph/ops_array.h"
#include "client/graph/ops_input.h"
#include "client/graph/ops_math.h"

namespace overseer {
namespace grad_util {

absl::Status BroadcastBinaryGrads(const Scope& scope, const Operation& op, Output gx, Output gy,
                                  std::vector<Output>* grad_outputs) {
  const Output x = op.input(0);
  const Output y = op.input(1);
  const PartialShape& sx = x.shape();
  const PartialShape& sy = y.shape();
  if (sx.IsFullyDefined() && sy.IsFullyDefined() && sx == sy) {
    grad_outputs->push_back(gx);
    grad_outputs->push_back(gy);
    return scope.status();
  }
  Output shape_x = ops::Shape(scope, x);
  Output shape_y = ops::Shape(scope, y);
  ops::BroadcastGradientArgsOutput r = ops::BroadcastGradientArgs(scope, shape_x, shape_y);
  if (gx.valid()) gx = ops::Reshape(scope, ops::Sum(scope, gx, r.r0), shape_x);
  if (gy.valid()) gy = ops::Reshape(scope, ops::Sum(scope, gy, r.r1), shape_y);
  grad_outputs->push_back(gx);
  grad_outputs->push_back(gy);
  return scope.status();
}

Output ScalarLike(const Scope& scope, const Output& x, double value) {
  return ops::ConstOfType(scope, RemoveRefType(x.dtype()), value);
}

Output ToInt32(const Scope& scope, const Output& t) {
  if (RemoveRefType(t.dtype()) == DT_INT32) return t;
  return ops::Cast(scope, t, DT_INT32);
}

Output GradOrZeros(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                   int i) {
  if (grads[i].valid()) return grads[i];
  return ops::ZerosLike(scope, op.output(i));
}

}  // namespace grad_util
}  // namespace overseer

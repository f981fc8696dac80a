#ifndef OVERSEER_CLIENT_GRAPH_OPS_MATH_H_
#define OVERSEER_CLIENT_GRAPH_OPS_MATH_H_

// Math ops: element-wise arithmetic with numpy broadcasting, comparisons, MatMul and
// reductions. Conventions as in ops_array.h.

#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"

namespace overseer {
namespace ops {

Output Add(const Scope& scope, Input x, Input y);
Output Sub(const Scope& scope, Input x, Input y);
Output Mul(const Scope& scope, Input x, Input y);
Output Div(const Scope& scope, Input x, Input y);
Output Maximum(const Scope& scope, Input x, Input y);
Output Minimum(const Scope& scope, Input x, Input y);
// x^y; for integers, a negative y fails INVALID_ARGUMENT.
Output Pow(const Scope& scope, Input x, Input y);
// The sum of same-shaped tensors.
Output AddN(const Scope& scope, const InputList& inputs);

Output Neg(const Scope& scope, Input x);
Output Square(const Scope& scope, Input x);
Output Sqrt(const Scope& scope, Input x);
Output Exp(const Scope& scope, Input x);
Output Log(const Scope& scope, Input x);
Output Reciprocal(const Scope& scope, Input x);
Output Sigmoid(const Scope& scope, Input x);
Output Tanh(const Scope& scope, Input x);
Output Floor(const Scope& scope, Input x);
Output Sin(const Scope& scope, Input x);
Output Cos(const Scope& scope, Input x);

Output MatMul(const Scope& scope, Input a, Input b, bool transpose_a = false,
              bool transpose_b = false);

// Reductions over `axes` (a scalar or vector of int32/int64; negative counts from the
// end; an empty vector reduces nothing).
Output Sum(const Scope& scope, Input input, Input axes, bool keep_dims = false);
Output Mean(const Scope& scope, Input input, Input axes, bool keep_dims = false);
Output Max(const Scope& scope, Input input, Input axes, bool keep_dims = false);
Output ArgMax(const Scope& scope, Input input, Input dimension, DataType output_type = DT_INT64);

// Comparisons, giving bool.
Output Equal(const Scope& scope, Input x, Input y);
Output Less(const Scope& scope, Input x, Input y);
Output Greater(const Scope& scope, Input x, Input y);
Output LessEqual(const Scope& scope, Input x, Input y);
Output GreaterEqual(const Scope& scope, Input x, Input y);

// Gradient helpers: dy * d(f)/dx expressed through the output y.
Output SqrtGrad(const Scope& scope, Input y, Input dy);
Output SigmoidGrad(const Scope& scope, Input y, Input dy);
Output TanhGrad(const Scope& scope, Input y, Input dy);

}  // namespace ops
}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPS_MATH_H_

#include "client/graph/ops_math.h"

#include "client/graph/graph_builder.h"

namespace overseer {
namespace ops {

#define OVERSEER_CLIENT_UNARY(Name)                                    \
  Output Name(const Scope& scope, Input x) {                           \
    return FirstOutput(NodeBuilder(scope, #Name).Input(x).Finalize()); \
  }
#define OVERSEER_CLIENT_BINARY(Name)                                            \
  Output Name(const Scope& scope, Input x, Input y) {                           \
    return FirstOutput(NodeBuilder(scope, #Name).Input(x).Input(y).Finalize()); \
  }

OVERSEER_CLIENT_BINARY(Add)
OVERSEER_CLIENT_BINARY(Sub)
OVERSEER_CLIENT_BINARY(Mul)
OVERSEER_CLIENT_BINARY(Div)
OVERSEER_CLIENT_BINARY(Maximum)
OVERSEER_CLIENT_BINARY(Pow)
OVERSEER_CLIENT_BINARY(Minimum)
OVERSEER_CLIENT_BINARY(Equal)
OVERSEER_CLIENT_BINARY(Less)
OVERSEER_CLIENT_BINARY(Greater)
OVERSEER_CLIENT_BINARY(LessEqual)
OVERSEER_CLIENT_BINARY(GreaterEqual)
OVERSEER_CLIENT_BINARY(SqrtGrad)
OVERSEER_CLIENT_BINARY(SigmoidGrad)
OVERSEER_CLIENT_BINARY(TanhGrad)

OVERSEER_CLIENT_UNARY(Neg)
OVERSEER_CLIENT_UNARY(Square)
OVERSEER_CLIENT_UNARY(Sqrt)
OVERSEER_CLIENT_UNARY(Exp)
OVERSEER_CLIENT_UNARY(Log)
OVERSEER_CLIENT_UNARY(Reciprocal)
OVERSEER_CLIENT_UNARY(Floor)
OVERSEER_CLIENT_UNARY(Sin)
OVERSEER_CLIENT_UNARY(Cos)
OVERSEER_CLIENT_UNARY(Sigmoid)
OVERSEER_CLIENT_UNARY(Tanh)

#undef OVERSEER_CLIENT_UNARY
#undef OVERSEER_CLIENT_BINARY

Output AddN(const Scope& scope, const InputList& inputs) {
  return FirstOutput(NodeBuilder(scope, "AddN").Input(inputs).Finalize());
}

Output MatMul(const Scope& scope, Input a, Input b, bool transpose_a, bool transpose_b) {
  return FirstOutput(NodeBuilder(scope, "MatMul")
                         .Input(a)
                         .Input(b)
                         .Attr("transpose_a", transpose_a)
                         .Attr("transpose_b", transpose_b)
                         .Finalize());
}

namespace {
Output Reduction(const Scope& scope, const char* op, const Input& input, const Input& axes,
                 bool keep_dims) {
  return FirstOutput(
      NodeBuilder(scope, op).Input(input).Input(axes).Attr("keep_dims", keep_dims).Finalize());
}
}  // namespace

Output Sum(const Scope& scope, Input input, Input axes, bool keep_dims) {
  return Reduction(scope, "Sum", input, axes, keep_dims);
}
Output Mean(const Scope& scope, Input input, Input axes, bool keep_dims) {
  return Reduction(scope, "Mean", input, axes, keep_dims);
}
Output Max(const Scope& scope, Input input, Input axes, bool keep_dims) {
  return Reduction(scope, "Max", input, axes, keep_dims);
}

Output ArgMax(const Scope& scope, Input input, Input dimension, DataType output_type) {
  return FirstOutput(NodeBuilder(scope, "ArgMax")
                         .Input(input)
                         .Input(dimension)
                         .Attr("output_type", output_type)
                         .Finalize());
}

}  // namespace ops
}  // namespace overseer

#include "client/graph/ops_nn.h"

#include "client/graph/graph_builder.h"

namespace overseer {
namespace ops {

Output BiasAdd(const Scope& scope, Input value, Input bias) {
  return FirstOutput(NodeBuilder(scope, "BiasAdd").Input(value).Input(bias).Finalize());
}

Output BiasAddGrad(const Scope& scope, Input out_backprop) {
  return FirstOutput(NodeBuilder(scope, "BiasAddGrad").Input(out_backprop).Finalize());
}

Output Relu(const Scope& scope, Input features) {
  return FirstOutput(NodeBuilder(scope, "Relu").Input(features).Finalize());
}

Output ReluGrad(const Scope& scope, Input gradients, Input features) {
  return FirstOutput(NodeBuilder(scope, "ReluGrad").Input(gradients).Input(features).Finalize());
}

Output Relu6(const Scope& scope, Input features) {
  return FirstOutput(NodeBuilder(scope, "Relu6").Input(features).Finalize());
}

Output Relu6Grad(const Scope& scope, Input gradients, Input features) {
  return FirstOutput(NodeBuilder(scope, "Relu6Grad").Input(gradients).Input(features).Finalize());
}

Output Elu(const Scope& scope, Input features) {
  return FirstOutput(NodeBuilder(scope, "Elu").Input(features).Finalize());
}

Output EluGrad(const Scope& scope, Input gradients, Input outputs) {
  return FirstOutput(NodeBuilder(scope, "EluGrad").Input(gradients).Input(outputs).Finalize());
}

Output L2Loss(const Scope& scope, Input t) {
  return FirstOutput(NodeBuilder(scope, "L2Loss").Input(t).Finalize());
}

Output Softmax(const Scope& scope, Input logits) {
  return FirstOutput(NodeBuilder(scope, "Softmax").Input(logits).Finalize());
}

Output LogSoftmax(const Scope& scope, Input logits) {
  return FirstOutput(NodeBuilder(scope, "LogSoftmax").Input(logits).Finalize());
}

namespace {
SoftmaxCrossEntropyOutput TwoOutputs(const Operation& op) {
  if (!op.valid()) return {};
  return {op.output(0), op.output(1)};
}
}  // namespace

SoftmaxCrossEntropyOutput SoftmaxCrossEntropyWithLogits(const Scope& scope, Input features,
                                                        Input labels) {
  return TwoOutputs(
      NodeBuilder(scope, "SoftmaxCrossEntropyWithLogits").Input(features).Input(labels).Finalize());
}

SoftmaxCrossEntropyOutput SparseSoftmaxCrossEntropyWithLogits(const Scope& scope, Input features,
                                                              Input labels) {
  return TwoOutputs(NodeBuilder(scope, "SparseSoftmaxCrossEntropyWithLogits")
                        .Input(features)
                        .Input(labels)
                        .Finalize());
}

}  // namespace ops
}  // namespace overseer

// Gradients of the neural-network ops (ops_nn.h).

#include <vector>

#include "absl/strings/str_cat.h"
#include "client/graph/gradients.h"
#include "client/graph/gradients_util.h"
#include "client/graph/graph_builder.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_math.h"
#include "client/graph/ops_nn.h"

namespace overseer {
namespace {

absl::Status BiasAddGrad(const Scope& scope, const Operation& /*op*/,
                         const std::vector<Output>& grads, std::vector<Output>* out) {
  out->push_back(grads[0]);
  out->push_back(ops::BiasAddGrad(scope, grads[0]));
  return scope.status();
}
REGISTER_GRADIENT("BiasAdd", BiasAddGrad);

absl::Status ReluGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                      std::vector<Output>* out) {
  // relu(x) > 0 exactly where x > 0, so the output serves as the features.
  out->push_back(ops::ReluGrad(scope, grads[0], op.output(0)));
  return scope.status();
}
REGISTER_GRADIENT("Relu", ReluGrad);

absl::Status Relu6Grad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                       std::vector<Output>* out) {
  out->push_back(ops::Relu6Grad(scope, grads[0], op.input(0)));
  return scope.status();
}
REGISTER_GRADIENT("Relu6", Relu6Grad);

absl::Status EluGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                     std::vector<Output>* out) {
  out->push_back(ops::EluGrad(scope, grads[0], op.output(0)));
  return scope.status();
}
REGISTER_GRADIENT("Elu", EluGrad);

absl::Status L2LossGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                        std::vector<Output>* out) {
  // d(sum(t^2) / 2)/dt = t, times the scalar gradient.
  out->push_back(ops::Mul(scope, op.input(0), grads[0]));
  return scope.status();
}
REGISTER_GRADIENT("L2Loss", L2LossGrad);

absl::Status SoftmaxGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                         std::vector<Output>* out) {
  // (g - sum(g * y, -1)) * y.
  Output y = op.output(0);
  Output sum = ops::Sum(scope, ops::Mul(scope, grads[0], y), -1, /*keep_dims=*/true);
  out->push_back(ops::Mul(scope, ops::Sub(scope, grads[0], sum), y));
  return scope.status();
}
REGISTER_GRADIENT("Softmax", SoftmaxGrad);

absl::Status LogSoftmaxGrad(const Scope& scope, const Operation& op,
                            const std::vector<Output>& grads, std::vector<Output>* out) {
  // g - sum(g, -1) * softmax, softmax = exp(y).
  Output sum = ops::Sum(scope, grads[0], -1, /*keep_dims=*/true);
  out->push_back(ops::Sub(scope, grads[0], ops::Mul(scope, sum, ops::Exp(scope, op.output(0)))));
  return scope.status();
}
REGISTER_GRADIENT("LogSoftmax", LogSoftmaxGrad);

absl::Status SoftmaxCrossEntropyGrad(const Scope& scope, const Operation& op,
                                     const std::vector<Output>& grads, std::vector<Output>* out) {
  // loss = -sum(labels * log_softmax(features)); backprop = softmax(features) - labels.
  const Output& g_loss = grads[0];
  const Output& g_backprop = grads[1];
  Output features = op.input(0);
  Output g_features, g_labels;
  if (g_loss.valid()) {
    Output g = ops::ExpandDims(scope, g_loss, -1);
    g_features = ops::Mul(scope, g, op.output(1));
    g_labels = ops::Mul(scope, g, ops::Neg(scope, ops::LogSoftmax(scope, features)));
  }
  if (g_backprop.valid()) {
    // Through backprop's softmax term, and -1 for the labels.
    Output softmax = ops::Softmax(scope, features);
    Output sum = ops::Sum(scope, ops::Mul(scope, g_backprop, softmax), -1, true);
    Output term = ops::Mul(scope, ops::Sub(scope, g_backprop, sum), softmax);
    g_features = g_features.valid() ? ops::Add(scope, g_features, term) : term;
    Output neg = ops::Neg(scope, g_backprop);
    g_labels = g_labels.valid() ? ops::Add(scope, g_labels, neg) : neg;
  }
  out->push_back(g_features);
  out->push_back(g_labels);
  return scope.status();
}
REGISTER_GRADIENT("SoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropyGrad);

absl::Status SparseSoftmaxCrossEntropyGrad(const Scope& scope, const Operation& op,
                                           const std::vector<Output>& grads,
                                           std::vector<Output>* out) {
  if (grads[1].valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", op.name(),
                     "': the gradient of the backprop output of "
                     "SparseSoftmaxCrossEntropyWithLogits (a second derivative) is not supported"));
  }
  out->push_back(ops::Mul(scope, ops::ExpandDims(scope, grads[0], -1), op.output(1)));
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxCrossEntropyGrad);

// The values' gradient goes to the entries TopKV2 chose; k and the indices have none.
absl::Status TopKGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                      std::vector<Output>* out) {
  if (!grads[0].valid()) {
    out->assign(2, Output());
    return scope.status();
  }
  Operation grad = NodeBuilder(scope, "_TopKGrad")
                       .Input(op.input(0))
                       .Input(op.output(1))
                       .Input(grads[0])
                       .Finalize();
  out->push_back(grad.valid() ? grad.output(0) : Output());
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("TopKV2", TopKGrad);

// The gradient ops take the forward op's window attrs as they are.
Output WithWindowAttrs(const Operation& op, NodeBuilder* builder) {
  for (const char* name : {"ksize", "strides", "padding", "data_format", "dilations"}) {
    auto it = op.node()->def().attr().find(name);
    if (it != op.node()->def().attr().end()) builder->Attr(name, it->second);
  }
  Operation made = builder->Finalize();
  return made.valid() ? made.output(0) : Output();
}

absl::Status Conv2DGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                        std::vector<Output>* out) {
  Output input = op.input(0), filter = op.input(1);
  NodeBuilder d_input(scope, "Conv2DBackpropInput");
  d_input.Input(ops::Shape(scope, input)).Input(filter).Input(grads[0]);
  NodeBuilder d_filter(scope, "Conv2DBackpropFilter");
  d_filter.Input(input).Input(ops::Shape(scope, filter)).Input(grads[0]);
  out->push_back(WithWindowAttrs(op, &d_input));
  out->push_back(WithWindowAttrs(op, &d_filter));
  return scope.status();
}
REGISTER_GRADIENT("Conv2D", Conv2DGrad);

absl::Status MaxPoolGradFn(const Scope& scope, const Operation& op,
                           const std::vector<Output>& grads, std::vector<Output>* out) {
  NodeBuilder grad(scope, "MaxPoolGrad");
  grad.Input(op.input(0)).Input(op.output(0)).Input(grads[0]);
  out->push_back(WithWindowAttrs(op, &grad));
  return scope.status();
}
REGISTER_GRADIENT("MaxPool", MaxPoolGradFn);

absl::Status AvgPoolGradFn(const Scope& scope, const Operation& op,
                           const std::vector<Output>& grads, std::vector<Output>* out) {
  NodeBuilder grad(scope, "AvgPoolGrad");
  grad.Input(ops::Shape(scope, op.input(0))).Input(grads[0]);
  out->push_back(WithWindowAttrs(op, &grad));
  return scope.status();
}
REGISTER_GRADIENT("AvgPool", AvgPoolGradFn);

}  // namespace
}  // namespace overseer

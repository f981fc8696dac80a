#include "client/graph/ops_nn.h"

#include "absl/strings/str_cat.h"
#include "client/graph/graph_builder.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_math.h"
#include "client/graph/ops_random.h"
#include "core/types.h"

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

ClippedByGlobalNorm ClipByGlobalNorm(const Scope& scope, const std::vector<Output>& tensors,
                                     Input clip_norm) {
  ClippedByGlobalNorm result;
  if (tensors.empty()) {
    scope.UpdateStatus(absl::InvalidArgumentError("ClipByGlobalNorm: no tensors to clip"));
    return result;
  }
  const Scope s = scope.NewSubScope("clip_by_global_norm");
  InputList half_squares;
  for (const Output& t : tensors) half_squares.push_back(L2Loss(s, t));
  Output half_sum = AddN(s, half_squares);
  result.global_norm = Sqrt(s.WithOpName("global_norm"), Add(s, half_sum, half_sum));
  // clip_norm * min(1 / global_norm, 1 / clip_norm): 1 where the norm is within bounds
  // (also for a norm of 0, whose reciprocal is infinite).
  Output scale =
      Mul(s, clip_norm, Minimum(s, Reciprocal(s, result.global_norm), Reciprocal(s, clip_norm)));
  for (size_t i = 0; i < tensors.size(); ++i) {
    result.clipped.push_back(
        Identity(s.WithOpName(absl::StrCat("clipped_", i)), Mul(s, tensors[i], scale)));
  }
  return result;
}

TopKOutput TopK(const Scope& scope, Input input, Input k) {
  Operation op = NodeBuilder(scope, "TopKV2").Input(input).Input(k).Finalize();
  if (!op.valid()) return TopKOutput();
  return TopKOutput{op.output(0), op.output(1)};
}

Output InTopK(const Scope& scope, Input predictions, Input targets, Input k) {
  return FirstOutput(
      NodeBuilder(scope, "InTopKV2").Input(predictions).Input(targets).Input(k).Finalize());
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

Output Dropout(const Scope& scope, const Output& x, double keep_prob, int64_t seed) {
  if (!(keep_prob > 0 && keep_prob <= 1)) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("Dropout: keep_prob must be in (0, 1], got ", keep_prob)));
    return Output();
  }
  if (keep_prob == 1 || !x.valid()) return x;
  return Dropout(scope, x, ConstOfType(scope, RemoveRefType(x.dtype()), keep_prob), seed);
}

Output Dropout(const Scope& scope, const Output& x, const Output& keep_prob, int64_t seed) {
  if (!x.valid() || !keep_prob.valid()) return Output();
  const DataType t = RemoveRefType(x.dtype());
  if (t != DT_FLOAT && t != DT_DOUBLE) {
    scope.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("Dropout: x must be float or double, got ", DataTypeString(t))));
    return Output();
  }
  const Scope s = scope.NewSubScope("dropout");
  const Output keep = RemoveRefType(keep_prob.dtype()) == t ? keep_prob : Cast(s, keep_prob, t);
  RandomSeeds seeds;
  seeds.seed = seed;
  // floor(keep_prob + U[0, 1)) is 1 with probability keep_prob, else 0.
  Output mask = Floor(s, Add(s, keep, RandomUniform(s, Shape(s, x), t, seeds)));
  return Mul(s, Div(s, x, keep), mask);
}

namespace {

std::vector<int32_t> Ints(const std::vector<int>& v) { return {v.begin(), v.end()}; }

}  // namespace

Output Conv2D(const Scope& scope, Input input, Input filter, const std::vector<int>& strides,
              const std::string& padding) {
  return FirstOutput(NodeBuilder(scope, "Conv2D")
                         .Input(input)
                         .Input(filter)
                         .Attr("strides", Ints(strides))
                         .Attr("padding", padding)
                         .Finalize());
}

Output Conv2DBackpropInput(const Scope& scope, Input input_sizes, Input filter, Input out_backprop,
                           const std::vector<int>& strides, const std::string& padding) {
  return FirstOutput(NodeBuilder(scope, "Conv2DBackpropInput")
                         .Input(input_sizes)
                         .Input(filter)
                         .Input(out_backprop)
                         .Attr("strides", Ints(strides))
                         .Attr("padding", padding)
                         .Finalize());
}

Output Conv2DBackpropFilter(const Scope& scope, Input input, Input filter_sizes, Input out_backprop,
                            const std::vector<int>& strides, const std::string& padding) {
  return FirstOutput(NodeBuilder(scope, "Conv2DBackpropFilter")
                         .Input(input)
                         .Input(filter_sizes)
                         .Input(out_backprop)
                         .Attr("strides", Ints(strides))
                         .Attr("padding", padding)
                         .Finalize());
}

Output MaxPool(const Scope& scope, Input value, const std::vector<int>& ksize,
               const std::vector<int>& strides, const std::string& padding) {
  return FirstOutput(NodeBuilder(scope, "MaxPool")
                         .Input(value)
                         .Attr("ksize", Ints(ksize))
                         .Attr("strides", Ints(strides))
                         .Attr("padding", padding)
                         .Finalize());
}

Output MaxPoolGrad(const Scope& scope, Input orig_input, Input orig_output, Input grad,
                   const std::vector<int>& ksize, const std::vector<int>& strides,
                   const std::string& padding) {
  return FirstOutput(NodeBuilder(scope, "MaxPoolGrad")
                         .Input(orig_input)
                         .Input(orig_output)
                         .Input(grad)
                         .Attr("ksize", Ints(ksize))
                         .Attr("strides", Ints(strides))
                         .Attr("padding", padding)
                         .Finalize());
}

Output AvgPool(const Scope& scope, Input value, const std::vector<int>& ksize,
               const std::vector<int>& strides, const std::string& padding) {
  return FirstOutput(NodeBuilder(scope, "AvgPool")
                         .Input(value)
                         .Attr("ksize", Ints(ksize))
                         .Attr("strides", Ints(strides))
                         .Attr("padding", padding)
                         .Finalize());
}

Output AvgPoolGrad(const Scope& scope, Input orig_input_shape, Input grad,
                   const std::vector<int>& ksize, const std::vector<int>& strides,
                   const std::string& padding) {
  return FirstOutput(NodeBuilder(scope, "AvgPoolGrad")
                         .Input(orig_input_shape)
                         .Input(grad)
                         .Attr("ksize", Ints(ksize))
                         .Attr("strides", Ints(strides))
                         .Attr("padding", padding)
                         .Finalize());
}

}  // namespace ops
}  // namespace overseer

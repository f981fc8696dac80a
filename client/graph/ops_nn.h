#ifndef OVERSEER_CLIENT_GRAPH_OPS_NN_H_
#define OVERSEER_CLIENT_GRAPH_OPS_NN_H_

// Neural-network ops. Conventions as in ops_array.h.

#include <string>
#include <vector>

#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"

namespace overseer {
namespace ops {

// value + bias along the last dimension.
Output BiasAdd(const Scope& scope, Input value, Input bias);
// The sum of `out_backprop` over every dimension but the last.
Output BiasAddGrad(const Scope& scope, Input out_backprop);
Output Relu(const Scope& scope, Input features);
// gradients where features > 0, else 0.
Output ReluGrad(const Scope& scope, Input gradients, Input features);
// min(max(features, 0), 6) (tf.nn.relu6).
Output Relu6(const Scope& scope, Input features);
Output Relu6Grad(const Scope& scope, Input gradients, Input features);
// features where positive, else exp(features) - 1 (tf.nn.elu).
Output Elu(const Scope& scope, Input features);
Output EluGrad(const Scope& scope, Input gradients, Input outputs);
// sum(t^2) / 2, a scalar (tf.nn.l2_loss).
Output L2Loss(const Scope& scope, Input t);
// Whether each row's target class is among its k highest predictions (tf.nn.in_top_k;
// ties count for the target). predictions float [batch, classes]; targets int32 or
// int64 [batch]; k a scalar of the targets' type. A bool [batch].
Output InTopK(const Scope& scope, Input predictions, Input targets, Input k);
// tf.nn.top_k: the k largest entries along the last dimension, largest first (ties: the
// lower index first; NaN above every number), and their int32 indices. k an int32 scalar
// at most the last dimension. The gradient flows to the chosen entries of `input`.
struct TopKOutput {
  Output values;
  Output indices;
};
TopKOutput TopK(const Scope& scope, Input input, Input k);

// tf.clip_by_global_norm: global_norm = sqrt(sum of every tensor's squared elements);
// each tensor times clip_norm / max(global_norm, clip_norm), so that the clipped ones
// have a global norm of at most clip_norm. Floating tensors of one dtype, at least one
// (else the scope records INVALID_ARGUMENT); clip_norm a scalar of that dtype.
struct ClippedByGlobalNorm {
  std::vector<Output> clipped;  // One per tensor, in order.
  Output global_norm;           // Before clipping.
};
ClippedByGlobalNorm ClipByGlobalNorm(const Scope& scope, const std::vector<Output>& tensors,
                                     Input clip_norm);
// NHWC convolution and pooling (tf.nn.conv2d, max_pool, avg_pool, and the gradient ops
// TensorFlow's gradients use). `strides` and `ksize` have 4 elements, 1 for the batch
// and the depth; `padding` "SAME" or "VALID". The filter is [height, width, in_channels,
// out_channels]. Bad attrs or shapes are INVALID_ARGUMENT naming the node, recorded in
// the scope when known at graph build.
Output Conv2D(const Scope& scope, Input input, Input filter, const std::vector<int>& strides,
              const std::string& padding);
Output Conv2DBackpropInput(const Scope& scope, Input input_sizes, Input filter, Input out_backprop,
                           const std::vector<int>& strides, const std::string& padding);
Output Conv2DBackpropFilter(const Scope& scope, Input input, Input filter_sizes, Input out_backprop,
                            const std::vector<int>& strides, const std::string& padding);
Output MaxPool(const Scope& scope, Input value, const std::vector<int>& ksize,
               const std::vector<int>& strides, const std::string& padding);
Output MaxPoolGrad(const Scope& scope, Input orig_input, Input orig_output, Input grad,
                   const std::vector<int>& ksize, const std::vector<int>& strides,
                   const std::string& padding);
Output AvgPool(const Scope& scope, Input value, const std::vector<int>& ksize,
               const std::vector<int>& strides, const std::string& padding);
Output AvgPoolGrad(const Scope& scope, Input orig_input_shape, Input grad,
                   const std::vector<int>& ksize, const std::vector<int>& strides,
                   const std::string& padding);
// tf.nn.dropout(x, keep_prob, seed) as TensorFlow 1.x composes it: each element kept
// with probability keep_prob and scaled by 1 / keep_prob, else 0 (floor(keep_prob +
// uniform) as the mask; the gradient flows through the kept elements). A number must be
// in (0, 1] (else the scope records INVALID_ARGUMENT), and 1 gives `x` itself; a tensor
// (a placeholder set to 1 for evaluation) is a floating scalar. `x` floating.
Output Dropout(const Scope& scope, const Output& x, double keep_prob, int64_t seed = 0);
Output Dropout(const Scope& scope, const Output& x, const Output& keep_prob, int64_t seed = 0);
// Along the last dimension.
Output Softmax(const Scope& scope, Input logits);
Output LogSoftmax(const Scope& scope, Input logits);

// Per-row loss and its gradient with respect to the logits.
struct SoftmaxCrossEntropyOutput {
  Output loss;
  Output backprop;
};
// `features` [batch, classes] logits; `labels` [batch, classes] probabilities.
SoftmaxCrossEntropyOutput SoftmaxCrossEntropyWithLogits(const Scope& scope, Input features,
                                                        Input labels);
// `labels` [batch] class indices (int32 or int64).
SoftmaxCrossEntropyOutput SparseSoftmaxCrossEntropyWithLogits(const Scope& scope, Input features,
                                                              Input labels);

}  // namespace ops
}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPS_NN_H_

#ifndef OVERSEER_CLIENT_GRAPH_OPS_NN_H_
#define OVERSEER_CLIENT_GRAPH_OPS_NN_H_

// Neural-network ops. Conventions as in ops_array.h.

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

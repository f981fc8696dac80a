#ifndef OVERSEER_CLIENT_GRAPH_GRADIENTS_UTIL_H_
#define OVERSEER_CLIENT_GRAPH_GRADIENTS_UTIL_H_

// Helpers shared by the gradient functions (gradients_*.cc). Internal to //client.

#include <vector>

#include "absl/status/status.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"

namespace overseer {
namespace grad_util {

// Appends the gradients of a broadcasting binary op: `gx` and `gy` have the
// broadcast shape and are summed over the broadcast dimensions and reshaped to the
// shapes of op's inputs 0 and 1. Either may be null (no gradient for that input).
absl::Status BroadcastBinaryGrads(const Scope& scope, const Operation& op, Output gx, Output gy,
                                  std::vector<Output>* grad_outputs);

// A scalar Const of x's dtype.
Output ScalarLike(const Scope& scope, const Output& x, double value);

// `t` as int32 (Cast unless it already is).
Output ToInt32(const Scope& scope, const Output& t);

// grads[i] if valid, else ZerosLike(op.output(i)).
Output GradOrZeros(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                   int i);

}  // namespace grad_util
}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_GRADIENTS_UTIL_H_

#ifndef OVERSEER_CLIENT_GRAPH_OPS_TRAINING_H_
#define OVERSEER_CLIENT_GRAPH_OPS_TRAINING_H_

// In-place update ops of the optimizers. `var` and the accumulators are variable refs;
// each returns the updated `var` ref. Conventions as in ops_array.h.

#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"

namespace overseer {
namespace ops {

// var -= alpha * delta.
Output ApplyGradientDescent(const Scope& scope, Input var, Input alpha, Input delta,
                            bool use_locking = false);
// accum = accum * momentum + grad; var -= lr * accum (Nesterov: var -= lr * (grad +
// momentum * accum)).
Output ApplyMomentum(const Scope& scope, Input var, Input accum, Input lr, Input grad,
                     Input momentum, bool use_locking = false, bool use_nesterov = false);
// Adam: m, v moments; beta1_power, beta2_power the bias-correction powers.
Output ApplyAdam(const Scope& scope, Input var, Input m, Input v, Input beta1_power,
                 Input beta2_power, Input lr, Input beta1, Input beta2, Input epsilon, Input grad,
                 bool use_locking = false, bool use_nesterov = false);

// TensorFlow's ApplyAdagrad, ApplyRMSProp and ApplyAdadelta (core/kernels/training).
Output ApplyAdagrad(const Scope& scope, Input var, Input accum, Input lr, Input grad,
                    bool use_locking = false, bool update_slots = true);
Output ApplyRMSProp(const Scope& scope, Input var, Input ms, Input mom, Input lr, Input rho,
                    Input momentum, Input epsilon, Input grad, bool use_locking = false);
Output ApplyAdadelta(const Scope& scope, Input var, Input accum, Input accum_update, Input lr,
                     Input rho, Input epsilon, Input grad, bool use_locking = false);

}  // namespace ops
}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPS_TRAINING_H_

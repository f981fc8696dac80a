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
// TensorFlow's ApplyFtrl (FTRL-Proximal; lr > 0, l1 >= 0, l2 >= 0, lr_power <= 0).
Output ApplyFtrl(const Scope& scope, Input var, Input accum, Input linear, Input grad, Input lr,
                 Input l1, Input l2, Input lr_power, bool use_locking = false);

// The sparse forms: `grad` holds one slice per index of the vector `indices` (int32 or
// int64), and each named row of the variable and its slots gets the dense update with
// that slice, in order (a repeated index is updated once per slice).
Output SparseApplyMomentum(const Scope& scope, Input var, Input accum, Input lr, Input grad,
                           Input indices, Input momentum, bool use_locking = false,
                           bool use_nesterov = false);
Output SparseApplyAdagrad(const Scope& scope, Input var, Input accum, Input lr, Input grad,
                          Input indices, bool use_locking = false, bool update_slots = true);
Output SparseApplyRMSProp(const Scope& scope, Input var, Input ms, Input mom, Input lr, Input rho,
                          Input momentum, Input epsilon, Input grad, Input indices,
                          bool use_locking = false);
Output SparseApplyAdadelta(const Scope& scope, Input var, Input accum, Input accum_update, Input lr,
                           Input rho, Input epsilon, Input grad, Input indices,
                           bool use_locking = false);
Output SparseApplyFtrl(const Scope& scope, Input var, Input accum, Input linear, Input grad,
                       Input indices, Input lr, Input l1, Input l2, Input lr_power,
                       bool use_locking = false);

}  // namespace ops
}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPS_TRAINING_H_

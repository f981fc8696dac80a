#include "client/graph/ops_training.h"

#include "client/graph/graph_builder.h"

namespace overseer {
namespace ops {

Output ApplyGradientDescent(const Scope& scope, Input var, Input alpha, Input delta,
                            bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "ApplyGradientDescent")
                         .Input(var)
                         .Input(alpha)
                         .Input(delta)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

Output ApplyMomentum(const Scope& scope, Input var, Input accum, Input lr, Input grad,
                     Input momentum, bool use_locking, bool use_nesterov) {
  return FirstOutput(NodeBuilder(scope, "ApplyMomentum")
                         .Input(var)
                         .Input(accum)
                         .Input(lr)
                         .Input(grad)
                         .Input(momentum)
                         .Attr("use_locking", use_locking)
                         .Attr("use_nesterov", use_nesterov)
                         .Finalize());
}

Output ApplyAdam(const Scope& scope, Input var, Input m, Input v, Input beta1_power,
                 Input beta2_power, Input lr, Input beta1, Input beta2, Input epsilon, Input grad,
                 bool use_locking, bool use_nesterov) {
  return FirstOutput(NodeBuilder(scope, "ApplyAdam")
                         .Input(var)
                         .Input(m)
                         .Input(v)
                         .Input(beta1_power)
                         .Input(beta2_power)
                         .Input(lr)
                         .Input(beta1)
                         .Input(beta2)
                         .Input(epsilon)
                         .Input(grad)
                         .Attr("use_locking", use_locking)
                         .Attr("use_nesterov", use_nesterov)
                         .Finalize());
}

Output ApplyAdagrad(const Scope& scope, Input var, Input accum, Input lr, Input grad,
                    bool use_locking, bool update_slots) {
  return FirstOutput(NodeBuilder(scope, "ApplyAdagrad")
                         .Input(var)
                         .Input(accum)
                         .Input(lr)
                         .Input(grad)
                         .Attr("use_locking", use_locking)
                         .Attr("update_slots", update_slots)
                         .Finalize());
}

Output ApplyRMSProp(const Scope& scope, Input var, Input ms, Input mom, Input lr, Input rho,
                    Input momentum, Input epsilon, Input grad, bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "ApplyRMSProp")
                         .Input(var)
                         .Input(ms)
                         .Input(mom)
                         .Input(lr)
                         .Input(rho)
                         .Input(momentum)
                         .Input(epsilon)
                         .Input(grad)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

Output ApplyAdadelta(const Scope& scope, Input var, Input accum, Input accum_update, Input lr,
                     Input rho, Input epsilon, Input grad, bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "ApplyAdadelta")
                         .Input(var)
                         .Input(accum)
                         .Input(accum_update)
                         .Input(lr)
                         .Input(rho)
                         .Input(epsilon)
                         .Input(grad)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

Output ApplyFtrl(const Scope& scope, Input var, Input accum, Input linear, Input grad, Input lr,
                 Input l1, Input l2, Input lr_power, bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "ApplyFtrl")
                         .Input(var)
                         .Input(accum)
                         .Input(linear)
                         .Input(grad)
                         .Input(lr)
                         .Input(l1)
                         .Input(l2)
                         .Input(lr_power)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

Output SparseApplyMomentum(const Scope& scope, Input var, Input accum, Input lr, Input grad,
                           Input indices, Input momentum, bool use_locking, bool use_nesterov) {
  return FirstOutput(NodeBuilder(scope, "SparseApplyMomentum")
                         .Input(var)
                         .Input(accum)
                         .Input(lr)
                         .Input(grad)
                         .Input(indices)
                         .Input(momentum)
                         .Attr("use_locking", use_locking)
                         .Attr("use_nesterov", use_nesterov)
                         .Finalize());
}

Output SparseApplyAdagrad(const Scope& scope, Input var, Input accum, Input lr, Input grad,
                          Input indices, bool use_locking, bool update_slots) {
  return FirstOutput(NodeBuilder(scope, "SparseApplyAdagrad")
                         .Input(var)
                         .Input(accum)
                         .Input(lr)
                         .Input(grad)
                         .Input(indices)
                         .Attr("use_locking", use_locking)
                         .Attr("update_slots", update_slots)
                         .Finalize());
}

Output SparseApplyRMSProp(const Scope& scope, Input var, Input ms, Input mom, Input lr, Input rho,
                          Input momentum, Input epsilon, Input grad, Input indices,
                          bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "SparseApplyRMSProp")
                         .Input(var)
                         .Input(ms)
                         .Input(mom)
                         .Input(lr)
                         .Input(rho)
                         .Input(momentum)
                         .Input(epsilon)
                         .Input(grad)
                         .Input(indices)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

Output SparseApplyAdadelta(const Scope& scope, Input var, Input accum, Input accum_update, Input lr,
                           Input rho, Input epsilon, Input grad, Input indices, bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "SparseApplyAdadelta")
                         .Input(var)
                         .Input(accum)
                         .Input(accum_update)
                         .Input(lr)
                         .Input(rho)
                         .Input(epsilon)
                         .Input(grad)
                         .Input(indices)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

Output SparseApplyFtrl(const Scope& scope, Input var, Input accum, Input linear, Input grad,
                       Input indices, Input lr, Input l1, Input l2, Input lr_power,
                       bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "SparseApplyFtrl")
                         .Input(var)
                         .Input(accum)
                         .Input(linear)
                         .Input(grad)
                         .Input(indices)
                         .Input(lr)
                         .Input(l1)
                         .Input(l2)
                         .Input(lr_power)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

}  // namespace ops
}  // namespace overseer

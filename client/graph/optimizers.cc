#include "client/graph/optimizers.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/graph/gradients.h"
#include "client/graph/indexed_slices.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_input.h"
#include "client/graph/ops_math.h"
#include "client/graph/ops_state.h"
#include "client/graph/ops_training.h"
#include "client/graph/variables_init.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// The slots `names` of `var` in `out`; false with the error recorded in `scope` if one
// is missing.
bool GetSlots(const Optimizer& opt, const Scope& scope, const Variable& var,
              const std::vector<std::string>& names, std::vector<Output>* out) {
  for (const std::string& name : names) {
    absl::StatusOr<Variable> slot = opt.GetSlot(var, name);
    if (!slot.ok()) {
      scope.UpdateStatus(slot.status());
      return false;
    }
    out->push_back(slot->ref);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<GradAndVar>> Optimizer::ComputeGradients(
    const Scope& scope, const Output& loss, const std::vector<Variable>& var_list) {
  RETURN_IF_ERROR(scope.status());
  std::vector<Variable> vars = var_list.empty() ? TrainableVariables(*scope.graph()) : var_list;
  if (vars.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_,
                     ": no variables to optimize (the graph has no trainable "
                     "variables and no var_list was given)"));
  }
  if (!loss.valid()) return absl::InvalidArgumentError(absl::StrCat(name_, ": null loss"));
  std::vector<Output> xs;
  for (const Variable& v : vars) {
    if (!v.valid()) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": an invalid Variable"));
    }
    xs.push_back(v.ref);
  }
  std::vector<Output> grads;
  RETURN_IF_ERROR(AddSymbolicGradients(scope, {loss}, xs, &grads));
  std::vector<GradAndVar> result;
  for (size_t i = 0; i < vars.size(); ++i) result.push_back({grads[i], vars[i]});
  return result;
}

absl::StatusOr<Operation> Optimizer::ApplyGradients(const Scope& scope,
                                                    const std::vector<GradAndVar>& grads_and_vars,
                                                    const Variable* global_step) {
  RETURN_IF_ERROR(scope.status());
  std::vector<GradAndVar> pairs;
  std::vector<Variable> vars;
  std::vector<std::string> names;
  for (const GradAndVar& gv : grads_and_vars) {
    if (!gv.var.valid()) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": an invalid Variable"));
    }
    names.push_back(gv.var.name());
    if (!gv.grad.valid()) continue;
    if (RemoveRefType(gv.grad.dtype()) != gv.var.dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": the gradient '", gv.grad.name(), "' of variable '", gv.var.name(),
                       "' has dtype ", DataTypeString(gv.grad.dtype()), " but the variable has ",
                       DataTypeString(gv.var.dtype())));
    }
    pairs.push_back(gv);
    vars.push_back(gv.var);
  }
  if (pairs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_,
                     ": no gradients provided for any variable; check the graph for ops "
                     "without gradients between the variables [",
                     absl::StrJoin(names, ", "), "] and the loss"));
  }
  if (global_step != nullptr && !global_step->valid()) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": invalid global step"));
  }
  const Scope plain = scope.WithNameScope("").WithNoControlDependencies().ClearColocation();
  RETURN_IF_ERROR(CreateSlots(plain, vars));
  RETURN_IF_ERROR(scope.status());
  const Scope opt_scope = scope.NewSubScope(name_);
  std::vector<Operation> updates;
  for (const GradAndVar& gv : pairs) {
    const Scope u =
        opt_scope.NewSubScope(absl::StrCat("update_", gv.var.name())).ColocateWith(gv.var.ref);
    const std::optional<IndexedSlices> sparse = AsIndexedSlices(gv.grad);
    Output update = sparse.has_value() && HasSparseUpdate()
                        ? ApplySparse(u, DeduplicateIndexedSlices(u, *sparse), gv.var)
                        : ApplyDense(u, gv.grad, gv.var);
    RETURN_IF_ERROR(scope.status());
    updates.push_back(Operation(update.node()));
  }
  Operation train_op;
  if (global_step == nullptr) {
    train_op = Finish(opt_scope.WithExactOpName(opt_scope.name_scope()), updates);
  } else {
    Operation finished = Finish(opt_scope.WithOpName("update"), updates);
    RETURN_IF_ERROR(scope.status());
    // The increment also waits for the step's read ("global_step/read", what hooks
    // fetch), as TensorFlow's _increment_global_step does: a hook fetching the read
    // in the same run then always sees the step before this run's increment.
    const Scope inc =
        opt_scope.WithControlDependencies({finished, Operation(global_step->value.node())})
            .ColocateWith(global_step->ref);
    Output one = ops::ConstOfType(inc, global_step->dtype(), 1);
    train_op = Operation(
        ops::AssignAdd(inc.WithExactOpName(opt_scope.name_scope()), global_step->ref, one).node());
  }
  RETURN_IF_ERROR(scope.status());
  return train_op;
}

absl::StatusOr<Operation> Optimizer::Minimize(const Scope& scope, const Output& loss,
                                              const Variable* global_step,
                                              const std::vector<Variable>& var_list) {
  ASSIGN_OR_RETURN(std::vector<GradAndVar> grads, ComputeGradients(scope, loss, var_list));
  return ApplyGradients(scope, grads, global_step);
}

absl::StatusOr<Variable> Optimizer::GetSlot(const Variable& var, const std::string& slot) const {
  auto it = slots_.find(slot);
  if (it != slots_.end() && var.valid()) {
    auto v = it->second.find(var.name());
    if (v != it->second.end()) return v->second;
  }
  return absl::NotFoundError(absl::StrCat(name_, " has no slot '", slot, "' for variable '",
                                          var.valid() ? var.name() : "<invalid>", "'"));
}

Output Optimizer::ApplySparse(const Scope& scope, const IndexedSlices& /*slices*/,
                              const Variable& var) {
  scope.UpdateStatus(absl::UnimplementedError(
      absl::StrCat(name_, " has no sparse update (for variable '", var.name(), "')")));
  return Output();
}

Operation Optimizer::Finish(const Scope& scope, const std::vector<Operation>& updates) {
  return ops::Group(scope, updates);
}

Variable Optimizer::ZerosSlot(const Scope& scope, const Variable& var, const std::string& slot) {
  return FilledSlot(scope, var, slot, 0.0);
}

Variable Optimizer::FilledSlot(const Scope& scope, const Variable& var, const std::string& slot,
                               double value) {
  auto& per_var = slots_[slot];
  auto it = per_var.find(var.name());
  if (it != per_var.end()) return it->second;
  const Scope s = scope.ColocateWith(var.ref).WithOpName(absl::StrCat(var.name(), "/", name_));
  VariableOptions options;
  options.trainable = false;
  Variable v;
  if (var.shape().IsFullyDefined()) {
    v = MakeVariable(s,
                     value == 0
                         ? ZerosInitializer(var.shape().ToTensorShape(), var.dtype())
                         : ConstantInitializer(var.shape().ToTensorShape(), value, var.dtype()),
                     options);
  } else {
    const Output like = var.initial_value;
    v = MakeVariable(
        s,
        [like, value](const Scope& init) {
          Output zeros = ops::ZerosLike(init, like);
          if (value == 0) return zeros;
          return ops::Add(init, zeros, ops::ConstOfType(init, RemoveRefType(like.dtype()), value));
        },
        options);
  }
  if (v.valid()) per_var[var.name()] = v;
  return v;
}

Output LearningRate::ToOutput(const Scope& scope, DataType dtype) const {
  if (!tensor_.valid()) return ops::ConstOfType(scope, dtype, value_);
  const DataType given = RemoveRefType(tensor_.dtype());
  return given == dtype ? tensor_ : ops::Cast(scope, tensor_, dtype);
}

GradientDescentOptimizer::GradientDescentOptimizer(LearningRate learning_rate)
    : Optimizer("GradientDescent"), learning_rate_(learning_rate) {}

Output GradientDescentOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                            const Variable& var) {
  Output lr = learning_rate_.ToOutput(scope, var.dtype());
  return ops::ApplyGradientDescent(scope, var.ref, lr, grad);
}

Output GradientDescentOptimizer::ApplySparse(const Scope& scope, const IndexedSlices& slices,
                                             const Variable& var) {
  Output lr = learning_rate_.ToOutput(scope, var.dtype());
  return ops::ScatterSub(scope, var.ref, slices.indices, ops::Mul(scope, slices.values, lr));
}

MomentumOptimizer::MomentumOptimizer(LearningRate learning_rate, double momentum, bool use_nesterov)
    : Optimizer("Momentum"),
      learning_rate_(learning_rate),
      momentum_(momentum),
      use_nesterov_(use_nesterov) {}

absl::Status MomentumOptimizer::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  for (const Variable& v : vars) ZerosSlot(scope, v, "momentum");
  return scope.status();
}

Output MomentumOptimizer::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"momentum"}, &s)) return Output();
  return ops::ApplyMomentum(scope, var.ref, s[0], learning_rate_.ToOutput(scope, var.dtype()), grad,
                            ops::ConstOfType(scope, var.dtype(), momentum_),
                            /*use_locking=*/false, use_nesterov_);
}

Output MomentumOptimizer::ApplySparse(const Scope& scope, const IndexedSlices& slices,
                                      const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"momentum"}, &s)) return Output();
  return ops::SparseApplyMomentum(scope, var.ref, s[0], learning_rate_.ToOutput(scope, var.dtype()),
                                  slices.values, slices.indices,
                                  ops::ConstOfType(scope, var.dtype(), momentum_),
                                  /*use_locking=*/false, use_nesterov_);
}

AdamOptimizer::AdamOptimizer(LearningRate learning_rate, double beta1, double beta2, double epsilon)
    : Optimizer("Adam"),
      learning_rate_(learning_rate),
      beta1_(beta1),
      beta2_(beta2),
      epsilon_(epsilon) {}

absl::Status AdamOptimizer::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  if (!beta1_power_.valid()) {
    const Variable& first =
        *std::min_element(vars.begin(), vars.end(),
                          [](const Variable& a, const Variable& b) { return a.name() < b.name(); });
    const Scope s = scope.ColocateWith(first.ref);
    VariableOptions options;
    options.trainable = false;
    ASSIGN_OR_RETURN(Tensor b1, FilledTensor(first.dtype(), TensorShape(), beta1_));
    ASSIGN_OR_RETURN(Tensor b2, FilledTensor(first.dtype(), TensorShape(), beta2_));
    beta1_power_ = MakeVariable(s.WithOpName("beta1_power"), b1, options);
    beta2_power_ = MakeVariable(s.WithOpName("beta2_power"), b2, options);
  }
  for (const Variable& v : vars) {
    ZerosSlot(scope, v, "m");
    ZerosSlot(scope, v, "v");
  }
  return scope.status();
}

Output AdamOptimizer::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"m", "v"}, &s)) return Output();
  const DataType t = var.dtype();
  auto power = [&](const Variable& p) -> Output {
    return p.dtype() == t ? p.value : ops::Cast(scope, p.value, t);
  };
  return ops::ApplyAdam(scope, var.ref, s[0], s[1], power(beta1_power_), power(beta2_power_),
                        learning_rate_.ToOutput(scope, t), ops::ConstOfType(scope, t, beta1_),
                        ops::ConstOfType(scope, t, beta2_), ops::ConstOfType(scope, t, epsilon_),
                        grad);
}

Operation AdamOptimizer::Finish(const Scope& scope, const std::vector<Operation>& updates) {
  const Scope deps =
      scope.WithOpName("").WithControlDependencies(updates).ColocateWith(beta1_power_.ref);
  const DataType t = beta1_power_.dtype();
  // One locked update each: with Assign(p, p * beta) two interleaved steps would lose one
  // (TensorFlow's race), and the powers would drift from the global step.
  Output update1 = ops::AssignMul(deps, beta1_power_.ref, ops::ConstOfType(deps, t, beta1_));
  Output update2 = ops::AssignMul(deps, beta2_power_.ref, ops::ConstOfType(deps, t, beta2_));
  std::vector<Operation> all = updates;
  all.push_back(Operation(update1.node()));
  all.push_back(Operation(update2.node()));
  return ops::Group(scope, all);
}

AdagradOptimizer::AdagradOptimizer(LearningRate learning_rate, double initial_accumulator_value)
    : Optimizer("Adagrad"),
      learning_rate_(learning_rate),
      initial_accumulator_value_(initial_accumulator_value) {}

absl::Status AdagradOptimizer::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  if (initial_accumulator_value_ <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Adagrad: initial_accumulator_value must be positive, got ", initial_accumulator_value_));
  }
  for (const Variable& v : vars) FilledSlot(scope, v, "accumulator", initial_accumulator_value_);
  return scope.status();
}

Output AdagradOptimizer::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"accumulator"}, &s)) return Output();
  return ops::ApplyAdagrad(scope, var.ref, s[0], learning_rate_.ToOutput(scope, var.dtype()), grad);
}

Output AdagradOptimizer::ApplySparse(const Scope& scope, const IndexedSlices& slices,
                                     const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"accumulator"}, &s)) return Output();
  return ops::SparseApplyAdagrad(scope, var.ref, s[0], learning_rate_.ToOutput(scope, var.dtype()),
                                 slices.values, slices.indices);
}

RMSPropOptimizer::RMSPropOptimizer(LearningRate learning_rate, double decay, double momentum,
                                   double epsilon)
    : Optimizer("RMSProp"),
      learning_rate_(learning_rate),
      decay_(decay),
      momentum_(momentum),
      epsilon_(epsilon) {}

absl::Status RMSPropOptimizer::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  for (const Variable& v : vars) {
    FilledSlot(scope, v, "rms", 1.0);  // TensorFlow starts the mean square at one.
    ZerosSlot(scope, v, "momentum");
  }
  return scope.status();
}

Output RMSPropOptimizer::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"rms", "momentum"}, &s)) return Output();
  const DataType t = var.dtype();
  return ops::ApplyRMSProp(scope, var.ref, s[0], s[1], learning_rate_.ToOutput(scope, t),
                           ops::ConstOfType(scope, t, decay_),
                           ops::ConstOfType(scope, t, momentum_),
                           ops::ConstOfType(scope, t, epsilon_), grad);
}

Output RMSPropOptimizer::ApplySparse(const Scope& scope, const IndexedSlices& slices,
                                     const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"rms", "momentum"}, &s)) return Output();
  const DataType t = var.dtype();
  return ops::SparseApplyRMSProp(
      scope, var.ref, s[0], s[1], learning_rate_.ToOutput(scope, t),
      ops::ConstOfType(scope, t, decay_), ops::ConstOfType(scope, t, momentum_),
      ops::ConstOfType(scope, t, epsilon_), slices.values, slices.indices);
}

AdadeltaOptimizer::AdadeltaOptimizer(LearningRate learning_rate, double rho, double epsilon)
    : Optimizer("Adadelta"), learning_rate_(learning_rate), rho_(rho), epsilon_(epsilon) {}

absl::Status AdadeltaOptimizer::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  for (const Variable& v : vars) {
    ZerosSlot(scope, v, "accum");
    ZerosSlot(scope, v, "accum_update");
  }
  return scope.status();
}

Output AdadeltaOptimizer::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"accum", "accum_update"}, &s)) return Output();
  const DataType t = var.dtype();
  return ops::ApplyAdadelta(scope, var.ref, s[0], s[1], learning_rate_.ToOutput(scope, t),
                            ops::ConstOfType(scope, t, rho_), ops::ConstOfType(scope, t, epsilon_),
                            grad);
}

Output AdadeltaOptimizer::ApplySparse(const Scope& scope, const IndexedSlices& slices,
                                      const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"accum", "accum_update"}, &s)) return Output();
  const DataType t = var.dtype();
  return ops::SparseApplyAdadelta(scope, var.ref, s[0], s[1], learning_rate_.ToOutput(scope, t),
                                  ops::ConstOfType(scope, t, rho_),
                                  ops::ConstOfType(scope, t, epsilon_), slices.values,
                                  slices.indices);
}

FtrlOptimizer::FtrlOptimizer(LearningRate learning_rate, double learning_rate_power,
                             double initial_accumulator_value, double l1_regularization_strength,
                             double l2_regularization_strength)
    : Optimizer("Ftrl"),
      learning_rate_(learning_rate),
      learning_rate_power_(learning_rate_power),
      initial_accumulator_value_(initial_accumulator_value),
      l1_(l1_regularization_strength),
      l2_(l2_regularization_strength) {}

absl::Status FtrlOptimizer::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  if (learning_rate_power_ > 0 || initial_accumulator_value_ < 0 || l1_ < 0 || l2_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Ftrl: needs learning_rate_power <= 0, initial_accumulator_value >= 0 and "
                     "regularization strengths >= 0; got learning_rate_power ",
                     learning_rate_power_, ", initial_accumulator_value ",
                     initial_accumulator_value_, ", l1 ", l1_, ", l2 ", l2_));
  }
  for (const Variable& v : vars) {
    FilledSlot(scope, v, "accum", initial_accumulator_value_);
    ZerosSlot(scope, v, "linear");
  }
  return scope.status();
}

Output FtrlOptimizer::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"accum", "linear"}, &s)) return Output();
  const DataType t = var.dtype();
  return ops::ApplyFtrl(scope, var.ref, s[0], s[1], grad, learning_rate_.ToOutput(scope, t),
                        ops::ConstOfType(scope, t, l1_), ops::ConstOfType(scope, t, l2_),
                        ops::ConstOfType(scope, t, learning_rate_power_));
}

Output FtrlOptimizer::ApplySparse(const Scope& scope, const IndexedSlices& slices,
                                  const Variable& var) {
  std::vector<Output> s;
  if (!GetSlots(*this, scope, var, {"accum", "linear"}, &s)) return Output();
  const DataType t = var.dtype();
  return ops::SparseApplyFtrl(scope, var.ref, s[0], s[1], slices.values, slices.indices,
                              learning_rate_.ToOutput(scope, t), ops::ConstOfType(scope, t, l1_),
                              ops::ConstOfType(scope, t, l2_),
                              ops::ConstOfType(scope, t, learning_rate_power_));
}

}  // namespace overseer

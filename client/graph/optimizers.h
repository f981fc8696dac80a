#ifndef OVERSEER_CLIENT_GRAPH_OPTIMIZERS_H_
#define OVERSEER_CLIENT_GRAPH_OPTIMIZERS_H_

// Optimizers in the shape of TensorFlow 1.x's tf.train.Optimizer:
//
//   AdamOptimizer adam;                              // lr 0.001, 0.9, 0.999, 1e-8
//   ASSIGN_OR_RETURN(Variable step, CreateGlobalStep(root));
//   ASSIGN_OR_RETURN(Operation train, adam.Minimize(root, loss, &step));
//
// ApplyGradients adds one update per (gradient, variable) under "<name>/update_<var>/",
// colocated with the variable, then (with a global step) an AssignAdd of 1 to the step
// that runs after every update and after the step's read (Variable::value, which hooks
// fetch: in the run of the train op they see the step before its increment); without
// one, a NoOp grouping the updates. Slot
// variables ("w/Adam", "w/Momentum") are created, zero-initialised, the first time a
// variable is updated and are global, non-trainable variables: run the global
// initializer after building the train op. An optimizer object may be used for
// several train ops; it is not thread-safe.
//
// A gradient with a sparse form (indexed_slices.h: an embedding lookup's) updates only
// the rows it names, where the variable lives: each index once (repeated ones summed),
// with the optimizer's sparse update (GradientDescent: ScatterSub; Momentum, Adagrad,
// RMSProp, Adadelta, Ftrl: their SparseApply* ops). Adam, whose update moves every row,
// applies the dense form.

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/indexed_slices.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"

namespace overseer {

// A learning rate: a constant, or a scalar floating tensor computed in the graph (a
// schedule on the global step, learning_rate_decay.h), as TensorFlow's optimizers take
// either. Read once per update, cast to each variable's dtype.
class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}            // NOLINT: implicit by design.
  LearningRate(const Output& tensor) : tensor_(tensor) {}  // NOLINT
  // The rate as a scalar of `dtype`, in `scope`.
  Output ToOutput(const Scope& scope, DataType dtype) const;

 private:
  double value_ = 0;
  Output tensor_;  // Used when valid.
};

struct GradAndVar {
  Output grad;  // Null if the loss does not depend on the variable.
  Variable var;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const std::string& name() const { return name_; }

  // d(loss)/d(var) for each of `var_list` (default: the graph's trainable variables).
  // INVALID_ARGUMENT if there are no variables; AddSymbolicGradients' errors.
  absl::StatusOr<std::vector<GradAndVar>> ComputeGradients(
      const Scope& scope, const Output& loss, const std::vector<Variable>& var_list = {});

  // The train op. Pairs with a null gradient are skipped; INVALID_ARGUMENT if all are
  // null ("no gradients provided for any variable"), or for an invalid variable or a
  // gradient of another dtype; errors recorded in the scope otherwise.
  absl::StatusOr<Operation> ApplyGradients(const Scope& scope,
                                           const std::vector<GradAndVar>& grads_and_vars,
                                           const Variable* global_step = nullptr);

  // ComputeGradients then ApplyGradients.
  absl::StatusOr<Operation> Minimize(const Scope& scope, const Output& loss,
                                     const Variable* global_step = nullptr,
                                     const std::vector<Variable>& var_list = {});

  // The slot variable `slot` ("m", "momentum") of `var`, or NOT_FOUND.
  absl::StatusOr<Variable> GetSlot(const Variable& var, const std::string& slot) const;

 protected:
  explicit Optimizer(std::string name) : name_(std::move(name)) {}

  // Creates the slots and other variables the updates of `vars` need (those not yet
  // created). `scope` has no name scope and no control dependencies.
  virtual absl::Status CreateSlots(const Scope& /*scope*/, const std::vector<Variable>& /*vars*/) {
    return absl::OkStatus();
  }
  // The update of `var` by `grad`.
  virtual Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) = 0;
  // Whether ApplySparse updates only the rows of a sparse gradient.
  virtual bool HasSparseUpdate() const { return false; }
  // The update of `var` by `slices` (each index once). Called if HasSparseUpdate().
  virtual Output ApplySparse(const Scope& scope, const IndexedSlices& slices, const Variable& var);
  // The op that completes the step after `updates` (default: a NoOp on them), named by
  // the scope's op name.
  virtual Operation Finish(const Scope& scope, const std::vector<Operation>& updates);

  // A zero-initialised variable shaped like `var`, named "<var>/<name()>" (uniquified),
  // stored as slot `slot`; returns the existing one if already created.
  Variable ZerosSlot(const Scope& scope, const Variable& var, const std::string& slot);
  // The same with `value` everywhere.
  Variable FilledSlot(const Scope& scope, const Variable& var, const std::string& slot,
                      double value);

 private:
  const std::string name_;
  // slot name -> variable node name -> slot variable.
  std::map<std::string, std::map<std::string, Variable>> slots_;
};

class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(LearningRate learning_rate);

 protected:
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;
  bool HasSparseUpdate() const override { return true; }
  Output ApplySparse(const Scope& scope, const IndexedSlices& slices, const Variable& var) override;

 private:
  const LearningRate learning_rate_;
};

class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(LearningRate learning_rate, double momentum, bool use_nesterov = false);

 protected:
  absl::Status CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;
  bool HasSparseUpdate() const override { return true; }
  Output ApplySparse(const Scope& scope, const IndexedSlices& slices, const Variable& var) override;

 private:
  const LearningRate learning_rate_;
  const double momentum_;
  const bool use_nesterov_;
};

class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(LearningRate learning_rate = 0.001, double beta1 = 0.9,
                         double beta2 = 0.999, double epsilon = 1e-8);

 protected:
  absl::Status CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;
  // Also advances beta1_power and beta2_power after the updates.
  Operation Finish(const Scope& scope, const std::vector<Operation>& updates) override;

 private:
  const LearningRate learning_rate_;
  const double beta1_, beta2_, epsilon_;
  // "beta1_power" and "beta2_power", made with the first variable.
  Variable beta1_power_, beta2_power_;
};

// TensorFlow's AdagradOptimizer: accumulator += grad^2, var -= lr * grad /
// sqrt(accumulator); slot "accumulator" starts at initial_accumulator_value (> 0, else
// INVALID_ARGUMENT from ApplyGradients).
class AdagradOptimizer : public Optimizer {
 public:
  explicit AdagradOptimizer(LearningRate learning_rate, double initial_accumulator_value = 0.1);

 protected:
  absl::Status CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;
  bool HasSparseUpdate() const override { return true; }
  Output ApplySparse(const Scope& scope, const IndexedSlices& slices, const Variable& var) override;

 private:
  const LearningRate learning_rate_;
  const double initial_accumulator_value_;
};

// TensorFlow's RMSPropOptimizer (not centered): slots "rms" (starting at 1) and
// "momentum" (at 0).
class RMSPropOptimizer : public Optimizer {
 public:
  explicit RMSPropOptimizer(LearningRate learning_rate, double decay = 0.9, double momentum = 0.0,
                            double epsilon = 1e-10);

 protected:
  absl::Status CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;
  bool HasSparseUpdate() const override { return true; }
  Output ApplySparse(const Scope& scope, const IndexedSlices& slices, const Variable& var) override;

 private:
  const LearningRate learning_rate_;
  const double decay_, momentum_, epsilon_;
};

// TensorFlow's AdadeltaOptimizer: slots "accum" and "accum_update".
class AdadeltaOptimizer : public Optimizer {
 public:
  explicit AdadeltaOptimizer(LearningRate learning_rate = 0.001, double rho = 0.95,
                             double epsilon = 1e-8);

 protected:
  absl::Status CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;
  bool HasSparseUpdate() const override { return true; }
  Output ApplySparse(const Scope& scope, const IndexedSlices& slices, const Variable& var) override;

 private:
  const LearningRate learning_rate_;
  const double rho_, epsilon_;
};

// TensorFlow's FtrlOptimizer (FTRL-Proximal, McMahan et al. 2013): slots "accum" (starting
// at initial_accumulator_value) and "linear" (at 0). ApplyGradients fails
// INVALID_ARGUMENT unless learning_rate_power <= 0, initial_accumulator_value >= 0 and
// both regularization strengths >= 0.
class FtrlOptimizer : public Optimizer {
 public:
  explicit FtrlOptimizer(LearningRate learning_rate, double learning_rate_power = -0.5,
                         double initial_accumulator_value = 0.1,
                         double l1_regularization_strength = 0.0,
                         double l2_regularization_strength = 0.0);

 protected:
  absl::Status CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;
  bool HasSparseUpdate() const override { return true; }
  Output ApplySparse(const Scope& scope, const IndexedSlices& slices, const Variable& var) override;

 private:
  const LearningRate learning_rate_;
  const double learning_rate_power_, initial_accumulator_value_, l1_, l2_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPTIMIZERS_H_

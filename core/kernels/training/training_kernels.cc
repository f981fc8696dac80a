// CPU kernels of the optimizer updates (GradientDescent, Momentum, Adam, Adagrad,
// RMSProp, Adadelta, Ftrl) and their sparse forms (SparseApply*: only the rows named
// by `indices` change). Each locks its variables (in address order), checks that they
// are initialised and shaped like the gradient, makes their buffers exclusive
// (copy-on-write) and updates them in place. The math of an update is written once,
// over n elements, and applied to the whole tensor (dense) or to each named row in
// order (sparse, as TensorFlow's kernels: a repeated index is updated twice; the
// optimizers sum repeated indices first).

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/kernels/state/var_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"

namespace overseer {
namespace {

// n elements of a variable, slot or gradient (a row need not be aligned).
template <typename T>
using Vec = Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor, Eigen::DenseIndex>>;

// Where an update's inputs are: its variables (ref inputs, the first the variable,
// the rest its slots), its scalars, its gradient and, for the sparse form, the rows
// the gradient's slices belong to (-1: dense).
struct ApplyInputs {
  std::vector<int> vars;
  std::vector<int> scalars;
  int grad;
  int indices = -1;
};

// Base of the Apply* and SparseApply* kernels: reads and checks the inputs, then runs
// the update under the variables' locks.
class ApplyOpBase : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    if (c->op_def().FindAttr("use_nesterov") != nullptr) {
      RETURN_IF_ERROR(c->GetAttr("use_nesterov", &use_nesterov_));
    }
    if (c->op_def().FindAttr("update_slots") != nullptr) {
      RETURN_IF_ERROR(c->GetAttr("update_slots", &update_slots_));
    }
    return absl::OkStatus();
  }

 protected:
  // Calls update(TypeTag<T>, T* const* vars, const T* scalars, const T* grad, n) once
  // over every element (dense) or once per row of `in.indices`, with the variables
  // prepared for an in-place write.
  template <typename Update>
  absl::Status Apply(OpKernelContext* ctx, const ApplyInputs& in, Update&& update) {
    std::vector<Var*> vars;
    for (int i : in.vars) {
      ASSIGN_OR_RETURN(Var * v, RefInput(ctx, i));
      vars.push_back(v);
    }
    std::vector<Tensor> scalars;
    for (int i : in.scalars) {
      ASSIGN_OR_RETURN(Tensor s, ctx->input_value(i));
      if (s.dims() != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(type_string(), " input ", i, " (", InputNodeName(*ctx, i),
                         ") must be a scalar, got shape ", s.shape().DebugString()));
      }
      scalars.push_back(std::move(s));
    }
    ASSIGN_OR_RETURN(Tensor grad, ctx->input_value(in.grad));
    for (const Tensor& s : scalars) {
      if (s.dtype() != grad.dtype()) {
        return absl::InvalidArgumentError(
            absl::StrCat(type_string(), " scalar of ", DataTypeString(s.dtype()),
                         " does not match the gradient's ", DataTypeString(grad.dtype())));
      }
    }
    RETURN_IF_ERROR(CheckScalars(scalars));
    std::vector<int64_t> rows;
    if (in.indices >= 0) {
      ASSIGN_OR_RETURN(Tensor indices, ctx->input_value(in.indices));
      if (indices.dims() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(type_string(), ": indices (", InputNodeName(*ctx, in.indices),
                         ") must be a vector, got shape ", indices.shape().DebugString()));
      }
      rows = Int64Values(indices);
    }
    {
      VarLocks locks(vars);
      std::vector<Tensor*> tensors;
      for (size_t k = 0; k < vars.size(); ++k) {
        // `locks` holds it: a set taken at run time, which the analysis cannot follow.
        vars[k]->mu()->AssertHeld();
        if (!vars[k]->tensor()->IsInitialized()) return UninitializedError(*ctx, in.vars[k]);
        tensors.push_back(vars[k]->tensor());
      }
      const TensorShape var_shape = tensors[0]->shape();
      RETURN_IF_ERROR(CheckShapes(*ctx, in, tensors, grad, rows));
      for (Var* v : vars) {
        v->mu()->AssertHeld();
        v->PrepareForUpdate();  // Swaps the buffer inside the same Tensor.
      }
      RETURN_IF_ERROR(VisitFloatTypes(grad.dtype(), type_string(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<T> s;
        for (const Tensor& t : scalars) s.push_back(t.scalar<T>());
        std::vector<T*> base, at;
        for (Tensor* t : tensors) base.push_back(t->data<T>());
        at = base;
        const T* g = grad.data<T>();
        if (in.indices < 0) {
          update(tag, at.data(), s.data(), g, grad.NumElements());
          return absl::OkStatus();
        }
        const int64_t inner =
            var_shape.dim_size(0) == 0 ? 0 : var_shape.num_elements() / var_shape.dim_size(0);
        for (size_t i = 0; i < rows.size(); ++i) {
          for (size_t k = 0; k < base.size(); ++k) at[k] = base[k] + rows[i] * inner;
          update(tag, at.data(), s.data(), g + static_cast<int64_t>(i) * inner, inner);
        }
        return absl::OkStatus();
      }));
    }
    ctx->set_output_ref(0, ctx->input_ref_shared(in.vars[0]));
    return absl::OkStatus();
  }

  // Checks the scalars' values (their dtype matches the gradient's).
  virtual absl::Status CheckScalars(const std::vector<Tensor>& /*scalars*/) const {
    return absl::OkStatus();
  }

  bool use_nesterov_ = false;
  bool update_slots_ = true;

 private:
  // Every variable is shaped like the first; the gradient is too (dense) or holds one
  // row of it per index, each index a row of the variable (sparse).
  absl::Status CheckShapes(const OpKernelContext& ctx, const ApplyInputs& in,
                           const std::vector<Tensor*>& vars, const Tensor& grad,
                           const std::vector<int64_t>& rows) const {
    const TensorShape& var_shape = vars[0]->shape();
    for (size_t k = 0; k < vars.size(); ++k) {
      const Tensor& t = *vars[k];
      if (t.dtype() != grad.dtype() || t.shape() != var_shape) {
        return absl::InvalidArgumentError(absl::StrCat(
            type_string(), ": ", InputNodeName(ctx, in.vars[k]), " of ", DataTypeString(t.dtype()),
            " ", t.shape().DebugString(), " does not match the gradient of ",
            DataTypeString(grad.dtype()), " ", grad.shape().DebugString(),
            k == 0 ? "" : absl::StrCat(" and the variable of ", var_shape.DebugString())));
      }
    }
    if (in.indices < 0) {
      if (grad.shape() == var_shape) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat(type_string(), ": ", InputNodeName(ctx, in.vars[0]), " of shape ",
                       var_shape.DebugString(), " does not match the gradient of shape ",
                       grad.shape().DebugString()));
    }
    if (var_shape.dims() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(type_string(), " needs a variable of rank 1 or more; ",
                       InputNodeName(ctx, in.vars[0]), " is a scalar"));
    }
    std::vector<int64_t> want = var_shape.dim_sizes();
    want[0] = static_cast<int64_t>(rows.size());
    if (grad.shape().dim_sizes() != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          type_string(), ": the gradient of shape ", grad.shape().DebugString(), " does not match ",
          rows.size(), " indices into ", InputNodeName(ctx, in.vars[0]), " of shape ",
          var_shape.DebugString(), " (want ", TensorShape(want).DebugString(), ")"));
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] < 0 || rows[i] >= var_shape.dim_size(0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            type_string(), ": indices[", i, "] = ", rows[i], " is not in [0, ",
            var_shape.dim_size(0), ") (the rows of ", InputNodeName(ctx, in.vars[0]), ")"));
      }
    }
    return absl::OkStatus();
  }
};

// The attrs an update's math may follow.
struct MathBase {
  bool nesterov = false;
  bool update_slots = true;
};

// var -= lr * grad.
struct GradientDescentMath : MathBase {
  template <typename Tag, typename T = typename Tag::type>
  void operator()(Tag, T* const* v, const T* s, const T* g, int64_t n) const {
    Vec<T>(v[0], n) -= Vec<const T>(g, n) * s[0];
  }
};

struct MomentumMath : MathBase {
  template <typename Tag, typename T = typename Tag::type>
  void operator()(Tag, T* const* v, const T* s, const T* g, int64_t n) const {
    Vec<T> var(v[0], n), accum(v[1], n);
    Vec<const T> grad(g, n);
    const T lr = s[0], momentum = s[1];
    accum = accum * momentum + grad;
    if (nesterov) {
      var -= grad * lr + accum * momentum * lr;
    } else {
      var -= accum * lr;
    }
  }
};

struct AdamMath : MathBase {
  template <typename Tag, typename T = typename Tag::type>
  void operator()(Tag, T* const* v, const T* s, const T* g, int64_t n) const {
    Vec<T> var(v[0], n), m(v[1], n), vv(v[2], n);
    Vec<const T> grad(g, n);
    const T beta1_power = s[0], beta2_power = s[1], lr = s[2], beta1 = s[3];
    const T beta2 = s[4], epsilon = s[5];
    const T one(1);
    const T lr_t = lr * std::sqrt(one - beta2_power) / (one - beta1_power);
    m += (grad - m) * (one - beta1);
    vv += (grad.square() - vv) * (one - beta2);
    if (nesterov) {
      var -= ((grad * (one - beta1) + m * beta1) * lr_t) / (vv.sqrt() + epsilon);
    } else {
      var -= (m * lr_t) / (vv.sqrt() + epsilon);
    }
  }
};

struct AdagradMath : MathBase {
  template <typename Tag, typename T = typename Tag::type>
  void operator()(Tag, T* const* v, const T* s, const T* g, int64_t n) const {
    Vec<T> var(v[0], n), accum(v[1], n);
    Vec<const T> grad(g, n);
    if (update_slots) accum += grad.square();
    var -= grad * s[0] * accum.rsqrt();
  }
};

struct RMSPropMath : MathBase {
  template <typename Tag, typename T = typename Tag::type>
  void operator()(Tag, T* const* v, const T* s, const T* g, int64_t n) const {
    Vec<T> var(v[0], n), ms(v[1], n), mom(v[2], n);
    Vec<const T> grad(g, n);
    const T lr = s[0], rho = s[1], momentum = s[2], epsilon = s[3];
    ms += (grad.square() - ms) * (T(1) - rho);
    mom = mom * momentum + (ms + epsilon).rsqrt() * lr * grad;
    var -= mom;
  }
};

struct AdadeltaMath : MathBase {
  template <typename Tag, typename T = typename Tag::type>
  void operator()(Tag, T* const* v, const T* s, const T* g, int64_t n) const {
    Vec<T> var(v[0], n), accum(v[1], n), accum_update(v[2], n);
    Vec<const T> grad(g, n);
    const T lr = s[0], rho = s[1], epsilon = s[2];
    accum = accum * rho + grad.square() * (T(1) - rho);
    const Eigen::Tensor<T, 1, Eigen::RowMajor> update =
        (accum_update + epsilon).sqrt() * (accum + epsilon).rsqrt() * grad;
    accum_update = accum_update * rho + update.square() * (T(1) - rho);
    var -= update * lr;
  }
};

// TensorFlow's FTRL-Proximal (McMahan et al. 2013) with its learning-rate power:
// new_accum = accum + grad^2;
// linear += grad - (new_accum^-p - accum^-p) / lr * var;
// var = |linear| > l1 ? (sign(linear) * l1 - linear) / (new_accum^-p / lr + 2 * l2) : 0.
struct FtrlMath : MathBase {
  template <typename Tag, typename T = typename Tag::type>
  void operator()(Tag, T* const* v, const T* s, const T* g, int64_t n) const {
    const T lr = s[0], l1 = s[1], l2 = s[2], power = s[3];
    T* var = v[0];
    T* accum = v[1];
    T* linear = v[2];
    for (int64_t i = 0; i < n; ++i) {
      const T new_accum = accum[i] + g[i] * g[i];
      const T sigma = power == T(-0.5) ? std::sqrt(new_accum) - std::sqrt(accum[i])
                                       : std::pow(new_accum, -power) - std::pow(accum[i], -power);
      linear[i] += g[i] - sigma / lr * var[i];
      const T quadratic =
          (power == T(-0.5) ? std::sqrt(new_accum) : std::pow(new_accum, -power)) / lr + T(2) * l2;
      const T sign = linear[i] > T(0) ? T(1) : T(-1);
      var[i] = std::abs(linear[i]) > l1 ? (sign * l1 - linear[i]) / quadratic : T(0);
      accum[i] = new_accum;
    }
  }
};

// A kernel applying `Math` to its inputs at kInputs().
template <typename Math, ApplyInputs (*kInputs)()>
class UpdateOp : public ApplyOpBase {
 public:
  using ApplyOpBase::ApplyOpBase;
  absl::Status Compute(OpKernelContext* ctx) override {
    Math math;
    math.nesterov = use_nesterov_;
    math.update_slots = update_slots_;
    return Apply(ctx, kInputs(), math);
  }
};

ApplyInputs GradientDescentInputs() { return {{0}, {1}, 2}; }
using ApplyGradientDescentOp = UpdateOp<GradientDescentMath, GradientDescentInputs>;
REGISTER_KERNEL(ApplyGradientDescentOp, "ApplyGradientDescent");

ApplyInputs MomentumInputs() { return {{0, 1}, {2, 4}, 3}; }
ApplyInputs SparseMomentumInputs() { return {{0, 1}, {2, 5}, 3, 4}; }
using ApplyMomentumOp = UpdateOp<MomentumMath, MomentumInputs>;
using SparseApplyMomentumOp = UpdateOp<MomentumMath, SparseMomentumInputs>;
REGISTER_KERNEL(ApplyMomentumOp, "ApplyMomentum");
REGISTER_KERNEL(SparseApplyMomentumOp, "SparseApplyMomentum");

ApplyInputs AdamInputs() { return {{0, 1, 2}, {3, 4, 5, 6, 7, 8}, 9}; }
using ApplyAdamOp = UpdateOp<AdamMath, AdamInputs>;
REGISTER_KERNEL(ApplyAdamOp, "ApplyAdam");

ApplyInputs AdagradInputs() { return {{0, 1}, {2}, 3}; }
ApplyInputs SparseAdagradInputs() { return {{0, 1}, {2}, 3, 4}; }
using ApplyAdagradOp = UpdateOp<AdagradMath, AdagradInputs>;
using SparseApplyAdagradOp = UpdateOp<AdagradMath, SparseAdagradInputs>;
REGISTER_KERNEL(ApplyAdagradOp, "ApplyAdagrad");
REGISTER_KERNEL(SparseApplyAdagradOp, "SparseApplyAdagrad");

ApplyInputs RMSPropInputs() { return {{0, 1, 2}, {3, 4, 5, 6}, 7}; }
ApplyInputs SparseRMSPropInputs() { return {{0, 1, 2}, {3, 4, 5, 6}, 7, 8}; }
using ApplyRMSPropOp = UpdateOp<RMSPropMath, RMSPropInputs>;
using SparseApplyRMSPropOp = UpdateOp<RMSPropMath, SparseRMSPropInputs>;
REGISTER_KERNEL(ApplyRMSPropOp, "ApplyRMSProp");
REGISTER_KERNEL(SparseApplyRMSPropOp, "SparseApplyRMSProp");

ApplyInputs AdadeltaInputs() { return {{0, 1, 2}, {3, 4, 5}, 6}; }
ApplyInputs SparseAdadeltaInputs() { return {{0, 1, 2}, {3, 4, 5}, 6, 7}; }
using ApplyAdadeltaOp = UpdateOp<AdadeltaMath, AdadeltaInputs>;
using SparseApplyAdadeltaOp = UpdateOp<AdadeltaMath, SparseAdadeltaInputs>;
REGISTER_KERNEL(ApplyAdadeltaOp, "ApplyAdadelta");
REGISTER_KERNEL(SparseApplyAdadeltaOp, "SparseApplyAdadelta");

// Ftrl also checks its hyperparameters, as TensorFlow's kernel.
template <ApplyInputs (*kInputs)()>
class FtrlOp : public UpdateOp<FtrlMath, kInputs> {
 public:
  using UpdateOp<FtrlMath, kInputs>::UpdateOp;

 protected:
  absl::Status CheckScalars(const std::vector<Tensor>& s) const override {
    const double lr = AsDouble(s[0]), l1 = AsDouble(s[1]), l2 = AsDouble(s[2]);
    const double power = AsDouble(s[3]);
    if (lr > 0 && l1 >= 0 && l2 >= 0 && power <= 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        this->type_string(), " needs lr > 0, l1 >= 0, l2 >= 0 and lr_power <= 0; got lr ", lr,
        ", l1 ", l1, ", l2 ", l2, ", lr_power ", power));
  }

 private:
  static double AsDouble(const Tensor& t) {
    return t.dtype() == DT_FLOAT ? t.scalar<float>() : t.scalar<double>();
  }
};

ApplyInputs FtrlInputs() { return {{0, 1, 2}, {4, 5, 6, 7}, 3}; }
ApplyInputs SparseFtrlInputs() { return {{0, 1, 2}, {5, 6, 7, 8}, 3, 4}; }
using ApplyFtrlOp = FtrlOp<FtrlInputs>;
using SparseApplyFtrlOp = FtrlOp<SparseFtrlInputs>;
REGISTER_KERNEL(ApplyFtrlOp, "ApplyFtrl");
REGISTER_KERNEL(SparseApplyFtrlOp, "SparseApplyFtrl");

}  // namespace
}  // namespace overseer

// CPU kernels of the optimizer updates (GradientDescent, Momentum, Adam, Adagrad,
// RMSProp, Adadelta). Each locks its variables (in address order),
// checks that they are initialised and shaped like the gradient, makes their buffers
// exclusive (copy-on-write) and updates them in place.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/kernels/state/var_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// Base of the Apply* kernels: reads and checks the inputs, then runs the update under
// the variables' locks.
class ApplyOpBase : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    if (c->op_def().FindAttr("use_nesterov") != nullptr) {
      RETURN_IF_ERROR(c->GetAttr("use_nesterov", &use_nesterov_));
    }
    return absl::OkStatus();
  }

 protected:
  // Reads ref inputs `var_inputs`, scalar inputs `scalar_inputs` and the gradient
  // `grad_input`, locks the variables and calls update(TypeTag<T>, tensors, scalars,
  // grad) with the variables' tensors, each prepared for an in-place write.
  template <typename Update>
  absl::Status Apply(OpKernelContext* ctx, const std::vector<int>& var_inputs,
                     const std::vector<int>& scalar_inputs, int grad_input, Update&& update) {
    std::vector<Var*> vars;
    for (int i : var_inputs) {
      ASSIGN_OR_RETURN(Var * v, RefInput(ctx, i));
      vars.push_back(v);
    }
    std::vector<Tensor> scalars;
    for (int i : scalar_inputs) {
      ASSIGN_OR_RETURN(Tensor s, ctx->input_value(i));
      if (s.dims() != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(type_string(), " input ", i, " (", InputNodeName(*ctx, i),
                         ") must be a scalar, got shape ", s.shape().DebugString()));
      }
      scalars.push_back(std::move(s));
    }
    ASSIGN_OR_RETURN(Tensor grad, ctx->input_value(grad_input));
    for (const Tensor& s : scalars) {
      if (s.dtype() != grad.dtype()) {
        return absl::InvalidArgumentError(
            absl::StrCat(type_string(), " scalar of ", DataTypeString(s.dtype()),
                         " does not match the gradient's ", DataTypeString(grad.dtype())));
      }
    }
    {
      VarLocks locks(vars);
      std::vector<Tensor*> tensors;
      for (size_t k = 0; k < vars.size(); ++k) {
        Var* v = vars[k];
        // `locks` holds it: a set taken at run time, which the analysis cannot follow.
        v->mu()->AssertHeld();
        if (!v->tensor()->IsInitialized()) return UninitializedError(*ctx, var_inputs[k]);
        if (v->tensor()->shape() != grad.shape() || v->dtype() != grad.dtype()) {
          return absl::InvalidArgumentError(
              absl::StrCat(type_string(), ": ", InputNodeName(*ctx, var_inputs[k]), " of ",
                           DataTypeString(v->dtype()), " ", v->tensor()->shape().DebugString(),
                           " does not match the gradient of ", DataTypeString(grad.dtype()), " ",
                           grad.shape().DebugString()));
        }
      }
      for (Var* v : vars) {
        v->mu()->AssertHeld();
        v->PrepareForUpdate();
        tensors.push_back(v->tensor());
      }
      RETURN_IF_ERROR(VisitFloatTypes(grad.dtype(), type_string(), [&](auto tag) {
        update(tag, tensors, scalars, grad);
        return absl::OkStatus();
      }));
    }
    ctx->set_output_ref(0, ctx->input_ref_shared(var_inputs[0]));
    return absl::OkStatus();
  }

  bool use_nesterov_ = false;
};

class ApplyGradientDescentOp : public ApplyOpBase {
 public:
  using ApplyOpBase::ApplyOpBase;
  absl::Status Compute(OpKernelContext* ctx) override {
    return Apply(ctx, {0}, {1}, 2,
                 [](auto tag, const std::vector<Tensor*>& vars, const std::vector<Tensor>& s,
                    const Tensor& delta) {
                   using T = typename decltype(tag)::type;
                   auto var = vars[0]->flat<T>();
                   var -= delta.flat<T>() * s[0].scalar<T>();
                 });
  }
};
REGISTER_KERNEL(ApplyGradientDescentOp, "ApplyGradientDescent");

class ApplyMomentumOp : public ApplyOpBase {
 public:
  using ApplyOpBase::ApplyOpBase;
  absl::Status Compute(OpKernelContext* ctx) override {
    const bool nesterov = use_nesterov_;
    return Apply(ctx, {0, 1}, {2, 4}, 3,
                 [nesterov](auto tag, const std::vector<Tensor*>& vars,
                            const std::vector<Tensor>& s, const Tensor& grad_t) {
                   using T = typename decltype(tag)::type;
                   auto var = vars[0]->flat<T>();
                   auto accum = vars[1]->flat<T>();
                   auto grad = grad_t.flat<T>();
                   const T lr = s[0].scalar<T>(), momentum = s[1].scalar<T>();
                   accum = accum * momentum + grad;
                   if (nesterov) {
                     var -= grad * lr + accum * momentum * lr;
                   } else {
                     var -= accum * lr;
                   }
                 });
  }
};
REGISTER_KERNEL(ApplyMomentumOp, "ApplyMomentum");

class ApplyAdamOp : public ApplyOpBase {
 public:
  using ApplyOpBase::ApplyOpBase;
  absl::Status Compute(OpKernelContext* ctx) override {
    const bool nesterov = use_nesterov_;
    return Apply(ctx, {0, 1, 2}, {3, 4, 5, 6, 7, 8}, 9,
                 [nesterov](auto tag, const std::vector<Tensor*>& vars,
                            const std::vector<Tensor>& s, const Tensor& grad_t) {
                   using T = typename decltype(tag)::type;
                   auto var = vars[0]->flat<T>();
                   auto m = vars[1]->flat<T>();
                   auto v = vars[2]->flat<T>();
                   auto grad = grad_t.flat<T>();
                   const T beta1_power = s[0].scalar<T>(), beta2_power = s[1].scalar<T>();
                   const T lr = s[2].scalar<T>(), beta1 = s[3].scalar<T>();
                   const T beta2 = s[4].scalar<T>(), epsilon = s[5].scalar<T>();
                   const T one(1);
                   const T lr_t = lr * std::sqrt(one - beta2_power) / (one - beta1_power);
                   m += (grad - m) * (one - beta1);
                   v += (grad.square() - v) * (one - beta2);
                   if (nesterov) {
                     var -= ((grad * (one - beta1) + m * beta1) * lr_t) / (v.sqrt() + epsilon);
                   } else {
                     var -= (m * lr_t) / (v.sqrt() + epsilon);
                   }
                 });
  }
};
REGISTER_KERNEL(ApplyAdamOp, "ApplyAdam");

class ApplyAdagradOp : public ApplyOpBase {
 public:
  using ApplyOpBase::ApplyOpBase;
  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(ApplyOpBase::Init(c));
    return c->GetAttr("update_slots", &update_slots_);
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    const bool update_slots = update_slots_;
    return Apply(ctx, {0, 1}, {2}, 3,
                 [update_slots](auto tag, const std::vector<Tensor*>& vars,
                                const std::vector<Tensor>& s, const Tensor& grad_t) {
                   using T = typename decltype(tag)::type;
                   auto var = vars[0]->flat<T>();
                   auto accum = vars[1]->flat<T>();
                   auto grad = grad_t.flat<T>();
                   if (update_slots) accum += grad.square();
                   var -= grad * s[0].scalar<T>() * accum.rsqrt();
                 });
  }

 private:
  bool update_slots_ = true;
};
REGISTER_KERNEL(ApplyAdagradOp, "ApplyAdagrad");

class ApplyRMSPropOp : public ApplyOpBase {
 public:
  using ApplyOpBase::ApplyOpBase;
  absl::Status Compute(OpKernelContext* ctx) override {
    return Apply(ctx, {0, 1, 2}, {3, 4, 5, 6}, 7,
                 [](auto tag, const std::vector<Tensor*>& vars, const std::vector<Tensor>& s,
                    const Tensor& grad_t) {
                   using T = typename decltype(tag)::type;
                   auto var = vars[0]->flat<T>();
                   auto ms = vars[1]->flat<T>();
                   auto mom = vars[2]->flat<T>();
                   auto grad = grad_t.flat<T>();
                   const T lr = s[0].scalar<T>(), rho = s[1].scalar<T>();
                   const T momentum = s[2].scalar<T>(), epsilon = s[3].scalar<T>();
                   ms += (grad.square() - ms) * (T(1) - rho);
                   mom = mom * momentum + (ms + epsilon).rsqrt() * lr * grad;
                   var -= mom;
                 });
  }
};
REGISTER_KERNEL(ApplyRMSPropOp, "ApplyRMSProp");

class ApplyAdadeltaOp : public ApplyOpBase {
 public:
  using ApplyOpBase::ApplyOpBase;
  absl::Status Compute(OpKernelContext* ctx) override {
    return Apply(ctx, {0, 1, 2}, {3, 4, 5}, 6,
                 [](auto tag, const std::vector<Tensor*>& vars, const std::vector<Tensor>& s,
                    const Tensor& grad_t) {
                   using T = typename decltype(tag)::type;
                   auto var = vars[0]->flat<T>();
                   auto accum = vars[1]->flat<T>();
                   auto accum_update = vars[2]->flat<T>();
                   auto grad = grad_t.flat<T>();
                   const T lr = s[0].scalar<T>(), rho = s[1].scalar<T>();
                   const T epsilon = s[2].scalar<T>();
                   accum = accum * rho + grad.square() * (T(1) - rho);
                   const Eigen::Tensor<T, 1, Eigen::RowMajor> update =
                       (accum_update + epsilon).sqrt() * (accum + epsilon).rsqrt() * grad;
                   accum_update = accum_update * rho + update.square() * (T(1) - rho);
                   var -= update * lr;
                 });
  }
};
REGISTER_KERNEL(ApplyAdadeltaOp, "ApplyAdadelta");

}  // namespace
}  // namespace overseer

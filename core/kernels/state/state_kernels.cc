// CPU kernels of variables and their assignments.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/kernels/state/var_util.h"
#include "core/op_kernel.h"
#include "core/resource_mgr.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"

namespace overseer {
namespace {

// The Var that VariableV2 creates; it remembers the declared shape so that a validating
// Assign can reject values that do not fit it.
class VariableOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(c->GetAttr("shape", &shape_));
    RETURN_IF_ERROR(c->GetAttr("dtype", &dtype_));
    RETURN_IF_ERROR(c->GetAttr("container", &container_));
    RETURN_IF_ERROR(c->GetAttr("shared_name", &shared_name_));
    if (container_.empty()) container_ = ResourceMgr::kDefaultContainer;
    if (shared_name_.empty()) shared_name_ = name();
    return absl::OkStatus();
  }

  // Looks the variable up on every run (no caching), so that a cleared container yields
  // a fresh, uninitialised variable.
  absl::Status Compute(OpKernelContext* ctx) override {
    if (ctx->resource_mgr() == nullptr) {
      return absl::FailedPreconditionError("VariableV2 needs a resource manager");
    }
    std::function<absl::StatusOr<std::shared_ptr<Var>>()> creator =
        [this]() -> absl::StatusOr<std::shared_ptr<Var>> {
      return std::make_shared<DeclaredVar>(dtype_, shape_);
    };
    ASSIGN_OR_RETURN(std::shared_ptr<Var> var,
                     ctx->resource_mgr()->LookupOrCreate<Var>(container_, shared_name_, creator));
    if (var->dtype() != dtype_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable ", container_, "/", shared_name_, " exists with dtype ",
          DataTypeString(var->dtype()), ", but this node declares ", DataTypeString(dtype_)));
    }
    ctx->set_output_ref(0, std::move(var));
    return absl::OkStatus();
  }

 private:
  PartialShape shape_;
  DataType dtype_ = DT_INVALID;
  std::string container_;
  std::string shared_name_;
};
REGISTER_KERNEL(VariableOp, "VariableV2");

// INVALID_ARGUMENT unless `value` has the dtype of `var`.
absl::Status CheckValue(const OpKernelContext& ctx, Var* var, const Tensor& value) {
  if (value.dtype() != var->dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot write a value of dtype ", DataTypeString(value.dtype()), " to variable ",
        InputNodeName(ctx, 0), " of dtype ", DataTypeString(var->dtype())));
  }
  return absl::OkStatus();
}

class AssignOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    return c->GetAttr("validate_shape", &validate_shape_);
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Var * var, RefInput(ctx, 0));
    ASSIGN_OR_RETURN(Tensor value, ctx->input_value(1));
    RETURN_IF_ERROR(CheckValue(*ctx, var, value));
    {
      absl::MutexLock lock(var->mu());
      if (validate_shape_) RETURN_IF_ERROR(CheckAssignedShape(*ctx, 0, var, value.shape()));
      // Shares the value's buffer; in-place updates copy it first (Var::PrepareForUpdate).
      *var->tensor() = std::move(value);
    }
    ctx->set_output_ref(0, ctx->input_ref_shared(0));
    return absl::OkStatus();
  }

 private:
  bool validate_shape_ = true;
};
REGISTER_KERNEL(AssignOp, "Assign");

// AssignAdd (kSign = 1), AssignSub (kSign = -1) and AssignMul (kSign = 0).
template <int kSign>
class AssignUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Var * var, RefInput(ctx, 0));
    ASSIGN_OR_RETURN(Tensor value, ctx->input_value(1));
    RETURN_IF_ERROR(CheckValue(*ctx, var, value));
    {
      absl::MutexLock lock(var->mu());
      if (!var->is_initialized()) return UninitializedError(*ctx, 0);
      if (var->tensor()->shape() != value.shape()) {
        return absl::InvalidArgumentError(absl::StrCat(
            type_string(), " requires shapes of both tensors to match: variable ",
            InputNodeName(*ctx, 0), " has shape ", var->tensor()->shape().DebugString(),
            ", value has shape ", value.shape().DebugString()));
      }
      var->PrepareForUpdate();
      Tensor* t = var->tensor();
      RETURN_IF_ERROR(VisitNumericTypes(value.dtype(), type_string(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (kSign == 0) {
          t->flat<T>() *= value.flat<T>();
        } else if (kSign > 0) {
          t->flat<T>() += value.flat<T>();
        } else {
          t->flat<T>() -= value.flat<T>();
        }
        return absl::OkStatus();
      }));
    }
    ctx->set_output_ref(0, ctx->input_ref_shared(0));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(AssignUpdateOp<1>, "AssignAdd");
REGISTER_KERNEL(AssignUpdateOp<-1>, "AssignSub");
REGISTER_KERNEL(AssignUpdateOp<0>, "AssignMul");

class CountUpToOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Init(OpKernelConstruction* c) override { return c->GetAttr("limit", &limit_); }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Var * var, RefInput(ctx, 0));
    Tensor before;
    {
      absl::MutexLock lock(var->mu());
      if (!var->is_initialized()) return UninitializedError(*ctx, 0);
      if (var->tensor()->dims() != 0) {
        return absl::InvalidArgumentError(absl::StrCat("CountUpTo needs a scalar variable; ",
                                                       InputNodeName(*ctx, 0), " has shape ",
                                                       var->tensor()->shape().DebugString()));
      }
      // No lambda here: the lock analysis does not follow var->mu() into one.
      const DataType dtype = var->dtype();
      if (dtype != DT_INT32 && dtype != DT_INT64) {
        return absl::InvalidArgumentError(
            absl::StrCat("CountUpTo counts int32 and int64 variables; ", InputNodeName(*ctx, 0),
                         " is ", DataTypeString(dtype)));
      }
      const int64_t value = dtype == DT_INT32 ? int64_t{var->tensor()->scalar<int32_t>()}
                                              : var->tensor()->scalar<int64_t>();
      if (value >= limit_) return absl::OutOfRangeError(absl::StrCat("Reached limit of ", limit_));
      var->PrepareForUpdate();
      if (dtype == DT_INT32) {
        var->tensor()->scalar<int32_t>() = static_cast<int32_t>(value + 1);
        before = Tensor::Scalar<int32_t>(static_cast<int32_t>(value));
      } else {
        var->tensor()->scalar<int64_t>() = value + 1;
        before = Tensor::Scalar<int64_t>(value);
      }
    }
    ctx->set_output(0, std::move(before));
    return absl::OkStatus();
  }

 private:
  int64_t limit_ = 0;
};
REGISTER_KERNEL(CountUpToOp, "CountUpTo");

class IsVariableInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Var * var, RefInput(ctx, 0));
    bool initialized;
    {
      absl::MutexLock lock(var->mu());
      initialized = var->is_initialized();
    }
    ctx->set_output(0, Tensor::Scalar<bool>(initialized));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(IsVariableInitializedOp, "IsVariableInitialized");

class ReportUninitializedVariablesOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(c->GetAttr("var_names", &var_names_));
    if (static_cast<int>(var_names_.size()) != num_inputs()) {
      return absl::InvalidArgumentError(absl::StrCat("ReportUninitializedVariables has ",
                                                     num_inputs(), " is_initialized inputs but ",
                                                     var_names_.size(), " var_names"));
    }
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    std::vector<std::string> names;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& flag = ctx->input(i);
      if (flag.dtype() != DT_BOOL || flag.NumElements() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("is_initialized input ", i, " must be a bool scalar, got ",
                         DataTypeString(flag.dtype()), " ", flag.shape().DebugString()));
      }
      if (!flag.scalar<bool>()) names.push_back(var_names_[i]);
    }
    Tensor out(DT_STRING, TensorShape({static_cast<int64_t>(names.size())}));
    for (size_t i = 0; i < names.size(); ++i) out.data<std::string>()[i] = names[i];
    ctx->set_output(0, std::move(out));
    return absl::OkStatus();
  }

 private:
  std::vector<std::string> var_names_;
};
REGISTER_KERNEL(ReportUninitializedVariablesOp, "ReportUninitializedVariables");

}  // namespace
}  // namespace overseer

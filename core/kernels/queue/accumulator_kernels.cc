// CPU kernels of the ConditionalAccumulator ops. AccumulatorTakeGradient waits as the
// queues' dequeues do: on the step's cancellation, its deadline and its own timeout_ms.

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/kernels/queue/conditional_accumulator.h"
#include "core/kernels/queue/handle_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

class ConditionalAccumulatorOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(c->GetAttr("dtype", &dtype_));
    RETURN_IF_ERROR(c->GetAttr("shape", &shape_));
    RETURN_IF_ERROR(c->GetAttr("container", &container_));
    RETURN_IF_ERROR(c->GetAttr("shared_name", &shared_name_));
    std::string reduction;
    RETURN_IF_ERROR(c->GetAttr("reduction_type", &reduction));
    if (reduction == "MEAN") {
      reduction_ = ConditionalAccumulator::Reduction::kMean;
    } else if (reduction == "SUM") {
      reduction_ = ConditionalAccumulator::Reduction::kSum;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("reduction_type must be 'MEAN' or 'SUM', not '", reduction, "'"));
    }
    if (container_.empty()) container_ = ResourceMgr::kDefaultContainer;
    if (shared_name_.empty()) shared_name_ = name();
    return ConditionalAccumulator::Create(shared_name_, dtype_, shape_, reduction_).status();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    if (ctx->resource_mgr() == nullptr) {
      return absl::FailedPreconditionError("ConditionalAccumulator needs a resource manager");
    }
    std::function<absl::StatusOr<std::shared_ptr<ConditionalAccumulator>>()> creator = [this]() {
      return ConditionalAccumulator::Create(shared_name_, dtype_, shape_, reduction_);
    };
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator,
                     ctx->resource_mgr()->LookupOrCreate<ConditionalAccumulator>(
                         container_, shared_name_, creator));
    RETURN_IF_ERROR(accumulator->MatchesSignature(dtype_, shape_, reduction_));
    ctx->set_output(0, Tensor::Scalar<std::string>(absl::StrCat(container_, "/", shared_name_)));
    return absl::OkStatus();
  }

 private:
  DataType dtype_ = DT_INVALID;
  PartialShape shape_;
  ConditionalAccumulator::Reduction reduction_ = ConditionalAccumulator::Reduction::kMean;
  std::string container_;
  std::string shared_name_;
};
REGISTER_KERNEL(ConditionalAccumulatorOp, "ConditionalAccumulator");

absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> GetAccumulator(OpKernelContext* ctx) {
  return LookupHandle<ConditionalAccumulator>(ctx, "accumulator");
}

// Input `i` as an int64 scalar (named `what` in errors).
absl::StatusOr<int64_t> Int64Scalar(OpKernelContext* ctx, int i, const char* what) {
  ASSIGN_OR_RETURN(Tensor t, ctx->input_value(i));
  if (t.dtype() != DT_INT64 || t.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be an int64 scalar, got ",
                                                   DataTypeString(t.dtype()), " ",
                                                   t.shape().DebugString()));
  }
  return t.scalar<int64_t>();
}

class AccumulatorApplyGradientOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator, GetAccumulator(ctx));
    ASSIGN_OR_RETURN(const int64_t local_step, Int64Scalar(ctx, 1, "local_step"));
    ASSIGN_OR_RETURN(Tensor grad, ctx->input_value(2));
    return accumulator->ApplyGradient(local_step, grad);
  }
};
REGISTER_KERNEL(AccumulatorApplyGradientOp, "AccumulatorApplyGradient");

class AccumulatorTakeGradientOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    return c->GetAttr("timeout_ms", &timeout_ms_);
  }
  bool MayWait() const override { return true; }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator, GetAccumulator(ctx));
    ASSIGN_OR_RETURN(Tensor n, ctx->input_value(1));
    if (n.dtype() != DT_INT32 || n.dims() != 0) {
      return absl::InvalidArgumentError("num_required must be an int32 scalar");
    }
    ASSIGN_OR_RETURN(const QueueWait wait, MakeQueueWait(ctx, timeout_ms_, type_string()));
    ASSIGN_OR_RETURN(Tensor average, accumulator->TakeGradient(n.scalar<int32_t>(), wait));
    ctx->set_output(0, std::move(average));
    return absl::OkStatus();
  }

 private:
  int64_t timeout_ms_ = -1;
};
REGISTER_KERNEL(AccumulatorTakeGradientOp, "AccumulatorTakeGradient");

class AccumulatorSetGlobalStepOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator, GetAccumulator(ctx));
    ASSIGN_OR_RETURN(const int64_t step, Int64Scalar(ctx, 1, "new_global_step"));
    accumulator->SetGlobalStep(step);
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(AccumulatorSetGlobalStepOp, "AccumulatorSetGlobalStep");

class AccumulatorCancelTakesOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator, GetAccumulator(ctx));
    accumulator->CancelTakes();
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(AccumulatorCancelTakesOp, "AccumulatorCancelTakes");

class AccumulatorNumAccumulatedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::shared_ptr<ConditionalAccumulator> accumulator, GetAccumulator(ctx));
    ctx->set_output(0, Tensor::Scalar<int32_t>(accumulator->num_accumulated()));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(AccumulatorNumAccumulatedOp, "AccumulatorNumAccumulated");

}  // namespace
}  // namespace overseer

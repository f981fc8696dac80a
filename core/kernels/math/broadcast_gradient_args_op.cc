// BroadcastGradientArgs: the axes each side of a broadcast binary op's gradient is
// summed over.

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/math/axes.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

class BroadcastGradientArgsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& t0 = ctx->input(0);
    const Tensor& t1 = ctx->input(1);
    if (t0.dims() != 1 || t1.dims() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("BroadcastGradientArgs takes two shape vectors, got shapes ",
                       t0.shape().DebugString(), " and ", t1.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> s0, ReadIndexVector(t0, "s0"));
    ASSIGN_OR_RETURN(std::vector<int64_t> s1, ReadIndexVector(t1, "s1"));
    std::vector<int64_t> r0, r1;
    RETURN_IF_ERROR(BroadcastGradientAxes(s0, s1, &r0, &r1));
    SetOutput(ctx, 0, t0.dtype(), r0);
    SetOutput(ctx, 1, t0.dtype(), r1);
    return absl::OkStatus();
  }

 private:
  static void SetOutput(OpKernelContext* ctx, int i, DataType dtype,
                        const std::vector<int64_t>& axes) {
    const TensorShape shape({static_cast<int64_t>(axes.size())});
    if (dtype == DT_INT32) {
      ctx->set_output(i, Tensor::FromVector(std::vector<int32_t>(axes.begin(), axes.end()), shape));
    } else {
      ctx->set_output(i, Tensor::FromVector(axes, shape));
    }
  }
};

REGISTER_KERNEL(BroadcastGradientArgsOp, "BroadcastGradientArgs");

}  // namespace
}  // namespace overseer

// AddN: the elementwise sum of N tensors of one shape.

#include "absl/strings/str_cat.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

class AddNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  bool CostFollowsElements() const override { return true; }
  int64_t ElementsTouched(absl::Span<const TensorValue> inputs) const override {
    int64_t elements = 0;
    for (const TensorValue& v : inputs) elements += v.tensor.NumElements();
    return elements;
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& first = ctx->input(0);
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      const Tensor& t = ctx->input(i);
      if (t.shape() != first.shape() || t.dtype() != first.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Inputs to operation AddN must have the same size and shape. Input 0: ",
            first.shape().DebugString(), " != input ", i, ": ", t.shape().DebugString()));
      }
    }
    if (ctx->num_inputs() == 1) {
      ctx->set_output(0, first);
      return absl::OkStatus();
    }
    switch (first.dtype()) {
#define OVERSEER_ADDN_CASE(T)    \
  case DataTypeToEnum<T>::value: \
    return Sum<T>(ctx);
      OVERSEER_FOR_NUMERIC_TYPES(OVERSEER_ADDN_CASE)
#undef OVERSEER_ADDN_CASE
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("AddN does not support dtype ", DataTypeString(first.dtype())));
    }
  }

 private:
  template <typename T>
  absl::Status Sum(OpKernelContext* ctx) {
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, ctx->input(0).shape()));
    if (out->NumElements() == 0) return absl::OkStatus();
    const Eigen::ThreadPoolDevice& d = ctx->eigen_device();
    auto o = out->flat<T>();
    const int n = ctx->num_inputs();
    int i = 0;
    if (n % 2 == 1) {
      o.device(d) = ctx->input(0).flat<T>() + ctx->input(1).flat<T>() + ctx->input(2).flat<T>();
      i = 3;
    } else {
      o.device(d) = ctx->input(0).flat<T>() + ctx->input(1).flat<T>();
      i = 2;
    }
    for (; i < n; i += 2) {
      o.device(d) += ctx->input(i).flat<T>() + ctx->input(i + 1).flat<T>();
    }
    return absl::OkStatus();
  }
};

REGISTER_KERNEL(AddNOp, "AddN");

}  // namespace
}  // namespace overseer

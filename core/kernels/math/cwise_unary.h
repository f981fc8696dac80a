#ifndef OVERSEER_CORE_KERNELS_MATH_CWISE_UNARY_H_
#define OVERSEER_CORE_KERNELS_MATH_CWISE_UNARY_H_

// The one elementwise unary kernel, shared by the math ops (Neg, Sqrt, ...) and the
// activations (Relu, Sigmoid, Tanh): y = F::Apply<T>(x) over the flat views.

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {

// Calls `fn(TypeTag<T>())` for the dtype: float and double, and int32 and int64 when
// `kIntegers`. INVALID_ARGUMENT naming the op for other dtypes.
template <bool kIntegers, typename Fn>
absl::Status DispatchType(const OpKernel& k, DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DT_FLOAT:
      return fn(TypeTag<float>());
    case DT_DOUBLE:
      return fn(TypeTag<double>());
    case DT_INT32:
      if constexpr (kIntegers) return fn(TypeTag<int32_t>());
      break;
    case DT_INT64:
      if constexpr (kIntegers) return fn(TypeTag<int64_t>());
      break;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(k.type_string(), " does not support dtype ", DataTypeString(dtype)));
}

// F has `template <typename T, typename X> static auto Apply(const X& x)` returning an
// Eigen expression. `kIntegers`: whether int32 and int64 are accepted.
template <typename F, bool kIntegers>
class UnaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  bool CostFollowsElements() const override { return true; }
  int64_t ElementsTouched(absl::Span<const TensorValue> inputs) const override {
    return inputs[0].tensor.NumElements();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    return DispatchType<kIntegers>(*this, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
      if (x.NumElements() > 0) {
        y->flat<T>().device(ctx->eigen_device()) = F::template Apply<T>(x.flat<T>());
      }
      return absl::OkStatus();
    });
  }
};

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_MATH_CWISE_UNARY_H_

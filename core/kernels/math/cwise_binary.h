#ifndef OVERSEER_CORE_KERNELS_MATH_CWISE_BINARY_H_
#define OVERSEER_CORE_KERNELS_MATH_CWISE_BINARY_H_

// The kernel template of binary elementwise ops with numpy broadcasting. A functor F
// maps two Eigen expressions to one (`a + b`, `a < b`); the kernel picks the cheapest
// evaluation: same shapes, a single-element operand, an Eigen broadcast of the
// collapsed layout (rank 2 to 4), or, beyond that, operands expanded to the output
// shape first.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/kernels/math/broadcast.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {

// Which input dtypes an op accepts.
enum class CwiseTypes { kNumeric, kNumericAndBool, kBool };

template <typename F, typename T, typename OutT, int N>
void BroadcastEval(const Eigen::ThreadPoolDevice& d, const Tensor& x, const Tensor& y,
                   const BroadcastLayout& l, Tensor* z) {
  ShapedView<OutT, N>(*z, l.out_dims()).device(d) =
      F()(ShapedView<T, N>(x, l.reshape(0)).broadcast(ToEigenDims<N>(l.bcast(0))),
          ShapedView<T, N>(y, l.reshape(1)).broadcast(ToEigenDims<N>(l.bcast(1))));
}

// z = F(x, y). `kBoolOut`: z is bool (comparisons) rather than T.
template <typename F, CwiseTypes kTypes, bool kBoolOut>
class BinaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  bool CostFollowsElements() const override { return true; }
  // The output has at most x's elements times y's (broadcasting), and exactly the
  // larger count when the shapes match or one side is a single element.
  int64_t ElementsTouched(absl::Span<const TensorValue> inputs) const override {
    const int64_t x = inputs[0].tensor.NumElements();
    const int64_t y = inputs[1].tensor.NumElements();
    if (x == y || x <= 1 || y <= 1) return std::max(x, y);
    constexpr int64_t kHalf = std::numeric_limits<int32_t>::max();
    return x > kHalf || y > kHalf ? std::numeric_limits<int64_t>::max() : x * y;
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    if (x.dtype() != y.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          type_string(), " of ", DataTypeString(x.dtype()), " and ", DataTypeString(y.dtype())));
    }
    constexpr bool kNumeric = kTypes != CwiseTypes::kBool;
    constexpr bool kBool = kTypes != CwiseTypes::kNumeric;
    switch (x.dtype()) {
      case DT_FLOAT:
        if constexpr (kNumeric) return Run<float>(ctx, x, y);
        break;
      case DT_DOUBLE:
        if constexpr (kNumeric) return Run<double>(ctx, x, y);
        break;
      case DT_INT32:
        if constexpr (kNumeric) return Run<int32_t>(ctx, x, y);
        break;
      case DT_INT64:
        if constexpr (kNumeric) return Run<int64_t>(ctx, x, y);
        break;
      case DT_BOOL:
        if constexpr (kBool) return Run<bool>(ctx, x, y);
        break;
      default:
        break;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(type_string(), " does not support dtype ", DataTypeString(x.dtype())));
  }

 private:
  template <typename T>
  absl::Status Run(OpKernelContext* ctx, const Tensor& x, const Tensor& y) {
    using OutT = std::conditional_t<kBoolOut, bool, T>;
    RETURN_IF_ERROR(F::template Check<T>(y));
    const TensorShape shapes[] = {x.shape(), y.shape()};
    ASSIGN_OR_RETURN(BroadcastLayout layout, BroadcastLayout::Make(shapes));
    ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, layout.output_shape()));
    const int64_t n = z->NumElements();
    if (n == 0) return absl::OkStatus();
    const Eigen::ThreadPoolDevice& d = ctx->eigen_device();
    auto out = z->flat<OutT>();
    if (x.NumElements() == n && y.NumElements() == n) {
      out.device(d) = F()(x.flat<T>(), y.flat<T>());
    } else if (layout.is_single(0) && y.NumElements() == n) {
      auto b = y.flat<T>();
      out.device(d) = F()(b.constant(x.data<T>()[0]), b);
    } else if (layout.is_single(1) && x.NumElements() == n) {
      auto a = x.flat<T>();
      out.device(d) = F()(a, a.constant(y.data<T>()[0]));
    } else if (layout.rank() == 2) {
      BroadcastEval<F, T, OutT, 2>(d, x, y, layout, z);
    } else if (layout.rank() == 3) {
      BroadcastEval<F, T, OutT, 3>(d, x, y, layout, z);
    } else if (layout.rank() == 4) {
      BroadcastEval<F, T, OutT, 4>(d, x, y, layout, z);
    } else {
      ASSIGN_OR_RETURN(const Tensor a, ExpandToOutput<T>(x, layout, 0));
      ASSIGN_OR_RETURN(const Tensor b, ExpandToOutput<T>(y, layout, 1));
      out.device(d) = F()(a.flat<T>(), b.flat<T>());
    }
    return absl::OkStatus();
  }
};

// Base of functors with nothing to check about the divisor.
struct NoCheck {
  template <typename T>
  static absl::Status Check(const Tensor&) {
    return absl::OkStatus();
  }
};

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_MATH_CWISE_BINARY_H_

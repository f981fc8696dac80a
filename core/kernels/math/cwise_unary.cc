// Kernels of the unary elementwise ops: Neg, Square, Sqrt, Exp, Log, Reciprocal.

#include "absl/strings/str_cat.h"
#include "core/op_kernel.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

struct NegFn {
  template <typename X>
  auto operator()(const X& x) const {
    return -x;
  }
};
struct SquareFn {
  template <typename X>
  auto operator()(const X& x) const {
    return x.square();
  }
};
struct SqrtFn {
  template <typename X>
  auto operator()(const X& x) const {
    return x.sqrt();
  }
};
struct ExpFn {
  template <typename X>
  auto operator()(const X& x) const {
    return x.exp();
  }
};
struct LogFn {
  template <typename X>
  auto operator()(const X& x) const {
    return x.log();
  }
};
struct ReciprocalFn {
  template <typename X>
  auto operator()(const X& x) const {
    return x.inverse();
  }
};

// y = F(x) elementwise over the flat views. `kIntegers`: whether int32 and int64 are
// accepted besides float and double.
template <typename F, bool kIntegers>
class UnaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    switch (x.dtype()) {
      case DT_FLOAT:
        return Run<float>(ctx, x);
      case DT_DOUBLE:
        return Run<double>(ctx, x);
      case DT_INT32:
        if constexpr (kIntegers) return Run<int32_t>(ctx, x);
        break;
      case DT_INT64:
        if constexpr (kIntegers) return Run<int64_t>(ctx, x);
        break;
      default:
        break;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(type_string(), " does not support dtype ", DataTypeString(x.dtype())));
  }

 private:
  template <typename T>
  absl::Status Run(OpKernelContext* ctx, const Tensor& x) {
    Tensor* y = ctx->allocate_output(0, x.shape());
    if (x.NumElements() == 0) return absl::OkStatus();
    y->flat<T>().device(ctx->eigen_device()) = F()(x.flat<T>());
    return absl::OkStatus();
  }
};

using NegOp = UnaryOp<NegFn, true>;
using SquareOp = UnaryOp<SquareFn, true>;
using SqrtOp = UnaryOp<SqrtFn, false>;
using ExpOp = UnaryOp<ExpFn, false>;
using LogOp = UnaryOp<LogFn, false>;
using ReciprocalOp = UnaryOp<ReciprocalFn, false>;
REGISTER_KERNEL(NegOp, "Neg");
REGISTER_KERNEL(SquareOp, "Square");
REGISTER_KERNEL(SqrtOp, "Sqrt");
REGISTER_KERNEL(ExpOp, "Exp");
REGISTER_KERNEL(LogOp, "Log");
REGISTER_KERNEL(ReciprocalOp, "Reciprocal");

}  // namespace
}  // namespace overseer

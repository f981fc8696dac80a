// Cast between float, double, int32, int64 and bool (nonzero is true; true is 1).
// Float to integer truncates toward zero, as static_cast does.

#include "absl/strings/str_cat.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

#define OVERSEER_FOR_CAST_TYPES(M) OVERSEER_FOR_NUMERIC_TYPES(M) M(bool)

class CastOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const DataType dst = output_type(0);
    if (x.dtype() == dst) {
      ctx->set_output(0, x);
      return absl::OkStatus();
    }
    switch (x.dtype()) {
#define OVERSEER_CAST_SRC_CASE(S) \
  case DataTypeToEnum<S>::value:  \
    return CastFrom<S>(ctx, x, dst);
      OVERSEER_FOR_CAST_TYPES(OVERSEER_CAST_SRC_CASE)
#undef OVERSEER_CAST_SRC_CASE
      default:
        return Unsupported(x.dtype(), dst);
    }
  }

 private:
  template <typename S>
  absl::Status CastFrom(OpKernelContext* ctx, const Tensor& x, DataType dst) {
    switch (dst) {
#define OVERSEER_CAST_DST_CASE(D)                                                \
  case DataTypeToEnum<D>::value: {                                               \
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, x.shape()));             \
    if (x.NumElements() > 0) {                                                   \
      y->flat<D>().device(ctx->eigen_device()) = x.flat<S>().template cast<D>(); \
    }                                                                            \
    return absl::OkStatus();                                                     \
  }
      OVERSEER_FOR_CAST_TYPES(OVERSEER_CAST_DST_CASE)
#undef OVERSEER_CAST_DST_CASE
      default:
        return Unsupported(x.dtype(), dst);
    }
  }

  static absl::Status Unsupported(DataType src, DataType dst) {
    return absl::InvalidArgumentError(absl::StrCat("Cast from ", DataTypeString(src), " to ",
                                                   DataTypeString(dst), " is not supported"));
  }
};

REGISTER_KERNEL(CastOp, "Cast");

}  // namespace
}  // namespace overseer

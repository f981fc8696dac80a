// ArgMax: the index of the largest value along one axis (the first on ties).

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/math/axes.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

class ArgMaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    ASSIGN_OR_RETURN(std::vector<int64_t> axis, ReadIndexVector(ctx->input(1), "dimension"));
    if (axis.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("dimension must hold one axis, got shape ",
                                                     ctx->input(1).shape().DebugString()));
    }
    if (in.dims() == 0) {
      return absl::InvalidArgumentError("ArgMax of a scalar: the input must have rank >= 1");
    }
    RETURN_IF_ERROR(ReductionMask(axis, in.dims()).status());
    const int a = static_cast<int>(axis[0] < 0 ? axis[0] + in.dims() : axis[0]);
    if (in.dim_size(a) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Reduction axis ", a, " is empty in shape ", in.shape().DebugString()));
    }
    TensorShape out_shape = in.shape();
    out_shape.RemoveDim(a);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a; ++d) outer *= in.dim_size(d);
    for (int d = a + 1; d < in.dims(); ++d) inner *= in.dim_size(d);
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, output_type(0), out_shape));
    switch (in.dtype()) {
#define OVERSEER_ARGMAX_CASE(T)                                            \
  case DataTypeToEnum<T>::value:                                           \
    if (out->dtype() == DT_INT32) {                                        \
      ArgMax<T, int32_t>(in.data<T>(), outer, in.dim_size(a), inner, out); \
    } else {                                                               \
      ArgMax<T, int64_t>(in.data<T>(), outer, in.dim_size(a), inner, out); \
    }                                                                      \
    return absl::OkStatus();
      OVERSEER_FOR_NUMERIC_TYPES(OVERSEER_ARGMAX_CASE)
#undef OVERSEER_ARGMAX_CASE
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("ArgMax does not support dtype ", DataTypeString(in.dtype())));
    }
  }

 private:
  // `x` viewed as [outer, n, inner]; scans n rows of `inner` contiguous values each.
  template <typename T, typename Index>
  static void ArgMax(const T* x, int64_t outer, int64_t n, int64_t inner, Tensor* out) {
    Index* idx = out->data<Index>();
    std::vector<T> best(inner);
    for (int64_t o = 0; o < outer; ++o) {
      const T* block = x + o * n * inner;
      Index* out_row = idx + o * inner;
      for (int64_t j = 0; j < inner; ++j) {
        best[j] = block[j];
        out_row[j] = 0;
      }
      for (int64_t k = 1; k < n; ++k) {
        const T* row = block + k * inner;
        for (int64_t j = 0; j < inner; ++j) {
          if (row[j] > best[j]) {
            best[j] = row[j];
            out_row[j] = static_cast<Index>(k);
          }
        }
      }
    }
  }
};

REGISTER_KERNEL(ArgMaxOp, "ArgMax");

}  // namespace
}  // namespace overseer

// MatMul: a rank-2 Eigen contraction on the intra-op device. Transposes are expressed
// as the contraction's dimension pair, so no operand is copied.

#include "absl/strings/str_cat.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

class MatMulOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(c->GetAttr("transpose_a", &transpose_a_));
    RETURN_IF_ERROR(c->GetAttr("transpose_b", &transpose_b_));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    if (a.dims() != 2 || b.dims() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("MatMul takes matrices, got shapes ",
                                                     a.shape().DebugString(), " x ",
                                                     b.shape().DebugString()));
    }
    if (a.dtype() != b.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("MatMul of ", DataTypeString(a.dtype()),
                                                     " and ", DataTypeString(b.dtype())));
    }
    const int64_t k_a = a.dim_size(transpose_a_ ? 0 : 1);
    const int64_t k_b = b.dim_size(transpose_b_ ? 1 : 0);
    if (k_a != k_b) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Matrix size-incompatible: inner dimensions differ: ", a.shape().DebugString(),
          transpose_a_ ? "^T" : "", " x ", b.shape().DebugString(), transpose_b_ ? "^T" : ""));
    }
    const TensorShape out_shape(
        {a.dim_size(transpose_a_ ? 1 : 0), b.dim_size(transpose_b_ ? 0 : 1)});
    switch (a.dtype()) {
#define OVERSEER_MATMUL_CASE(T)  \
  case DataTypeToEnum<T>::value: \
    return Multiply<T>(ctx, a, b, out_shape, k_a);
      OVERSEER_FOR_NUMERIC_TYPES(OVERSEER_MATMUL_CASE)
#undef OVERSEER_MATMUL_CASE
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("MatMul does not support dtype ", DataTypeString(a.dtype())));
    }
  }

 private:
  template <typename T>
  absl::Status Multiply(OpKernelContext* ctx, const Tensor& a, const Tensor& b,
                        const TensorShape& out_shape, int64_t k) {
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, out_shape));
    // Zero-filled already when there is nothing to sum.
    if (out->NumElements() == 0 || k == 0) return absl::OkStatus();
    const Eigen::array<Eigen::IndexPair<Eigen::DenseIndex>, 1> contract = {
        Eigen::IndexPair<Eigen::DenseIndex>(transpose_a_ ? 0 : 1, transpose_b_ ? 1 : 0)};
    out->matrix<T>().device(ctx->eigen_device()) = a.matrix<T>().contract(b.matrix<T>(), contract);
    return absl::OkStatus();
  }

  bool transpose_a_ = false;
  bool transpose_b_ = false;
};

REGISTER_KERNEL(MatMulOp, "MatMul");

}  // namespace
}  // namespace overseer

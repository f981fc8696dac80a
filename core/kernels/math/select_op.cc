// Select(condition, t, e): t where condition holds, else e. The three broadcast
// against each other (numpy rules); TensorFlow's form where a vector condition picks
// whole rows of higher-rank t and e is kept.

#include "absl/strings/str_cat.h"
#include "core/kernels/math/broadcast.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

template <typename T, int N>
void SelectBroadcast(const Eigen::ThreadPoolDevice& d, const Tensor& c, const Tensor& t,
                     const Tensor& e, const BroadcastLayout& l, Tensor* out) {
  ShapedView<T, N>(*out, l.out_dims()).device(d) =
      ShapedView<bool, N>(c, l.reshape(0))
          .broadcast(ToEigenDims<N>(l.bcast(0)))
          .select(ShapedView<T, N>(t, l.reshape(1)).broadcast(ToEigenDims<N>(l.bcast(1))),
                  ShapedView<T, N>(e, l.reshape(2)).broadcast(ToEigenDims<N>(l.bcast(2))));
}

class SelectOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    if (t.dtype() != e.dtype() || cond.dtype() != DT_BOOL) {
      return absl::InvalidArgumentError(
          absl::StrCat("Select takes a bool condition and values of one dtype, got ",
                       DataTypeString(cond.dtype()), ", ", DataTypeString(t.dtype()), ", ",
                       DataTypeString(e.dtype())));
    }
    switch (t.dtype()) {
#define OVERSEER_SELECT_CASE(T)  \
  case DataTypeToEnum<T>::value: \
    return Run<T>(ctx, cond, t, e);
      OVERSEER_FOR_NUMERIC_TYPES(OVERSEER_SELECT_CASE)
      OVERSEER_SELECT_CASE(bool)
#undef OVERSEER_SELECT_CASE
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("Select does not support dtype ", DataTypeString(t.dtype())));
    }
  }

 private:
  template <typename T>
  absl::Status Run(OpKernelContext* ctx, const Tensor& cond, const Tensor& t, const Tensor& e) {
    const Eigen::ThreadPoolDevice& d = ctx->eigen_device();
    if (cond.dims() == 1 && t.dims() > 1) {
      if (t.shape() != e.shape() || cond.dim_size(0) != t.dim_size(0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "A vector condition must match the first dimension of t and e of one shape: ",
            cond.shape().DebugString(), " vs. ", t.shape().DebugString(), " vs. ",
            e.shape().DebugString()));
      }
      ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, t.shape()));
      if (out->NumElements() == 0) return absl::OkStatus();
      const int64_t rows = t.dim_size(0), cols = t.NumElements() / rows;
      out->flat_inner_dims<T>(1).device(d) =
          Tensor::EigenTensor<bool, 2>(cond.data<bool>(), rows, 1)
              .broadcast(Eigen::array<Eigen::DenseIndex, 2>{1, cols})
              .select(t.flat_inner_dims<T>(1), e.flat_inner_dims<T>(1));
      return absl::OkStatus();
    }
    const TensorShape shapes[] = {cond.shape(), t.shape(), e.shape()};
    ASSIGN_OR_RETURN(BroadcastLayout l, BroadcastLayout::Make(shapes));
    const int64_t n = l.output_shape().num_elements();
    if (l.is_single(0) && t.NumElements() == n && e.NumElements() == n && t.shape() == e.shape() &&
        t.shape() == l.output_shape()) {
      ctx->set_output(0, cond.data<bool>()[0] ? t : e);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, l.output_shape()));
    if (n == 0) return absl::OkStatus();
    if (cond.NumElements() == n && t.NumElements() == n && e.NumElements() == n) {
      out->flat<T>().device(d) = cond.flat<bool>().select(t.flat<T>(), e.flat<T>());
    } else if (l.rank() == 2) {
      SelectBroadcast<T, 2>(d, cond, t, e, l, out);
    } else if (l.rank() == 3) {
      SelectBroadcast<T, 3>(d, cond, t, e, l, out);
    } else if (l.rank() == 4) {
      SelectBroadcast<T, 4>(d, cond, t, e, l, out);
    } else {
      ASSIGN_OR_RETURN(const Tensor c2, ExpandToOutput<bool>(cond, l, 0));
      ASSIGN_OR_RETURN(const Tensor t2, ExpandToOutput<T>(t, l, 1));
      ASSIGN_OR_RETURN(const Tensor e2, ExpandToOutput<T>(e, l, 2));
      out->flat<T>().device(d) = c2.flat<bool>().select(t2.flat<T>(), e2.flat<T>());
    }
    return absl::OkStatus();
  }
};

REGISTER_KERNEL(SelectOp, "Select");

}  // namespace
}  // namespace overseer

// Softmax and LogSoftmax over the last axis, and the two softmax cross-entropy
// losses. Every form subtracts the row maximum first, so large logits do not overflow.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

using Index = Eigen::DenseIndex;
using Dims2 = Eigen::array<Index, 2>;
constexpr Eigen::array<int, 1> kAlongClass = {1};

template <typename T>
using Matrix = Tensor::EigenTensor<T, 2>;

absl::Status UnsupportedType(const OpKernel& k, DataType dtype) {
  return absl::InvalidArgumentError(
      absl::StrCat(k.type_string(), " does not support dtype ", DataTypeString(dtype)));
}

template <bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    if (logits.dims() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("logits must have >= 1 dimension, got ", logits.shape().DebugString()));
    }
    if (logits.dtype() == DT_FLOAT) return Run<float>(ctx, logits);
    if (logits.dtype() == DT_DOUBLE) return Run<double>(ctx, logits);
    return UnsupportedType(*this, logits.dtype());
  }

 private:
  template <typename T>
  absl::Status Run(OpKernelContext* ctx, const Tensor& in) {
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, in.shape()));
    if (in.NumElements() == 0) return absl::OkStatus();
    const Eigen::ThreadPoolDevice& d = ctx->eigen_device();
    Matrix<T> x = in.flat_inner_dims<T>(in.dims() - 1);
    Matrix<T> y = out->flat_inner_dims<T>(in.dims() - 1);
    const Index batch = x.dimension(0), classes = x.dimension(1);
    const Dims2 batch_by_one = {batch, 1}, one_by_class = {1, classes};
    y.device(d) = x - x.maximum(kAlongClass).eval().reshape(batch_by_one).broadcast(one_by_class);
    if constexpr (kLog) {
      y.device(d) =
          y - y.exp().sum(kAlongClass).log().eval().reshape(batch_by_one).broadcast(one_by_class);
    } else {
      y.device(d) = y.exp();
      y.device(d) =
          y * y.sum(kAlongClass).inverse().eval().reshape(batch_by_one).broadcast(one_by_class);
    }
    return absl::OkStatus();
  }
};
using SoftmaxKernel = SoftmaxOp<false>;
using LogSoftmaxKernel = SoftmaxOp<true>;
REGISTER_KERNEL(SoftmaxKernel, "Softmax");
REGISTER_KERNEL(LogSoftmaxKernel, "LogSoftmax");

// Shared first steps of both losses: backprop = logits - rowmax, and sum_exp[b] =
// sum over classes of exp(backprop[b]).
template <typename T>
void ShiftAndSumExp(const Eigen::ThreadPoolDevice& d, const Matrix<T>& logits, Matrix<T>& backprop,
                    Matrix<T>& sum_exp) {
  const Dims2 one_by_class = {1, logits.dimension(1)};
  const Dims2 batch_by_one = {logits.dimension(0), 1};
  sum_exp.device(d) = logits.maximum(kAlongClass).reshape(batch_by_one);
  backprop.device(d) = logits - sum_exp.broadcast(one_by_class);
  sum_exp.device(d) = backprop.exp().sum(kAlongClass).reshape(batch_by_one);
}

class SoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    if (logits.dims() != 2 || logits.shape() != labels.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "logits and labels must be 2-D and the same size: logits_size=",
          logits.shape().DebugString(), " labels_size=", labels.shape().DebugString()));
    }
    if (logits.dtype() == DT_FLOAT) return Run<float>(ctx, logits, labels);
    if (logits.dtype() == DT_DOUBLE) return Run<double>(ctx, logits, labels);
    return UnsupportedType(*this, logits.dtype());
  }

 private:
  // loss[b] = sum_c labels[b,c] * (log(sum_exp[b]) - shifted[b,c]);
  // backprop = softmax(logits) - labels.
  template <typename T>
  absl::Status Run(OpKernelContext* ctx, const Tensor& logits_t, const Tensor& labels_t) {
    const Index batch = logits_t.dim_size(0), classes = logits_t.dim_size(1);
    ASSIGN_OR_RETURN(Tensor * loss_t, ctx->allocate_output(0, TensorShape({batch})));
    ASSIGN_OR_RETURN(Tensor * backprop_t, ctx->allocate_output(1, logits_t.shape()));
    if (logits_t.NumElements() == 0) return absl::OkStatus();  // Zero losses.
    const Eigen::ThreadPoolDevice& d = ctx->eigen_device();
    Tensor scratch_t(logits_t.dtype(), TensorShape({batch, 1}));
    Matrix<T> logits = logits_t.matrix<T>(), labels = labels_t.matrix<T>();
    Matrix<T> backprop = backprop_t->matrix<T>(), sum_exp = scratch_t.matrix<T>();
    ShiftAndSumExp<T>(d, logits, backprop, sum_exp);
    const Dims2 one_by_class = {1, classes};
    loss_t->flat<T>().device(d) =
        (labels * (sum_exp.log().broadcast(one_by_class) - backprop)).sum(kAlongClass);
    backprop.device(d) = backprop.exp() / sum_exp.broadcast(one_by_class) - labels;
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(SoftmaxXentOp, "SoftmaxCrossEntropyWithLogits");

class SparseSoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    if (logits.dims() != 2 || labels.dims() != 1 || labels.dim_size(0) != logits.dim_size(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "logits must be 2-D and labels 1-D with the same first dimension, got logits "
          "shape ",
          logits.shape().DebugString(), " and labels shape ", labels.shape().DebugString()));
    }
    if (labels.dtype() == DT_INT32) return ByLogits<int32_t>(ctx, logits, labels);
    if (labels.dtype() == DT_INT64) return ByLogits<int64_t>(ctx, logits, labels);
    return UnsupportedType(*this, labels.dtype());
  }

 private:
  template <typename L>
  absl::Status ByLogits(OpKernelContext* ctx, const Tensor& logits, const Tensor& labels) {
    const L* label = labels.data<L>();
    const int64_t classes = logits.dim_size(1);
    for (int64_t b = 0; b < labels.NumElements(); ++b) {
      if (label[b] < 0 || label[b] >= classes) {
        std::vector<L> values(label, label + std::min<int64_t>(labels.NumElements(), 20));
        return absl::InvalidArgumentError(absl::StrCat(
            "Received a label value of ", label[b], " which is outside the valid range of [0, ",
            classes, ").  Label values: ", absl::StrJoin(values, " "),
            labels.NumElements() > 20 ? " ..." : ""));
      }
    }
    if (logits.dtype() == DT_FLOAT) return Run<float, L>(ctx, logits, label);
    if (logits.dtype() == DT_DOUBLE) return Run<double, L>(ctx, logits, label);
    return UnsupportedType(*this, logits.dtype());
  }

  // loss[b] = log(sum_exp[b]) - shifted[b, label[b]];
  // backprop = softmax(logits) - one_hot(label).
  template <typename T, typename L>
  absl::Status Run(OpKernelContext* ctx, const Tensor& logits_t, const L* label) {
    const Index batch = logits_t.dim_size(0), classes = logits_t.dim_size(1);
    ASSIGN_OR_RETURN(Tensor * loss_t, ctx->allocate_output(0, TensorShape({batch})));
    ASSIGN_OR_RETURN(Tensor * backprop_t, ctx->allocate_output(1, logits_t.shape()));
    if (logits_t.NumElements() == 0) return absl::OkStatus();
    const Eigen::ThreadPoolDevice& d = ctx->eigen_device();
    Tensor scratch_t(logits_t.dtype(), TensorShape({batch, 1}));
    Matrix<T> logits = logits_t.matrix<T>();
    Matrix<T> backprop = backprop_t->matrix<T>(), sum_exp = scratch_t.matrix<T>();
    ShiftAndSumExp<T>(d, logits, backprop, sum_exp);
    T* loss = loss_t->data<T>();
    for (Index b = 0; b < batch; ++b) {
      loss[b] = std::log(sum_exp(b, 0)) - backprop(b, static_cast<Index>(label[b]));
    }
    backprop.device(d) = backprop.exp() / sum_exp.broadcast(Dims2{1, classes});
    for (Index b = 0; b < batch; ++b) backprop(b, static_cast<Index>(label[b])) -= T(1);
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(SparseSoftmaxXentOp, "SparseSoftmaxCrossEntropyWithLogits");

}  // namespace
}  // namespace overseer

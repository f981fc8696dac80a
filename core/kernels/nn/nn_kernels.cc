// Kernels of BiasAdd, BiasAddGrad, Relu, Relu6, Elu, Sigmoid, Tanh, L2Loss, InTopKV2, TopKV2
// and the gradients ReluGrad, Relu6Grad, EluGrad, SigmoidGrad, TanhGrad, SqrtGrad and
// _TopKGrad.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/kernels/math/cwise_unary.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

absl::Status CheckNhwc(OpKernelConstruction* c) {
  std::string format;
  RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  if (format != "NHWC") {
    return absl::InvalidArgumentError(
        absl::StrCat("data_format '", format, "' is not supported; use NHWC"));
  }
  return absl::OkStatus();
}

absl::Status CheckSameShape(const OpKernel& k, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat(k.type_string(), " inputs must have the same shape: ", a.shape().DebugString(),
                     " vs. ", b.shape().DebugString()));
  }
  return absl::OkStatus();
}

class BiasAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override { return CheckNhwc(c); }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    if (value.dims() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("Input tensor must be at least 2D: ", value.shape().DebugString()));
    }
    if (bias.dims() != 1 || bias.dim_size(0) != value.dim_size(value.dims() - 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Must provide as many biases as the last dimension of the input tensor: ",
                       bias.shape().DebugString(), " vs. ", value.shape().DebugString()));
    }
    return DispatchType<true>(*this, value.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, value.shape()));
      if (out->NumElements() == 0) return absl::OkStatus();
      const int64_t channels = bias.dim_size(0);
      const int64_t rows = value.NumElements() / channels;
      out->flat_inner_dims<T>(value.dims() - 1).device(ctx->eigen_device()) =
          value.flat_inner_dims<T>(value.dims() - 1) +
          bias.flat<T>()
              .reshape(Eigen::array<Eigen::DenseIndex, 2>{1, channels})
              .broadcast(Eigen::array<Eigen::DenseIndex, 2>{rows, 1});
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(BiasAddOp, "BiasAdd");

class BiasAddGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override { return CheckNhwc(c); }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    if (grad.dims() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("Input tensor must be at least 2D: ", grad.shape().DebugString()));
    }
    return DispatchType<true>(*this, grad.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t channels = grad.dim_size(grad.dims() - 1);
      ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape({channels})));
      if (grad.NumElements() == 0) return absl::OkStatus();  // Zero-filled.
      out->flat<T>().device(ctx->eigen_device()) =
          grad.flat_inner_dims<T>(grad.dims() - 1).sum(Eigen::array<int, 1>{0});
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(BiasAddGradOp, "BiasAddGrad");

struct ReluFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.cwiseMax(T(0));
  }
};
// min(max(x, 0), 6).
struct Relu6Fn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.cwiseMax(T(0)).cwiseMin(T(6));
  }
};
// x where x > 0, else exp(x) - 1.
struct EluFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return (x < x.constant(T(0))).select(x.exp() - x.constant(T(1)), x);
  }
};
struct SigmoidFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.sigmoid();
  }
};
struct TanhFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.tanh();
  }
};

using ReluOp = UnaryOp<ReluFn, true>;
using Relu6Op = UnaryOp<Relu6Fn, true>;
using EluOp = UnaryOp<EluFn, false>;
using SigmoidOp = UnaryOp<SigmoidFn, false>;
using TanhOp = UnaryOp<TanhFn, false>;
REGISTER_KERNEL(ReluOp, "Relu");
REGISTER_KERNEL(Relu6Op, "Relu6");
REGISTER_KERNEL(EluOp, "Elu");
REGISTER_KERNEL(SigmoidOp, "Sigmoid");
REGISTER_KERNEL(TanhOp, "Tanh");

// ReluGrad(gradients, features): gradients where features > 0, else 0.
struct ReluGradFn {
  template <typename T, typename A, typename B>
  static auto Apply(const A& gradients, const B& features) {
    return (features > features.constant(T(0))).select(gradients, gradients.constant(T(0)));
  }
};
// Relu6Grad(gradients, features): gradients where 0 < features < 6, else 0.
struct Relu6GradFn {
  template <typename T, typename A, typename B>
  static auto Apply(const A& gradients, const B& features) {
    return (features > features.constant(T(0)) && features < features.constant(T(6)))
        .select(gradients, gradients.constant(T(0)));
  }
};
// EluGrad(gradients, outputs): gradients * (outputs + 1) where outputs < 0, else
// gradients (the derivative of exp(x) - 1 is exp(x) = outputs + 1).
struct EluGradFn {
  template <typename T, typename A, typename B>
  static auto Apply(const A& gradients, const B& outputs) {
    return (outputs < outputs.constant(T(0)))
        .select(gradients * (outputs + outputs.constant(T(1))), gradients);
  }
};
// SigmoidGrad(y, dy) = dy * y * (1 - y).
struct SigmoidGradFn {
  template <typename T, typename A, typename B>
  static auto Apply(const A& y, const B& dy) {
    return dy * y * (y.constant(T(1)) - y);
  }
};
// TanhGrad(y, dy) = dy * (1 - y^2).
struct TanhGradFn {
  template <typename T, typename A, typename B>
  static auto Apply(const A& y, const B& dy) {
    return dy * (y.constant(T(1)) - y * y);
  }
};
// SqrtGrad(y, dy) = dy * 0.5 / y, the gradient of x through y = sqrt(x).
struct SqrtGradFn {
  template <typename T, typename A, typename B>
  static auto Apply(const A& y, const B& dy) {
    return dy * y.constant(T(0.5)) / y;
  }
};

// Output 0 = F(input 0, input 1) over two inputs of one shape.
template <typename F, bool kIntegers>
class ActivationGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    RETURN_IF_ERROR(CheckSameShape(*this, a, b));
    return DispatchType<kIntegers>(*this, a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, a.shape()));
      if (a.NumElements() > 0) {
        out->flat<T>().device(ctx->eigen_device()) = F::template Apply<T>(a.flat<T>(), b.flat<T>());
      }
      return absl::OkStatus();
    });
  }
};
using ReluGradOp = ActivationGradOp<ReluGradFn, true>;
using Relu6GradOp = ActivationGradOp<Relu6GradFn, true>;
using EluGradOp = ActivationGradOp<EluGradFn, false>;
using SigmoidGradOp = ActivationGradOp<SigmoidGradFn, false>;
using TanhGradOp = ActivationGradOp<TanhGradFn, false>;
using SqrtGradOp = ActivationGradOp<SqrtGradFn, false>;
REGISTER_KERNEL(ReluGradOp, "ReluGrad");
REGISTER_KERNEL(Relu6GradOp, "Relu6Grad");
REGISTER_KERNEL(EluGradOp, "EluGrad");
REGISTER_KERNEL(SigmoidGradOp, "SigmoidGrad");
REGISTER_KERNEL(TanhGradOp, "TanhGrad");
REGISTER_KERNEL(SqrtGradOp, "SqrtGrad");

// L2Loss(t) = sum(t^2) / 2, a scalar.
class L2LossOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    return DispatchType<false>(*this, t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape()));
      if (t.NumElements() == 0) return absl::OkStatus();  // Zero-filled.
      Eigen::Tensor<T, 0, Eigen::RowMajor> sum;
      sum.device(ctx->eigen_device()) = t.flat<T>().square().sum();
      out->scalar<T>() = sum() * T(0.5);
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(L2LossOp, "L2Loss");

class InTopKOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& predictions = ctx->input(0);
    const Tensor& targets = ctx->input(1);
    const Tensor& k = ctx->input(2);
    if (predictions.dims() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("predictions must be 2-dimensional, got ",
                                                     predictions.shape().DebugString()));
    }
    const int64_t batch = predictions.dim_size(0);
    const int64_t classes = predictions.dim_size(1);
    if (targets.dims() != 1 || targets.dim_size(0) != batch) {
      return absl::InvalidArgumentError(absl::StrCat("targets must be a vector of ", batch,
                                                     " entries (one per row of predictions), "
                                                     "got ",
                                                     targets.shape().DebugString()));
    }
    if (k.dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("k must be a scalar, got ", k.shape().DebugString()));
    }
    const int64_t top = Int64Values(k)[0];
    const std::vector<int64_t> target_values = Int64Values(targets);
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape({batch})));
    const float* p = predictions.data<float>();
    bool* in = out->data<bool>();
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t target = target_values[i];
      const float* row = p + i * classes;
      bool ok = target >= 0 && target < classes && std::isfinite(row[target]);
      int64_t higher = 0;
      for (int64_t j = 0; ok && j < classes; ++j) {
        if (!std::isfinite(row[j])) ok = false;
        if (row[j] > row[target]) ++higher;
      }
      in[i] = ok && higher < top;
    }
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(InTopKOp, "InTopKV2");

// NaN above every number, then larger first, then the lower index: a strict weak order
// even with NaNs.
template <typename T>
bool RanksHigher(const T* row, int32_t a, int32_t b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool nan_a = std::isnan(row[a]), nan_b = std::isnan(row[b]);
    if (nan_a != nan_b) return nan_a;
    if (nan_a) return a < b;
  }
  if (row[a] != row[b]) return row[a] > row[b];
  return a < b;
}

class TopKOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& k_t = ctx->input(1);
    if (input.dims() < 1) {
      return absl::InvalidArgumentError("input must have at least 1 dimension, got a scalar");
    }
    if (k_t.dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("k must be a scalar, got shape ", k_t.shape().DebugString()));
    }
    const int64_t k = k_t.scalar<int32_t>();
    const int64_t n = input.dim_size(input.dims() - 1);
    if (k < 0) return absl::InvalidArgumentError(absl::StrCat("k must be non-negative, got ", k));
    if (k > n) {
      return absl::InvalidArgumentError(
          absl::StrCat("input must have at least k = ", k, " columns, got ", n));
    }
    std::vector<int64_t> dims = input.shape().dim_sizes();
    dims.back() = k;
    ASSIGN_OR_RETURN(Tensor * values, ctx->allocate_output(0, TensorShape(dims)));
    ASSIGN_OR_RETURN(Tensor * indices, ctx->allocate_output(1, TensorShape(dims)));
    const int64_t rows = n == 0 ? 0 : input.NumElements() / n;
    return VisitNumericTypes(input.dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<int32_t> order(n);
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = input.data<T>() + r * n;
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [row](int32_t a, int32_t b) { return RanksHigher(row, a, b); });
        for (int64_t j = 0; j < k; ++j) {
          values->data<T>()[r * k + j] = row[order[j]];
          indices->data<int32_t>()[r * k + j] = order[j];
        }
      }
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(TopKOp, "TopKV2");

class TopKGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    if (input.dims() < 1 || indices.shape() != grad.shape() || indices.dims() != input.dims()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "_TopKGrad: indices ", indices.shape().DebugString(), " and grad ",
          grad.shape().DebugString(), " must be shaped like TopKV2's outputs for input ",
          input.shape().DebugString()));
    }
    const int64_t n = input.dim_size(input.dims() - 1);
    const int64_t k = indices.dims() > 0 ? indices.dim_size(indices.dims() - 1) : 0;
    const int64_t rows = n == 0 ? 0 : input.NumElements() / n;
    if (indices.NumElements() != rows * k) {
      return absl::InvalidArgumentError(absl::StrCat(
          "_TopKGrad: indices ", indices.shape().DebugString(),
          " do not match the leading dimensions of input ", input.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, input.shape()));
    const int32_t* idx = indices.data<int32_t>();
    return VisitNumericTypes(input.dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out->data<T>();
      std::fill(o, o + out->NumElements(), T(0));
      const T* g = grad.data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < k; ++j) {
          const int32_t column = idx[r * k + j];
          if (column < 0 || column >= n) {
            return absl::InvalidArgumentError(
                absl::StrCat("_TopKGrad: index ", column, " is outside [0, ", n, ")"));
          }
          o[r * n + column] += g[r * k + j];
        }
      }
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(TopKGradOp, "_TopKGrad");

}  // namespace
}  // namespace overseer

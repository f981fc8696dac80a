// Sum, Mean, Max and Prod over a set of axes. The input is viewed with adjacent
// reduced (or kept) dimensions merged, so common reductions become one Eigen reduction
// of rank 1 to 3; other layouts fall back to a loop over the elements.

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/math/axes.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {
namespace {

enum class Reduce { kSum, kMean, kMax, kProd };

// The Eigen reduction of kind K over `dims`, and its scalar form for the loop.
template <Reduce K>
struct Reducer {
  template <typename X, typename Dims>
  auto operator()(const X& x, const Dims& dims) const {
    if constexpr (K == Reduce::kMax) {
      return x.maximum(dims);
    } else if constexpr (K == Reduce::kProd) {
      return x.prod(dims);
    } else {
      return x.sum(dims);
    }
  }
  template <typename T>
  static T Combine(T a, T b) {
    if constexpr (K == Reduce::kMax) {
      return std::max(a, b);
    } else if constexpr (K == Reduce::kProd) {
      return a * b;
    } else {
      return a + b;
    }
  }
  // The result of reducing nothing.
  template <typename T>
  static T Identity() {
    if constexpr (K == Reduce::kMax) {
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    } else if constexpr (K == Reduce::kProd) {
      return T(1);
    } else if constexpr (K == Reduce::kMean) {
      return std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN() : T(0);
    } else {
      return T(0);
    }
  }
};

// The input's dimensions with size-1 ones dropped and adjacent ones of the same kind
// (reduced or kept) merged; `first_reduced` says which kind comes first.
struct Collapsed {
  std::vector<int64_t> dims;
  bool first_reduced = false;
};

Collapsed Collapse(const TensorShape& shape, const std::vector<bool>& mask) {
  Collapsed c;
  bool last = false;
  for (int d = 0; d < shape.dims(); ++d) {
    if (shape.dim_size(d) == 1) continue;
    if (!c.dims.empty() && mask[d] == last) {
      c.dims.back() *= shape.dim_size(d);
      continue;
    }
    if (c.dims.empty()) c.first_reduced = mask[d];
    c.dims.push_back(shape.dim_size(d));
    last = mask[d];
  }
  return c;
}

template <Reduce K>
class ReductionOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Init(OpKernelConstruction* c) override {
    return c->GetAttr("keep_dims", &keep_dims_);
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                     ReadIndexVector(ctx->input(1), "reduction_indices"));
    ASSIGN_OR_RETURN(std::vector<bool> mask, ReductionMask(axes, in.dims()));
    TensorShape out_shape;
    int64_t count = 1;  // Elements reduced into each output.
    for (int d = 0; d < in.dims(); ++d) {
      if (mask[d]) {
        count *= in.dim_size(d);
        if (keep_dims_) out_shape.AddDim(1);
      } else {
        out_shape.AddDim(in.dim_size(d));
      }
    }
    if (count == 1) {  // Only size-1 axes reduced: the values are unchanged.
      ASSIGN_OR_RETURN(Tensor out, in.Reshaped(out_shape));
      ctx->set_output(0, out);
      return absl::OkStatus();
    }
    switch (in.dtype()) {
#define OVERSEER_REDUCE_CASE(T)  \
  case DataTypeToEnum<T>::value: \
    return Run<T>(ctx, in, mask, out_shape, count);
      OVERSEER_FOR_NUMERIC_TYPES(OVERSEER_REDUCE_CASE)
#undef OVERSEER_REDUCE_CASE
      default:
        return absl::InvalidArgumentError(
            absl::StrCat(type_string(), " does not support dtype ", DataTypeString(in.dtype())));
    }
  }

 private:
  template <typename T>
  absl::Status Run(OpKernelContext* ctx, const Tensor& in, const std::vector<bool>& mask,
                   const TensorShape& out_shape, int64_t count) {
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, out_shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    auto o = out->flat<T>();
    if (count == 0) {
      o.setConstant(Reducer<K>::template Identity<T>());
      return absl::OkStatus();
    }
    const Eigen::ThreadPoolDevice& d = ctx->eigen_device();
    const Collapsed c = Collapse(in.shape(), mask);
    const Reducer<K> reduce;
    if (c.dims.size() == 1) {
      Eigen::TensorMap<Eigen::Tensor<T, 0, Eigen::RowMajor, Eigen::DenseIndex>> scalar(
          out->data<T>());
      scalar.device(d) = reduce(in.flat<T>(), Eigen::array<int, 1>{0});
    } else if (c.dims.size() == 2) {
      auto x = Tensor::EigenTensor<T, 2>(in.data<T>(), c.dims[0], c.dims[1]);
      o.device(d) = reduce(x, Eigen::array<int, 1>{c.first_reduced ? 0 : 1});
    } else if (c.dims.size() == 3) {
      auto x = Tensor::EigenTensor<T, 3>(in.data<T>(), c.dims[0], c.dims[1], c.dims[2]);
      if (c.first_reduced) {
        o.device(d) = reduce(x, Eigen::array<int, 2>{0, 2});
      } else {
        Tensor::EigenTensor<T, 2>(out->data<T>(), c.dims[0], c.dims[2]).device(d) =
            reduce(x, Eigen::array<int, 1>{1});
      }
    } else {
      ReduceByLoop<T>(in, c, out);
    }
    if constexpr (K == Reduce::kMean) o.device(d) = o / o.constant(static_cast<T>(count));
    return absl::OkStatus();
  }

  // Walks the input once in row-major order, tracking the output index.
  template <typename T>
  static void ReduceByLoop(const Tensor& in, const Collapsed& c, Tensor* out) {
    T* o = out->data<T>();
    // Mean sums here and divides afterwards.
    const T init = K == Reduce::kMean ? T(0) : Reducer<K>::template Identity<T>();
    std::fill(o, o + out->NumElements(), init);
    const int rank = static_cast<int>(c.dims.size());
    std::vector<int64_t> out_stride(rank, 0);
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const bool reduced = ((d % 2 == 0) == c.first_reduced);
      if (!reduced) {
        out_stride[d] = stride;
        stride *= c.dims[d];
      }
    }
    std::vector<int64_t> index(rank, 0);
    const T* x = in.data<T>();
    int64_t out_index = 0;
    for (int64_t i = 0; i < in.NumElements(); ++i) {
      o[out_index] = Reducer<K>::Combine(o[out_index], x[i]);
      for (int d = rank - 1; d >= 0; --d) {
        out_index += out_stride[d];
        if (++index[d] < c.dims[d]) break;
        out_index -= out_stride[d] * c.dims[d];
        index[d] = 0;
      }
    }
  }

  bool keep_dims_ = false;
};

REGISTER_KERNEL(ReductionOp<Reduce::kSum>, "Sum");
REGISTER_KERNEL(ReductionOp<Reduce::kMean>, "Mean");
REGISTER_KERNEL(ReductionOp<Reduce::kMax>, "Max");
REGISTER_KERNEL(ReductionOp<Reduce::kProd>, "Prod");

}  // namespace
}  // namespace overseer

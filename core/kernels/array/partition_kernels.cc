// Kernels of DynamicPartition, DynamicStitch and Range.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// Whether `prefix`'s dimensions begin `shape`'s.
bool IsPrefix(const TensorShape& prefix, const TensorShape& shape) {
  if (prefix.dims() > shape.dims()) return false;
  for (int d = 0; d < prefix.dims(); ++d) {
    if (prefix.dim_size(d) != shape.dim_size(d)) return false;
  }
  return true;
}

// shape[from:].
std::vector<int64_t> Tail(const TensorShape& shape, int from) {
  const std::vector<int64_t>& dims = shape.dim_sizes();
  return std::vector<int64_t>(dims.begin() + from, dims.end());
}

class DynamicPartitionOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    return c->GetAttr("num_partitions", &num_);
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& partitions = ctx->input(1);
    if (!IsPrefix(partitions.shape(), data.shape())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.shape must start with partitions.shape, got data.shape ",
          data.shape().DebugString(), " and partitions.shape ", partitions.shape().DebugString()));
    }
    const std::vector<int64_t> tail = Tail(data.shape(), partitions.dims());
    const int64_t inner = TensorShape(tail).num_elements();
    const int32_t* p = partitions.data<int32_t>();
    std::vector<int64_t> counts(num_, 0);
    for (int64_t j = 0; j < partitions.NumElements(); ++j) {
      if (p[j] < 0 || p[j] >= num_) {
        return absl::InvalidArgumentError(
            absl::StrCat("partitions[", j, "] = ", p[j], " is not in [0, ", num_, ")"));
      }
      ++counts[p[j]];
    }
    std::vector<Tensor*> outs(num_);
    for (int64_t i = 0; i < num_; ++i) {
      std::vector<int64_t> dims = {counts[i]};
      dims.insert(dims.end(), tail.begin(), tail.end());
      ASSIGN_OR_RETURN(outs[i], ctx->allocate_output(static_cast<int>(i), TensorShape(dims)));
    }
    return VisitAllTypes(data.dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<int64_t> next(num_, 0);
      const T* src = data.data<T>();
      for (int64_t j = 0; j < partitions.NumElements(); ++j) {
        T* dst = outs[p[j]]->data<T>() + next[p[j]]++ * inner;
        std::copy(src + j * inner, src + (j + 1) * inner, dst);
      }
      return absl::OkStatus();
    });
  }

 private:
  int64_t num_ = 1;
};
REGISTER_KERNEL(DynamicPartitionOp, "DynamicPartition");

class DynamicStitchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() / 2;
    std::vector<int64_t> tail;
    int64_t rows = 0;
    for (int m = 0; m < n; ++m) {
      const Tensor& indices = ctx->input(m);
      const Tensor& data = ctx->input(n + m);
      if (!IsPrefix(indices.shape(), data.shape())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "data[", m, "].shape ", data.shape().DebugString(), " must start with indices[", m,
            "].shape ", indices.shape().DebugString()));
      }
      std::vector<int64_t> t = Tail(data.shape(), indices.dims());
      if (m == 0) {
        tail = t;
      } else if (t != tail) {
        return absl::InvalidArgumentError(
            absl::StrCat("data[", m, "] has slices of shape ", TensorShape(t).DebugString(),
                         " but data[0] has ", TensorShape(tail).DebugString()));
      }
      const int32_t* idx = indices.data<int32_t>();
      for (int64_t i = 0; i < indices.NumElements(); ++i) {
        if (idx[i] < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("indices[", m, "][", i, "] = ", idx[i], " is negative"));
        }
        rows = std::max<int64_t>(rows, int64_t{idx[i]} + 1);
      }
    }
    std::vector<int64_t> dims = {rows};
    dims.insert(dims.end(), tail.begin(), tail.end());
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape(dims)));
    const int64_t inner = TensorShape(tail).num_elements();
    return VisitAllTypes(out->dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int m = 0; m < n; ++m) {
        const Tensor& indices = ctx->input(m);
        const T* src = ctx->input(n + m).template data<T>();
        const int32_t* idx = indices.data<int32_t>();
        for (int64_t i = 0; i < indices.NumElements(); ++i) {
          std::copy(src + i * inner, src + (i + 1) * inner, out->data<T>() + idx[i] * inner);
        }
      }
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(DynamicStitchOp, "DynamicStitch");

class RangeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < 3; ++i) {
      if (ctx->input(i).dims() != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("start, limit and delta must be scalars; input ", i, " has shape ",
                         ctx->input(i).shape().DebugString()));
      }
    }
    return VisitNumericTypes(ctx->input(0).dtype(), type_string(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T start = ctx->input(0).scalar<T>(), limit = ctx->input(1).scalar<T>();
      const T delta = ctx->input(2).scalar<T>();
      if (delta == 0) return absl::InvalidArgumentError("Requires delta != 0");
      if ((delta > 0 && start > limit) || (delta < 0 && start < limit)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Requires start <= limit when delta > 0 (and >= when delta < 0): ", start, "/", limit));
      }
      const int64_t size =
          std::is_integral_v<T>
              ? static_cast<int64_t>((std::abs(limit - start) + std::abs(delta) - 1) /
                                     std::abs(delta))
              : static_cast<int64_t>(std::ceil(std::abs((limit - start) / delta)));
      ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape({size})));
      T value = start;
      for (int64_t i = 0; i < size; ++i, value += delta) out->data<T>()[i] = value;
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(RangeOp, "Range");

}  // namespace
}  // namespace overseer

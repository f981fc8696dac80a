// CPU kernels of GatherV2, UnsortedSegmentSum and Unique.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

class GatherOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& axis_t = ctx->input(2);
    if (axis_t.dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis must be a scalar, got ", axis_t.shape().DebugString()));
    }
    if (params.dims() == 0) {
      return absl::InvalidArgumentError("params must be at least 1-dimensional, got a scalar");
    }
    int64_t axis = Int64Values(axis_t)[0];
    if (axis < -params.dims() || axis >= params.dims()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "axis ", axis, " is out of range for params of shape ", params.shape().DebugString()));
    }
    if (axis < 0) axis += params.dims();
    const std::vector<int64_t>& pdims = params.shape().dim_sizes();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= pdims[d];
    for (int64_t d = axis + 1; d < params.dims(); ++d) inner *= pdims[d];
    const int64_t limit = pdims[axis];
    const std::vector<int64_t> index = Int64Values(indices);
    for (size_t i = 0; i < index.size(); ++i) {
      if (index[i] < 0 || index[i] >= limit) {
        return absl::InvalidArgumentError(
            absl::StrCat("indices[", i, "] = ", index[i], " is not in [0, ", limit, ")"));
      }
    }
    std::vector<int64_t> dims(pdims.begin(), pdims.begin() + axis);
    for (int64_t d : indices.shape().dim_sizes()) dims.push_back(d);
    dims.insert(dims.end(), pdims.begin() + axis + 1, pdims.end());
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape(dims)));
    const int64_t n = static_cast<int64_t>(index.size());
    return VisitAllTypes(params.dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = params.data<T>();
      T* o = out->data<T>();
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t i = 0; i < n; ++i) {
          std::copy_n(in + (a * limit + index[i]) * inner, inner, o + (a * n + i) * inner);
        }
      }
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(GatherOp, "GatherV2");

class UnsortedSegmentSumOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids = ctx->input(1);
    const Tensor& num_t = ctx->input(2);
    if (num_t.dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_segments must be a scalar, got ", num_t.shape().DebugString()));
    }
    const int64_t num_segments = Int64Values(num_t)[0];
    if (num_segments < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_segments must be non-negative, got ", num_segments));
    }
    const std::vector<int64_t>& ddims = data.shape().dim_sizes();
    const std::vector<int64_t>& idims = ids.shape().dim_sizes();
    if (idims.size() > ddims.size() || !std::equal(idims.begin(), idims.end(), ddims.begin())) {
      return absl::InvalidArgumentError(
          absl::StrCat("segment_ids of shape ", ids.shape().DebugString(),
                       " is not a prefix of data's shape ", data.shape().DebugString()));
    }
    int64_t inner = 1;
    for (size_t d = idims.size(); d < ddims.size(); ++d) inner *= ddims[d];
    std::vector<int64_t> dims = {num_segments};
    dims.insert(dims.end(), ddims.begin() + idims.size(), ddims.end());
    const std::vector<int64_t> segment = Int64Values(ids);
    for (size_t i = 0; i < segment.size(); ++i) {
      if (segment[i] >= num_segments) {
        return absl::InvalidArgumentError(absl::StrCat("segment_ids[", i, "] = ", segment[i],
                                                       " is out of range [0, ", num_segments, ")"));
      }
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape(dims)));  // Zeros.
    return VisitNumericTypes(data.dtype(), type_string(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = data.data<T>();
      T* o = out->data<T>();
      for (size_t i = 0; i < segment.size(); ++i) {
        if (segment[i] < 0) continue;  // Dropped, as TensorFlow does.
        T* row = o + segment[i] * inner;
        const T* from = in + static_cast<int64_t>(i) * inner;
        for (int64_t j = 0; j < inner; ++j) row[j] += from[j];
      }
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(UnsortedSegmentSumOp, "UnsortedSegmentSum");

class UniqueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override { return c->GetAttr("out_idx", &out_idx_); }

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor x, ctx->input_value(0));
    if (x.dims() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("Unique needs a vector, got shape ", x.shape().DebugString()));
    }
    const int64_t n = x.NumElements();
    std::vector<int64_t> idx(n);
    return VisitNumericTypes(x.dtype(), type_string(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      absl::flat_hash_map<T, int64_t> position;
      std::vector<T> distinct;
      for (int64_t i = 0; i < n; ++i) {
        auto [it, inserted] = position.try_emplace(in[i], static_cast<int64_t>(distinct.size()));
        if (inserted) distinct.push_back(in[i]);
        idx[i] = it->second;
      }
      const int64_t count = static_cast<int64_t>(distinct.size());
      ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, TensorShape({count})));
      std::copy(distinct.begin(), distinct.end(), y->data<T>());
      ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(1, out_idx_, TensorShape({n})));
      if (out_idx_ == DT_INT64) {
        std::copy(idx.begin(), idx.end(), out->data<int64_t>());
      } else {
        std::transform(idx.begin(), idx.end(), out->data<int32_t>(),
                       [](int64_t v) { return static_cast<int32_t>(v); });
      }
      return absl::OkStatus();
    });
  }

 private:
  DataType out_idx_ = DT_INT32;
};
REGISTER_KERNEL(UniqueOp, "Unique");

}  // namespace
}  // namespace overseer

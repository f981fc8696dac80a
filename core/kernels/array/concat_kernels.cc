// CPU kernels that join or split tensors: Pack, Unpack, ConcatV2 and ConcatOffset.

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

int64_t Product(const std::vector<int64_t>& dims, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; ++i) p *= dims[i];
  return p;
}

// Viewing every input as an [outer, inner_i] matrix, writes the row-wise
// concatenation into `out` ([outer, sum inner_i]).
absl::Status ConcatRows(const std::vector<Tensor>& inputs, int64_t outer, Tensor* out,
                        absl::string_view op) {
  return VisitAllTypes(out->dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out->data<T>();
    std::vector<int64_t> inner(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      inner[i] = outer == 0 ? 0 : inputs[i].NumElements() / outer;
    }
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        dst = std::copy_n(inputs[i].data<T>() + o * inner[i], inner[i], dst);
      }
    }
    return absl::OkStatus();
  });
}

// Reads inputs [0, n) by value.
absl::StatusOr<std::vector<Tensor>> InputValues(OpKernelContext* ctx, int n) {
  std::vector<Tensor> values;
  values.reserve(n);
  for (int i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(Tensor v, ctx->input_value(i));
    values.push_back(std::move(v));
  }
  return values;
}

class PackOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override { return c->GetAttr("axis", &axis_); }
  absl::Status Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    ASSIGN_OR_RETURN(std::vector<Tensor> values, InputValues(ctx, n));
    const TensorShape& shape = values[0].shape();
    for (int i = 1; i < n; ++i) {
      if (values[i].shape() != shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("Pack inputs must have one shape: input 0 has shape ", shape.DebugString(),
                         " but input ", i, " has shape ", values[i].shape().DebugString()));
      }
    }
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_, shape.dims() + 1, "Pack axis"));
    std::vector<int64_t> dims = shape.dim_sizes();
    const int64_t outer = Product(dims, 0, axis);
    dims.insert(dims.begin() + axis, n);
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape(dims)));
    return ConcatRows(values, outer, out, "Pack");
  }

 private:
  int64_t axis_ = 0;
};
REGISTER_KERNEL(PackOp, "Pack");

class UnpackOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override { return c->GetAttr("axis", &axis_); }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_, in.dims(), "Unpack axis"));
    const int num = ctx->num_outputs();
    if (in.dim_size(axis) != num) {
      return absl::InvalidArgumentError(absl::StrCat("cannot unpack ", num,
                                                     " tensors along dimension ", axis_,
                                                     " of shape ", in.shape().DebugString()));
    }
    std::vector<int64_t> dims = in.shape().dim_sizes();
    const int64_t outer = Product(dims, 0, axis);
    const int64_t inner = Product(dims, axis + 1, in.dims());
    dims.erase(dims.begin() + axis);
    std::vector<Tensor*> outs(num);
    for (int i = 0; i < num; ++i) {
      ASSIGN_OR_RETURN(outs[i], ctx->allocate_output(i, TensorShape(dims)));
    }
    return VisitAllTypes(in.dtype(), "Unpack", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int i = 0; i < num; ++i) {
          std::copy_n(src, inner, outs[i]->data<T>() + o * inner);
          src += inner;
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = 0;
};
REGISTER_KERNEL(UnpackOp, "Unpack");

class ConcatV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    ASSIGN_OR_RETURN(int64_t axis_value, IntTensorToScalar(ctx->input(n), "ConcatV2 axis"));
    ASSIGN_OR_RETURN(std::vector<Tensor> values, InputValues(ctx, n));
    const TensorShape& first = values[0].shape();
    if (first.dims() == 0) {
      return absl::InvalidArgumentError("ConcatV2 cannot concatenate scalars (use Pack)");
    }
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_value, first.dims(), "ConcatV2 axis"));
    std::vector<int64_t> dims = first.dim_sizes();
    dims[axis] = 0;
    for (int i = 0; i < n; ++i) {
      const TensorShape& s = values[i].shape();
      bool ok = s.dims() == first.dims();
      for (int d = 0; ok && d < s.dims(); ++d) {
        ok = d == axis || s.dim_size(d) == first.dim_size(d);
      }
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ConcatV2 inputs must match except in dimension ", axis, ": input 0 has shape ",
            first.DebugString(), " but input ", i, " has shape ", s.DebugString()));
      }
      dims[axis] += s.dim_size(axis);
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape(dims)));
    return ConcatRows(values, Product(dims, 0, axis), out, "ConcatV2");
  }
};
REGISTER_KERNEL(ConcatV2Op, "ConcatV2");

class ConcatOffsetOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    ASSIGN_OR_RETURN(int64_t axis_value,
                     IntTensorToScalar(ctx->input(0), "ConcatOffset concat_dim"));
    const Tensor& first = ctx->input(1);
    if (first.dims() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ConcatOffset shapes must be vectors, got shape ", first.shape().DebugString()));
    }
    const int rank = static_cast<int>(first.NumElements());
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_value, rank, "ConcatOffset concat_dim"));
    int32_t offset = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& s = ctx->input(1 + i);
      if (s.shape() != first.shape()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ConcatOffset shape ", i, " has ", s.NumElements(), " entries, expected ", rank));
      }
      for (int d = 0; d < rank; ++d) {
        if (d != axis && s.data<int32_t>()[d] != first.data<int32_t>()[d]) {
          return absl::InvalidArgumentError(
              absl::StrCat("ConcatOffset shape ", i, " differs from shape 0 in dimension ", d, ": ",
                           s.data<int32_t>()[d], " vs ", first.data<int32_t>()[d]));
        }
      }
      ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(i, first.shape()));
      out->data<int32_t>()[axis] = offset;
      offset += s.data<int32_t>()[axis];
    }
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(ConcatOffsetOp, "ConcatOffset");

}  // namespace
}  // namespace overseer

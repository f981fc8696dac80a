// CPU kernels that rearrange elements without arithmetic: Reshape, ExpandDims, Squeeze,
// Transpose, Slice and BroadcastTo.

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/kernels/array/kernel_util.h"
#include "core/kernels/array/strided_copy.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// Copies the strided view (see StridedCopy) of `in` into `out` for any dtype.
absl::Status CopyStrided(const Tensor& in, int64_t offset, const std::vector<int64_t>& strides,
                         Tensor* out, absl::string_view op) {
  return VisitAllTypes(in.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    StridedCopy<T>(in.data<T>(), offset, strides, out->shape().dim_sizes(), out->data<T>());
    return absl::OkStatus();
  });
}

class ReshapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    const Tensor& shape_t = ctx->input(1);
    if (shape_t.dims() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("Reshape shape must be a vector, got shape ",
                                                     shape_t.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, IntTensorToVector(shape_t, "Reshape shape"));
    const std::string requested = absl::StrCat("[", absl::StrJoin(dims, ","), "]");
    int unknown = -1;
    int64_t product = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == -1) {
        if (unknown >= 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "Reshape shape ", requested, " has more than one -1; only one can be inferred"));
        }
        unknown = static_cast<int>(i);
      } else if (dims[i] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("Reshape shape ", requested, " has a negative size"));
      } else {
        product *= dims[i];
      }
    }
    const int64_t n = in.NumElements();
    if (unknown >= 0) {
      if (product == 0 || n % product != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot reshape a tensor of shape ", in.shape().DebugString(), " (", n,
                         " elements) into shape ", requested, ": the -1 cannot be inferred"));
      }
      dims[unknown] = n / product;
    } else if (product != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot reshape a tensor of shape ", in.shape().DebugString(), " (", n,
                       " elements) into shape ", requested, " (", product, " elements)"));
    }
    ASSIGN_OR_RETURN(Tensor out, in.Reshaped(TensorShape(dims)));
    ctx->set_output(0, std::move(out));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(ReshapeOp, "Reshape");

class ExpandDimsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    ASSIGN_OR_RETURN(int64_t dim, IntTensorToScalar(ctx->input(1), "ExpandDims dim"));
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(dim, in.dims() + 1, "ExpandDims dim"));
    std::vector<int64_t> dims = in.shape().dim_sizes();
    dims.insert(dims.begin() + axis, 1);
    ASSIGN_OR_RETURN(Tensor out, in.Reshaped(TensorShape(dims)));
    ctx->set_output(0, std::move(out));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(ExpandDimsOp, "ExpandDims");

class SqueezeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Init(OpKernelConstruction* c) override {
    return c->GetAttr("squeeze_dims", &squeeze_dims_);
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    std::vector<bool> remove(in.dims(), squeeze_dims_.empty());
    for (int64_t d : squeeze_dims_) {
      ASSIGN_OR_RETURN(int axis, CanonicalAxis(d, in.dims(), "squeeze dim"));
      if (in.dim_size(axis) != 1) {
        return absl::InvalidArgumentError(absl::StrCat("cannot squeeze dim ", d, " of size ",
                                                       in.dim_size(axis), " in shape ",
                                                       in.shape().DebugString()));
      }
      remove[axis] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < in.dims(); ++i) {
      if (!(remove[i] && in.dim_size(i) == 1)) dims.push_back(in.dim_size(i));
    }
    ASSIGN_OR_RETURN(Tensor out, in.Reshaped(TensorShape(dims)));
    ctx->set_output(0, std::move(out));
    return absl::OkStatus();
  }

 private:
  std::vector<int64_t> squeeze_dims_;
};
REGISTER_KERNEL(SqueezeOp, "Squeeze");

class TransposeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    const Tensor& perm_t = ctx->input(1);
    if (perm_t.dims() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("Transpose perm must be a vector, got shape ",
                                                     perm_t.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> perm, IntTensorToVector(perm_t, "perm"));
    const int rank = in.dims();
    const std::string perm_text = absl::StrCat("[", absl::StrJoin(perm, ","), "]");
    if (static_cast<int>(perm.size()) != rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Transpose perm ", perm_text, " does not match shape ", in.shape().DebugString()));
    }
    std::vector<bool> seen(rank, false);
    bool identity = true;
    for (int i = 0; i < rank; ++i) {
      if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]) {
        return absl::InvalidArgumentError(
            absl::StrCat("Transpose perm ", perm_text, " is not a permutation of 0..", rank - 1));
      }
      seen[perm[i]] = true;
      identity &= perm[i] == i;
    }
    if (identity) {
      ctx->set_output(0, std::move(in));
      return absl::OkStatus();
    }
    const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dim_sizes());
    std::vector<int64_t> out_dims(rank), strides(rank);
    for (int i = 0; i < rank; ++i) {
      out_dims[i] = in.dim_size(perm[i]);
      strides[i] = in_strides[perm[i]];
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape(out_dims)));
    return CopyStrided(in, 0, strides, out, "Transpose");
  }
};
REGISTER_KERNEL(TransposeOp, "Transpose");

class SliceOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    ASSIGN_OR_RETURN(std::vector<int64_t> begin, IntTensorToVector(ctx->input(1), "begin"));
    ASSIGN_OR_RETURN(std::vector<int64_t> size, IntTensorToVector(ctx->input(2), "size"));
    const int rank = in.dims();
    if (ctx->input(1).dims() != 1 || ctx->input(2).dims() != 1 ||
        static_cast<int>(begin.size()) != rank || static_cast<int>(size.size()) != rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Slice begin and size must be vectors of length ", rank, " for input of shape ",
          in.shape().DebugString(), ", got shapes ", ctx->input(1).shape().DebugString(), " and ",
          ctx->input(2).shape().DebugString()));
    }
    const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dim_sizes());
    int64_t offset = 0;
    for (int i = 0; i < rank; ++i) {
      const int64_t dim = in.dim_size(i);
      if (size[i] == -1) size[i] = dim - begin[i];
      if (begin[i] < 0 || size[i] < 0 || begin[i] + size[i] > dim) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Slice of shape ", in.shape().DebugString(), " with begin [", absl::StrJoin(begin, ","),
            "] and size [", absl::StrJoin(size, ","), "] is out of bounds in dimension ", i));
      }
      offset += begin[i] * in_strides[i];
    }
    if (TensorShape(size) == in.shape()) {
      ctx->set_output(0, std::move(in));
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, TensorShape(size)));
    if (out->NumElements() == 0) return absl::OkStatus();
    return CopyStrided(in, offset, in_strides, out, "Slice");
  }
};
REGISTER_KERNEL(SliceOp, "Slice");

class BroadcastToOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    ASSIGN_OR_RETURN(TensorShape target, ShapeFromTensor(ctx->input(1), "BroadcastTo shape"));
    if (target == in.shape()) {
      ctx->set_output(0, std::move(in));
      return absl::OkStatus();
    }
    const int rank = target.dims();
    const int pad = rank - in.dims();
    auto incompatible = [&]() {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot broadcast shape ", in.shape().DebugString(), " to shape ", target.DebugString()));
    };
    if (pad < 0) return incompatible();
    const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dim_sizes());
    std::vector<int64_t> strides(rank, 0);
    for (int i = pad; i < rank; ++i) {
      const int64_t d = in.dim_size(i - pad);
      if (d == target.dim_size(i)) {
        strides[i] = in_strides[i - pad];
      } else if (d != 1) {
        return incompatible();
      }
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, target));
    return CopyStrided(in, 0, strides, out, "BroadcastTo");
  }
};
REGISTER_KERNEL(BroadcastToOp, "BroadcastTo");

}  // namespace
}  // namespace overseer

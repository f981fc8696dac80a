// CPU kernels of the basic array ops: constants, placeholders, identities, shapes and
// fills.

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

class ConstOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(c->GetAttr("value", &value_));
    DataType dtype;
    RETURN_IF_ERROR(c->GetAttr("dtype", &dtype));
    if (value_.dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat("Const value has dtype ",
                                                     DataTypeString(value_.dtype()),
                                                     " but attr dtype is ", DataTypeString(dtype)));
    }
    return absl::OkStatus();
  }
  // The output shares the constant's buffer; kernels that update in place copy first.
  absl::Status Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, value_);
    return absl::OkStatus();
  }

 private:
  Tensor value_;
};
REGISTER_KERNEL(ConstOp, "Const");

class PlaceholderOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Init(OpKernelConstruction* c) override {
    RETURN_IF_ERROR(c->GetAttr("dtype", &dtype_));
    return c->GetAttr("shape", &shape_);
  }
  // Only runs when nothing was fed: the executor substitutes fed values.
  absl::Status Compute(OpKernelContext* /*ctx*/) override {
    std::string message = absl::StrCat("You must feed a value for placeholder tensor '", name(),
                                       "' with dtype ", DataTypeString(dtype_));
    if (shape_.known_rank()) absl::StrAppend(&message, " and shape ", shape_.DebugString());
    return absl::InvalidArgumentError(message);
  }

 private:
  DataType dtype_ = DT_INVALID;
  PartialShape shape_;
};
REGISTER_KERNEL(PlaceholderOp, "Placeholder");

class PlaceholderWithDefaultOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Init(OpKernelConstruction* c) override { return c->GetAttr("shape", &shape_); }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor value, ctx->input_value(0));
    if (!shape_.IsCompatibleWith(value.shape())) {
      return absl::InvalidArgumentError(
          absl::StrCat("default value of shape ", value.shape().DebugString(),
                       " is incompatible with the declared shape ", shape_.DebugString()));
    }
    ctx->set_output(0, std::move(value));
    return absl::OkStatus();
  }

 private:
  PartialShape shape_;
};
REGISTER_KERNEL(PlaceholderWithDefaultOp, "PlaceholderWithDefault");

// Identity and StopGradient: forward the input (a ref input's current value).
class IdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor value, ctx->input_value(0));
    ctx->set_output(0, std::move(value));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(IdentityOp, "Identity");
REGISTER_KERNEL(IdentityOp, "StopGradient");

class NoOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Compute(OpKernelContext* /*ctx*/) override { return absl::OkStatus(); }
};
REGISTER_KERNEL(NoOp, "NoOp");

// Writes `values` into a new int32 or int64 tensor. INVALID_ARGUMENT if a value does
// not fit int32.
absl::StatusOr<Tensor> IntVectorTensor(DataType dtype, const std::vector<int64_t>& values,
                                       const TensorShape& shape) {
  Tensor out(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DT_INT64) {
      out.data<int64_t>()[i] = values[i];
    } else {
      if (values[i] > INT32_MAX) {
        return absl::InvalidArgumentError(
            absl::StrCat(values[i], " does not fit out_type int32; use int64"));
      }
      out.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    }
  }
  return out;
}

class ShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    const auto& dims = in.shape().dim_sizes();
    ASSIGN_OR_RETURN(Tensor out, IntVectorTensor(output_type(0), dims,
                                                 TensorShape({static_cast<int64_t>(dims.size())})));
    ctx->set_output(0, std::move(out));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(ShapeOp, "Shape");

class SizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    ASSIGN_OR_RETURN(Tensor out,
                     IntVectorTensor(output_type(0), {in.NumElements()}, TensorShape()));
    ctx->set_output(0, std::move(out));
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(SizeOp, "Size");

class FillOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    if (value.dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Fill value must be a scalar, got shape ", value.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(TensorShape shape, ShapeFromTensor(ctx->input(0), "Fill dims"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    return VisitAllTypes(value.dtype(), "Fill", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::fill_n(out->data<T>(), out->NumElements(), value.scalar<T>());
      return absl::OkStatus();
    });
  }
};
REGISTER_KERNEL(FillOp, "Fill");

// ZerosLike (kOne = false) and OnesLike (kOne = true).
template <bool kOne>
class FillLikeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor in, ctx->input_value(0));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, in.shape()));
    if (!kOne) return absl::OkStatus();  // Allocation zero-fills.
    return VisitAllTypes(in.dtype(), "OnesLike", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, std::string>) {
        return absl::InvalidArgumentError("OnesLike does not support dtype string");
      } else {
        std::fill_n(out->data<T>(), out->NumElements(), static_cast<T>(1));
        return absl::OkStatus();
      }
    });
  }
};
REGISTER_KERNEL(FillLikeOp<false>, "ZerosLike");
REGISTER_KERNEL(FillLikeOp<true>, "OnesLike");

class ReducedShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& shape = ctx->input(0);
    if (shape.dims() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ReducedShape input_shape must be a vector, got shape ", shape.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntTensorToVector(ctx->input(1), "axes"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape.shape()));
    const int rank = static_cast<int>(shape.NumElements());
    std::copy_n(shape.data<int32_t>(), rank, out->data<int32_t>());
    for (int64_t a : axes) {
      ASSIGN_OR_RETURN(int axis, CanonicalAxis(a, rank, "ReducedShape axis"));
      out->data<int32_t>()[axis] = 1;
    }
    return absl::OkStatus();
  }
};
REGISTER_KERNEL(ReducedShapeOp, "ReducedShape");

}  // namespace
}  // namespace overseer

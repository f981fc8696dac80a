#include "core/kernels/array/kernel_util.h"

namespace overseer {

absl::StatusOr<std::vector<int64_t>> IntTensorToVector(const Tensor& t, absl::string_view what) {
  if (t.dims() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a scalar or vector, got shape ", t.shape().DebugString()));
  }
  std::vector<int64_t> out;
  out.reserve(t.NumElements());
  if (t.dtype() == DT_INT32) {
    const int32_t* p = t.data<int32_t>();
    out.assign(p, p + t.NumElements());
  } else if (t.dtype() == DT_INT64) {
    const int64_t* p = t.data<int64_t>();
    out.assign(p, p + t.NumElements());
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be int32 or int64, got ", DataTypeString(t.dtype())));
  }
  return out;
}

absl::StatusOr<int64_t> IntTensorToScalar(const Tensor& t, absl::string_view what) {
  if (t.NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must have one element, got shape ", t.shape().DebugString()));
  }
  auto v = IntTensorToVector(t.dims() <= 1 ? t : *t.Reshaped(TensorShape({1})), what);
  if (!v.ok()) return v.status();
  return (*v)[0];
}

absl::StatusOr<TensorShape> ShapeFromTensor(const Tensor& t, absl::string_view what) {
  if (t.dims() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a vector, got shape ", t.shape().DebugString()));
  }
  auto dims = IntTensorToVector(t, what);
  if (!dims.ok()) return dims.status();
  for (int64_t d : *dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has a negative size: [", absl::StrJoin(*dims, ","), "]"));
    }
  }
  return TensorShape::FromDims(*dims);
}

absl::StatusOr<int> CanonicalAxis(int64_t axis, int rank, absl::string_view what) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", axis, " is out of range for rank ",
                                                   rank, " (expected [", -rank, ", ", rank, "))"));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

PartialShape ShapeFromShapeInput(const ShapeContext& c, int i) {
  if (i < c.num_inputs()) {
    if (const Tensor* t = c.input_tensor(i); t != nullptr && t->dims() == 1) {
      auto dims = IntTensorToVector(*t, "shape");
      if (dims.ok()) {
        for (int64_t& d : *dims) {
          if (d < 0) d = -1;
        }
        return PartialShape(*std::move(dims));
      }
    }
    const PartialShape& s = c.input(i);
    if (s.known_rank() && s.rank() == 1 && s.dim(0) >= 0) {
      return PartialShape(std::vector<int64_t>(s.dim(0), -1));
    }
  }
  return PartialShape::Unknown();
}

std::vector<int64_t> Int64Values(const Tensor& t) {
  std::vector<int64_t> out(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    out[i] = t.dtype() == DT_INT64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
  }
  return out;
}

}  // namespace overseer

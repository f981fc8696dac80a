#include "core/tensor_shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace overseer {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 62;

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ",";
    if (dims[i] < 0) {
      out += "?";
    } else {
      absl::StrAppend(&out, dims[i]);
    }
  }
  return out + "]";
}

}  // namespace

absl::StatusOr<TensorShape> TensorShape::FromDims(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dimension ", d, " in shape [", absl::StrJoin(dims, ","), "] is negative"));
    }
    if (d > 0 && n > kMaxElements / d) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape [", absl::StrJoin(dims, ","), "] has too many elements"));
    }
    n *= d;
  }
  return TensorShape(std::vector<int64_t>(dims.begin(), dims.end()));
}

absl::StatusOr<TensorShape> TensorShape::FromProto(const TensorShapeProto& proto) {
  if (proto.unknown_rank()) {
    return absl::InvalidArgumentError("expected a fully defined shape, got unknown rank");
  }
  std::vector<int64_t> dims;
  dims.reserve(proto.dim_size());
  for (const auto& d : proto.dim()) dims.push_back(d.size());
  return FromDims(dims);
}

void TensorShape::ToProto(TensorShapeProto* proto) const {
  proto->Clear();
  for (int64_t d : dims_) proto->add_dim()->set_size(d);
}

int64_t TensorShape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string TensorShape::DebugString() const { return DimsString(dims_); }

bool PartialShape::KnownElementsFit() const {
  int64_t n = 1;
  for (int64_t d : dims_) {
    if (d <= 0) continue;
    if (n > kMaxElements / d) return false;
    n *= d;
  }
  return true;
}

PartialShape PartialShape::FromProto(const TensorShapeProto& proto) {
  if (proto.unknown_rank()) return PartialShape();
  std::vector<int64_t> dims;
  dims.reserve(proto.dim_size());
  for (const auto& d : proto.dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  return PartialShape(std::move(dims));
}

void PartialShape::ToProto(TensorShapeProto* proto) const {
  proto->Clear();
  if (!known_rank_) {
    proto->set_unknown_rank(true);
    return;
  }
  for (int64_t d : dims_) proto->add_dim()->set_size(d);
}

bool PartialShape::IsFullyDefined() const {
  if (!known_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

bool PartialShape::IsCompatibleWith(const TensorShape& shape) const {
  return IsCompatibleWith(PartialShape(shape));
}

bool PartialShape::IsCompatibleWith(const PartialShape& other) const { return Merge(other).ok(); }

absl::StatusOr<PartialShape> PartialShape::Merge(const PartialShape& other) const {
  if (!known_rank_) return other;
  if (!other.known_rank_) return *this;
  if (rank() != other.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("shapes ", DebugString(), " and ",
                                                   other.DebugString(), " have different ranks"));
  }
  std::vector<int64_t> dims(dims_.size());
  for (size_t i = 0; i < dims_.size(); ++i) {
    int64_t a = dims_[i], b = other.dims_[i];
    if (a >= 0 && b >= 0 && a != b) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes ", DebugString(), " and ", other.DebugString(), " differ in dimension ", i));
    }
    dims[i] = a >= 0 ? a : b;
  }
  return PartialShape(std::move(dims));
}

std::string PartialShape::DebugString() const {
  if (!known_rank_) return "<unknown>";
  return DimsString(dims_);
}

absl::StatusOr<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b) {
  const int rank = std::max(a.dims(), b.dims());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.dims() - rank + i, ib = b.dims() - rank + i;
    const int64_t da = ia >= 0 ? a.dim_size(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim_size(ib) : 1;
    if (da == db || db == 1) {
      dims[i] = da;
    } else if (da == 1) {
      dims[i] = db;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("Incompatible shapes: ", a.DebugString(), " vs. ", b.DebugString()));
    }
  }
  return TensorShape(std::move(dims));
}

absl::StatusOr<PartialShape> BroadcastShapes(const PartialShape& a, const PartialShape& b) {
  if (!a.known_rank() || !b.known_rank()) return PartialShape::Unknown();
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a.dim(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da == 1) {
      dims[i] = db;
    } else if (db == 1) {
      dims[i] = da;
    } else if (da < 0 || db < 0) {
      // One unknown, the other known and not 1: the result is the known one (or
      // the step fails at run time); both unknown: unknown.
      dims[i] = da < 0 ? db : da;
    } else if (da == db) {
      dims[i] = da;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("Incompatible shapes: ", a.DebugString(), " vs. ", b.DebugString()));
    }
  }
  return PartialShape(std::move(dims));
}

}  // namespace overseer

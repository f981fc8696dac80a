#ifndef OVERSEER_CORE_TENSOR_SHAPE_H_
#define OVERSEER_CORE_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/tensor_shape.pb.h"

namespace overseer {

// The fully known shape of a tensor: a list of non-negative dimension sizes.
// A value type; not thread-safe for concurrent mutation.
class TensorShape {
 public:
  TensorShape() = default;  // A scalar.
  TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit TensorShape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  // INVALID_ARGUMENT if any size is negative or the element count overflows.
  static absl::StatusOr<TensorShape> FromDims(absl::Span<const int64_t> dims);
  // INVALID_ARGUMENT for unknown rank or unknown (-1) dimensions.
  static absl::StatusOr<TensorShape> FromProto(const TensorShapeProto& proto);
  void ToProto(TensorShapeProto* proto) const;

  int dims() const { return static_cast<int>(dims_.size()); }
  int64_t dim_size(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dim_sizes() const { return dims_; }
  int64_t num_elements() const;

  void AddDim(int64_t size) { dims_.push_back(size); }
  void set_dim(int i, int64_t size) { dims_[i] = size; }
  void RemoveDim(int i) { dims_.erase(dims_.begin() + i); }

  // "[2,3]"; "[]" for a scalar.
  std::string DebugString() const;

  bool operator==(const TensorShape& other) const { return dims_ == other.dims_; }
  bool operator!=(const TensorShape& other) const { return dims_ != other.dims_; }

 private:
  std::vector<int64_t> dims_;
};

// A shape known in part, for shape inference and Placeholder constraints: the rank may
// be unknown, and a known rank may have unknown dimensions (-1).
class PartialShape {
 public:
  PartialShape() = default;  // Unknown rank.
  PartialShape(std::initializer_list<int64_t> dims) : known_rank_(true), dims_(dims) {}
  explicit PartialShape(std::vector<int64_t> dims) : known_rank_(true), dims_(std::move(dims)) {}
  explicit PartialShape(const TensorShape& shape) : known_rank_(true), dims_(shape.dim_sizes()) {}

  static PartialShape Unknown() { return PartialShape(); }
  static PartialShape Scalar() { return PartialShape(std::vector<int64_t>{}); }
  // Unknown rank if `proto.unknown_rank()`.
  static PartialShape FromProto(const TensorShapeProto& proto);
  void ToProto(TensorShapeProto* proto) const;

  bool known_rank() const { return known_rank_; }
  // Precondition: known_rank().
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }  // -1 if unknown
  const std::vector<int64_t>& dims() const { return dims_; }
  bool IsFullyDefined() const;
  // Whether the known dimensions multiply to at most 2^62 elements, as a TensorShape's
  // must. Shape inference checks every shape it infers (core/shape_inference.h), so a
  // graph's shapes always do; a shape read from an attr or a message may not.
  bool KnownElementsFit() const;
  // Precondition: IsFullyDefined() and KnownElementsFit().
  TensorShape ToTensorShape() const { return TensorShape(dims_); }

  // Whether a tensor of `shape` may have this shape.
  bool IsCompatibleWith(const TensorShape& shape) const;
  bool IsCompatibleWith(const PartialShape& other) const;
  // The most specific shape compatible with both; INVALID_ARGUMENT if incompatible.
  absl::StatusOr<PartialShape> Merge(const PartialShape& other) const;

  // "[?,784]"; "<unknown>" for unknown rank.
  std::string DebugString() const;

  bool operator==(const PartialShape& other) const {
    return known_rank_ == other.known_rank_ && dims_ == other.dims_;
  }

 private:
  bool known_rank_ = false;
  std::vector<int64_t> dims_;
};

// Numpy broadcasting of two shapes. INVALID_ARGUMENT naming both shapes if they are
// incompatible.
absl::StatusOr<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b);
absl::StatusOr<PartialShape> BroadcastShapes(const PartialShape& a, const PartialShape& b);

}  // namespace overseer

#endif  // OVERSEER_CORE_TENSOR_SHAPE_H_

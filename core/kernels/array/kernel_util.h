#ifndef OVERSEER_CORE_KERNELS_ARRAY_KERNEL_UTIL_H_
#define OVERSEER_CORE_KERNELS_ARRAY_KERNEL_UTIL_H_

// Small helpers shared by the kernels and shape functions of the array, state, random,
// training and queue ops: reading integer index tensors, dispatching on a dtype, and
// shapes given as tensors.

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "core/shape_inference.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"
#include "core/types.h"

namespace overseer {

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) for the C++ type T of `dtype` among the six supported types.
// INVALID_ARGUMENT naming `what` and the dtype otherwise.
template <typename Fn>
absl::Status VisitAllTypes(DataType dtype, absl::string_view what, Fn&& fn) {
  switch (dtype) {
#define OVERSEER_VISIT_CASE(T)   \
  case DataTypeToEnum<T>::value: \
    return fn(TypeTag<T>{});
    OVERSEER_FOR_ALL_TYPES(OVERSEER_VISIT_CASE)
#undef OVERSEER_VISIT_CASE
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what, " does not support dtype ", DataTypeString(dtype)));
  }
}

// Like VisitAllTypes for float, double, int32 and int64 only.
template <typename Fn>
absl::Status VisitNumericTypes(DataType dtype, absl::string_view what, Fn&& fn) {
  switch (dtype) {
#define OVERSEER_VISIT_CASE(T)   \
  case DataTypeToEnum<T>::value: \
    return fn(TypeTag<T>{});
    OVERSEER_FOR_NUMERIC_TYPES(OVERSEER_VISIT_CASE)
#undef OVERSEER_VISIT_CASE
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what, " does not support dtype ", DataTypeString(dtype)));
  }
}

// Like VisitAllTypes for float and double only.
template <typename Fn>
absl::Status VisitFloatTypes(DataType dtype, absl::string_view what, Fn&& fn) {
  switch (dtype) {
#define OVERSEER_VISIT_CASE(T)   \
  case DataTypeToEnum<T>::value: \
    return fn(TypeTag<T>{});
    OVERSEER_FOR_FLOAT_TYPES(OVERSEER_VISIT_CASE)
#undef OVERSEER_VISIT_CASE
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what, " does not support dtype ", DataTypeString(dtype)));
  }
}

// The elements of an int32 or int64 tensor of rank 0 or 1. INVALID_ARGUMENT naming
// `what` for another dtype or rank.
absl::StatusOr<std::vector<int64_t>> IntTensorToVector(const Tensor& t, absl::string_view what);
// The single element of an int32 or int64 tensor with one element.
absl::StatusOr<int64_t> IntTensorToScalar(const Tensor& t, absl::string_view what);

// A TensorShape from a 1-D int32/int64 tensor of sizes. INVALID_ARGUMENT naming `what`
// for a bad rank or a negative size.
absl::StatusOr<TensorShape> ShapeFromTensor(const Tensor& t, absl::string_view what);

// Normalises `axis` in [-rank, rank) to [0, rank); INVALID_ARGUMENT naming `what`.
absl::StatusOr<int> CanonicalAxis(int64_t axis, int rank, absl::string_view what);

// For shape functions: the shape that input `i` (a 1-D shape tensor) describes. Exact
// when the value is a constant; rank only when the input's length is known; else
// unknown rank. Sizes of -1 in a constant stay unknown.
PartialShape ShapeFromShapeInput(const ShapeContext& c, int i);

// The values of an int32 or int64 tensor of any shape (indices, ids, axes), widened to
// int64 in row-major order. Precondition: the dtype is DT_INT32 or DT_INT64 (the op's
// attr constraints ensure it).
std::vector<int64_t> Int64Values(const Tensor& t);

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_ARRAY_KERNEL_UTIL_H_

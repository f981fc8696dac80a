#ifndef OVERSEER_CORE_TYPES_H_
#define OVERSEER_CORE_TYPES_H_

// Element types: the proto enum DataType (TensorFlow's numbers) and the C++ types of
// the six that kernels support (float, double, int32, int64, bool, string).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/types.pb.h"

namespace overseer {

// "float", "int32", "string", "float_ref", ...
std::string DataTypeString(DataType dtype);

// Parses "float", "double", "int32", "int64", "bool", "string"; also "float32",
// "float64". INVALID_ARGUMENT for anything else.
absl::StatusOr<DataType> DataTypeFromString(absl::string_view name);

bool IsRefType(DataType dtype);
DataType MakeRefType(DataType dtype);    // DT_FLOAT -> DT_FLOAT_REF
DataType RemoveRefType(DataType dtype);  // DT_FLOAT_REF -> DT_FLOAT; others unchanged

// Whether Tensor supports `dtype` (float, double, int32, int64, bool, string).
bool IsSupportedDataType(DataType dtype);
bool IsFloatingType(DataType dtype);  // float, double
bool IsIntegerType(DataType dtype);   // int32, int64
bool IsNumericType(DataType dtype);   // floating or integer

// Bytes per element; 0 for DT_STRING and unsupported types.
size_t DataTypeSize(DataType dtype);

// Maps a C++ type to its DataType: DataTypeToEnum<float>::value == DT_FLOAT.
template <typename T>
struct DataTypeToEnum;
template <>
struct DataTypeToEnum<float> {
  static constexpr DataType value = DT_FLOAT;
};
template <>
struct DataTypeToEnum<double> {
  static constexpr DataType value = DT_DOUBLE;
};
template <>
struct DataTypeToEnum<int32_t> {
  static constexpr DataType value = DT_INT32;
};
template <>
struct DataTypeToEnum<int64_t> {
  static constexpr DataType value = DT_INT64;
};
template <>
struct DataTypeToEnum<bool> {
  static constexpr DataType value = DT_BOOL;
};
template <>
struct DataTypeToEnum<std::string> {
  static constexpr DataType value = DT_STRING;
};

}  // namespace overseer

// Calls MACRO(T) in a `case` for each supported numeric dtype of `dtype`, e.g.
//   switch (dtype) { OVERSEER_CASES_NUMERIC(MY_CASE) default: return error; }
// where MY_CASE(T) expands to `case DataTypeToEnum<T>::value: return F<T>(...);`.
#define OVERSEER_FOR_FLOAT_TYPES(M) M(float) M(double)
#define OVERSEER_FOR_NUMERIC_TYPES(M) M(float) M(double) M(int32_t) M(int64_t)
#define OVERSEER_FOR_ALL_TYPES(M) OVERSEER_FOR_NUMERIC_TYPES(M) M(bool) M(std::string)

#endif  // OVERSEER_CORE_TYPES_H_

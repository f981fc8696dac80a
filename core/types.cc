#include "core/types.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace overseer {

std::string DataTypeString(DataType dtype) {
  if (IsRefType(dtype)) return DataTypeString(RemoveRefType(dtype)) + "_ref";
  switch (dtype) {
    case DT_FLOAT:
      return "float";
    case DT_DOUBLE:
      return "double";
    case DT_INT32:
      return "int32";
    case DT_INT64:
      return "int64";
    case DT_BOOL:
      return "bool";
    case DT_STRING:
      return "string";
    case DT_INVALID:
      return "invalid";
    default: {
      const std::string& name = DataType_Name(dtype);
      if (!name.empty()) return absl::AsciiStrToLower(name.substr(3));
      return absl::StrCat("unknown dtype ", static_cast<int>(dtype));
    }
  }
}

absl::StatusOr<DataType> DataTypeFromString(absl::string_view name) {
  if (name == "float" || name == "float32") return DT_FLOAT;
  if (name == "double" || name == "float64") return DT_DOUBLE;
  if (name == "int32") return DT_INT32;
  if (name == "int64") return DT_INT64;
  if (name == "bool") return DT_BOOL;
  if (name == "string") return DT_STRING;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown data type '", name, "'; expected one of float, double, int32, int64, bool, string"));
}

// Reference types are the value types plus 100 (as TensorFlow's kDataTypeRefOffset).
// A DataType read from a message can hold any int32 (proto3 enums are open): only
// 101..199 are references, so that no other value is "removed" again and again.
bool IsRefType(DataType dtype) {
  const int value = static_cast<int>(dtype);
  return value > 100 && value < 200;
}

DataType MakeRefType(DataType dtype) {
  if (IsRefType(dtype)) return dtype;
  return static_cast<DataType>(static_cast<int>(dtype) + 100);
}

DataType RemoveRefType(DataType dtype) {
  if (!IsRefType(dtype)) return dtype;
  return static_cast<DataType>(static_cast<int>(dtype) - 100);
}

bool IsSupportedDataType(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
    case DT_DOUBLE:
    case DT_INT32:
    case DT_INT64:
    case DT_BOOL:
    case DT_STRING:
      return true;
    default:
      return false;
  }
}

bool IsFloatingType(DataType dtype) { return dtype == DT_FLOAT || dtype == DT_DOUBLE; }
bool IsIntegerType(DataType dtype) { return dtype == DT_INT32 || dtype == DT_INT64; }
bool IsNumericType(DataType dtype) { return IsFloatingType(dtype) || IsIntegerType(dtype); }

size_t DataTypeSize(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
      return 4;
    case DT_DOUBLE:
      return 8;
    case DT_INT32:
      return 4;
    case DT_INT64:
      return 8;
    case DT_BOOL:
      return 1;
    default:
      return 0;
  }
}

}  // namespace overseer

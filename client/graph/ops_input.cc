#include "client/graph/ops_input.h"

#include "absl/strings/str_cat.h"
#include "client/graph/graph_builder.h"
#include "client/graph/scope.h"

namespace overseer {

Output Input::ToOutput(const Scope& scope) const {
  if (!status_.ok()) {
    scope.UpdateStatus(status_);
    return Output();
  }
  if (!is_value_) return output_;
  return ops::Const(scope.WithOpName(""), value_);
}

absl::StatusOr<Tensor> FilledTensor(DataType dtype, const TensorShape& shape, double value) {
  Tensor t(DT_FLOAT, TensorShape());
  switch (dtype) {
#define FILL_CASE(T)                                \
  case DataTypeToEnum<T>::value:                    \
    t = Tensor(dtype, shape);                       \
    t.flat<T>().setConstant(static_cast<T>(value)); \
    return t;
    OVERSEER_FOR_NUMERIC_TYPES(FILL_CASE)
#undef FILL_CASE
    case DT_BOOL:
      t = Tensor(dtype, shape);
      t.flat<bool>().setConstant(value != 0);
      return t;
    default:
      return absl::InvalidArgumentError(absl::StrCat("cannot make a constant of dtype ",
                                                     DataTypeString(dtype), " from a number"));
  }
}

namespace ops {

Output Const(const Scope& scope, const Input& value) {
  if (!value.status().ok()) {
    scope.UpdateStatus(value.status());
    return Output();
  }
  if (!value.is_value()) {
    scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
        "Const in name scope '", scope.name_scope(), "' needs a value, not the tensor '",
        value.output().valid() ? value.output().name() : "<null>", "'")));
    return Output();
  }
  return FirstOutput(NodeBuilder(scope, "Const")
                         .Attr("value", value.value())
                         .Attr("dtype", value.value().dtype())
                         .Finalize());
}

Output ConstOfType(const Scope& scope, DataType dtype, double value) {
  return ConstFilled(scope, dtype, TensorShape(), value);
}

Output ConstFilled(const Scope& scope, DataType dtype, const TensorShape& shape, double value) {
  absl::StatusOr<Tensor> t = FilledTensor(RemoveRefType(dtype), shape, value);
  if (!t.ok()) {
    scope.UpdateStatus(t.status());
    return Output();
  }
  return Const(scope, *t);
}

}  // namespace ops
}  // namespace overseer

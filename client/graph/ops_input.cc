#include "client/graph/ops_input.h"

#include "absl/strings/str_cat.h"
#include "client/graph/graph_builder.h"
#include "client/graph/scope.h"
#include "core/tensor_eigen.h"

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
  dtype = RemoveRefType(dtype);
  // One value that every element repeats, as TensorFlow writes tf.constant(v, shape):
  // a slot initialiser of a million zeros is a few bytes in the GraphDef, not 4 MB.
  AttrValue proto;
  TensorProto* t = proto.mutable_tensor();
  t->set_dtype(dtype);
  shape.ToProto(t->mutable_tensor_shape());
  switch (dtype) {
    case DT_FLOAT:
      t->add_float_val(static_cast<float>(value));
      break;
    case DT_DOUBLE:
      t->add_double_val(value);
      break;
    case DT_INT32:
      t->add_int_val(static_cast<int32_t>(value));
      break;
    case DT_INT64:
      t->add_int64_val(static_cast<int64_t>(value));
      break;
    case DT_BOOL:
      t->add_bool_val(value != 0);
      break;
    default:
      scope.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
          "cannot make a constant of dtype ", DataTypeString(dtype), " from a number")));
      return Output();
  }
  AttrValue type;
  type.set_type(dtype);
  return FirstOutput(
      NodeBuilder(scope, "Const").Attr("value", proto).Attr("dtype", type).Finalize());
}

}  // namespace ops
}  // namespace overseer

#ifndef OVERSEER_CLIENT_GRAPH_OPS_INPUT_H_
#define OVERSEER_CLIENT_GRAPH_OPS_INPUT_H_

// Input: what an op function accepts for a tensor argument, either an Output of the
// graph or a constant value (a Tensor, a scalar, a {list} or a {{matrix}}), which
// becomes a Const node when used. Const builds such nodes directly.
//
//   ops::Add(scope, x, 1.0f);                 // a float scalar Const
//   ops::Const(scope, {{1.0, 2.0}, {3.0, 4.0}});  // a 2x2 double matrix

#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "client/graph/graph.h"
#include "core/tensor.h"
#include "core/types.h"

namespace overseer {

class Scope;

namespace internal {
template <typename T>
struct IsConstElement
    : std::integral_constant<bool,
                             std::is_same<T, float>::value || std::is_same<T, double>::value ||
                                 std::is_same<T, int32_t>::value ||
                                 std::is_same<T, int64_t>::value || std::is_same<T, bool>::value> {
};
}  // namespace internal

// A value type; cheap to copy (tensors share buffers).
class Input {
 public:
  Input(const Output& output) : output_(output) {}                // NOLINT: implicit by design.
  Input(const Tensor& value) : value_(value), is_value_(true) {}  // NOLINT
  template <typename T, typename = std::enable_if_t<internal::IsConstElement<T>::value>>
  Input(T scalar) : value_(Tensor::Scalar<T>(scalar)), is_value_(true) {}  // NOLINT
  Input(const char* s)                                                     // NOLINT
      : value_(Tensor::Scalar<std::string>(s)), is_value_(true) {}
  Input(const std::string& s)  // NOLINT
      : value_(Tensor::Scalar<std::string>(s)), is_value_(true) {}
  template <typename T,
            typename = std::enable_if_t<internal::IsConstElement<T>::value>>
  Input(std::initializer_list<T> values)  // NOLINT
      : value_(Tensor::FromVector(std::vector<T>(values))), is_value_(true) {}
  // A matrix; rows of different lengths leave the Input invalid (status()).
  template <typename T,
            typename = std::enable_if_t<internal::IsConstElement<T>::value>>
  Input(std::initializer_list<std::initializer_list<T>> rows);  // NOLINT

  bool is_value() const { return is_value_; }
  const Output& output() const { return output_; }
  const Tensor& value() const { return value_; }
  const absl::Status& status() const { return status_; }

  // The tensor this Input stands for: output(), or a new Const named "Const" in
  // `scope`'s name scope. A null Output on error (recorded in the scope).
  Output ToOutput(const Scope& scope) const;

 private:
  Output output_;
  Tensor value_;
  bool is_value_ = false;
  absl::Status status_;
};

// A list of tensors for list args (AddN, Pack, ConcatV2).
using InputList = std::vector<Input>;

template <typename T, typename>
Input::Input(std::initializer_list<std::initializer_list<T>> rows) : is_value_(true) {
  std::vector<T> values;
  const int64_t cols = rows.size() == 0 ? 0 : static_cast<int64_t>(rows.begin()->size());
  for (const auto& row : rows) {
    if (static_cast<int64_t>(row.size()) != cols) {
      status_ = absl::InvalidArgumentError("matrix initializer rows differ in length");
      return;
    }
    values.insert(values.end(), row.begin(), row.end());
  }
  value_ = Tensor::FromVector(values, TensorShape({static_cast<int64_t>(rows.size()), cols}));
}

namespace ops {

// A Const node holding `value` (any supported dtype).
Output Const(const Scope& scope, const Input& value);
// A Const scalar of `dtype` (float, double, int32, int64) holding `value` converted.
Output ConstOfType(const Scope& scope, DataType dtype, double value);
// A Const of `dtype` and `shape` filled with `value`.
Output ConstFilled(const Scope& scope, DataType dtype, const TensorShape& shape, double value);

}  // namespace ops

// A tensor of `dtype` (float, double, int32, int64; bool is value != 0) and `shape`
// filled with `value`. INVALID_ARGUMENT for other dtypes.
absl::StatusOr<Tensor> FilledTensor(DataType dtype, const TensorShape& shape, double value);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPS_INPUT_H_

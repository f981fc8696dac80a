#ifndef OVERSEER_CORE_OP_REGISTRY_H_
#define OVERSEER_CORE_OP_REGISTRY_H_

// Op definitions: every op declares its inputs, outputs, attrs (with types and
// defaults) and a shape function. Ops are declared with TensorFlow's spec syntax:
//
//   REGISTER_OP("MatMul")
//       .Input("a: T")
//       .Input("b: T")
//       .Output("product: T")
//       .Attr("transpose_a: bool = false")
//       .Attr("transpose_b: bool = false")
//       .Attr("T: {float, double, int32, int64}")
//       .SetShapeFn(MatMulShape);
//
// Arg specs: "name: T" (type attr), "name: float" (fixed type), "name: Ref(T)",
// "name: N * T" (a list of N tensors of type T, N an int attr),
// "name: Tlist" (a list(type) attr).
// Attr specs: "name: type", "name: {float, int32}" (a type from the set),
// "name: int", "name: int >= 1", "name: float", "name: bool", "name: string",
// "name: shape", "name: tensor", "name: list(type)", "name: list(int)",
// "name: list(shape)", each optionally followed by "= default" (TensorFlow's text:
// false, 0, 1.5, 'text', DT_FLOAT or float, [] , [1, 2], {float, int32} sets).

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/attr_value.pb.h"
#include "proto/types.pb.h"

namespace overseer {

class ShapeContext;
using ShapeFn = std::function<absl::Status(ShapeContext* c)>;

struct ArgDef {
  std::string name;
  DataType type = DT_INVALID;  // Fixed type, or DT_INVALID when type_attr is set.
  std::string type_attr;       // "T"
  std::string number_attr;     // "N" for "N * T"
  std::string type_list_attr;  // "Tcomponents"
  bool is_ref = false;
};

struct AttrDef {
  std::string name;
  std::string type;  // "type", "int", "float", "bool", "string", "shape", "tensor",
                     // "list(type)", "list(int)", "list(shape)", ...
  std::optional<AttrValue> default_value;
  std::vector<DataType> allowed_types;  // Empty: any supported type.
  std::optional<int64_t> minimum;       // For "int >= k" and list lengths.
};

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  // Stateful ops (variables, queues, random) are never merged or cached by value, and
  // one kernel instance serves every step of a session.
  bool is_stateful = false;
  ShapeFn shape_fn;

  const AttrDef* FindAttr(const std::string& attr_name) const;
};

// Builds an OpDef from spec strings; see the file comment. Errors in a spec are
// programmer errors and abort at registration.
class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string op_name);
  OpDefBuilder& Input(const std::string& spec);
  OpDefBuilder& Output(const std::string& spec);
  OpDefBuilder& Attr(const std::string& spec);
  OpDefBuilder& SetIsStateful();
  OpDefBuilder& SetShapeFn(ShapeFn fn);

  // Parses the specs. INVALID_ARGUMENT naming the op and the bad spec.
  absl::StatusOr<OpDef> Build() const;

 private:
  std::string name_;
  std::vector<std::string> inputs_, outputs_, attrs_;
  bool stateful_ = false;
  ShapeFn shape_fn_;
};

// The process-wide table of ops. Thread-safe.
class OpRegistry {
 public:
  static OpRegistry* Global();

  // ALREADY_EXISTS if the name is taken.
  absl::Status Register(OpDef def);
  // nullptr if unknown.
  const OpDef* Find(const std::string& op_name) const;
  // NOT_FOUND "unknown op 'Foo'" listing nothing else.
  absl::StatusOr<const OpDef*> Lookup(const std::string& op_name) const;
  std::vector<std::string> OpNames() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<OpDef>> ops_ ABSL_GUARDED_BY(mu_);
};

namespace internal {
struct OpRegistrar {
  OpRegistrar(const OpDefBuilder& builder);  // NOLINT: implicit by design.
};
}  // namespace internal

#define REGISTER_OP(name) REGISTER_OP_UNIQ_HELPER(__COUNTER__, name)
#define REGISTER_OP_UNIQ_HELPER(ctr, name) REGISTER_OP_UNIQ(ctr, name)
#define REGISTER_OP_UNIQ(ctr, name)                                                              \
  static ::overseer::internal::OpRegistrar overseer_op_registrar_##ctr __attribute__((unused)) = \
      ::overseer::OpDefBuilder(name)

}  // namespace overseer

#endif  // OVERSEER_CORE_OP_REGISTRY_H_

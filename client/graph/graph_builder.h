#ifndef OVERSEER_CLIENT_GRAPH_GRAPH_BUILDER_H_
#define OVERSEER_CLIENT_GRAPH_GRAPH_BUILDER_H_

// NodeBuilder: adds one node through a Scope. Inputs are given per op input arg (one
// tensor, or a list for "N * T" and list(type) args); type attrs ("T", "N",
// "Tcomponents") left unset are inferred from the inputs, as TensorFlow's builder does.
// The scope supplies the name, device, control dependencies and colocation.
//
//   Operation op = NodeBuilder(scope, "MatMul").Input(a).Input(b)
//                      .Attr("transpose_a", true).Finalize();

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"
#include "core/node_def_util.h"
#include "proto/attr_value.pb.h"

namespace overseer {

// Not thread-safe; build one node per NodeBuilder.
class NodeBuilder {
 public:
  // `op` is the op type; the node is named after `default_name` (the op when empty)
  // unless the scope has an op name.
  NodeBuilder(const Scope& scope, absl::string_view op, absl::string_view default_name = "");

  // One tensor for the next input arg. Constants (Input from a value) become Const
  // nodes in the scope.
  NodeBuilder& Input(const ::overseer::Input& input);
  // A list of tensors for the next input arg ("N * T" or list(type)).
  NodeBuilder& Input(const InputList& inputs);
  NodeBuilder& ControlInput(const Operation& op);

  template <typename T>
  NodeBuilder& Attr(absl::string_view name, const T& value) {
    SetNodeAttr(&def_, name, value);
    return *this;
  }
  NodeBuilder& Attr(absl::string_view name, const AttrValue& value);
  NodeBuilder& Attr(absl::string_view name, const std::vector<std::string>& value);
  NodeBuilder& Attr(absl::string_view name, const std::vector<int32_t>& value);

  // Adds the node. If the scope's graph already holds an error, or this node is
  // invalid (unknown op, bad attrs, dtype mismatch, null or foreign input, shape
  // error), records the error (naming the node) in the graph and returns a null
  // Operation.
  Operation Finalize();

 private:
  struct Arg {
    std::vector<Output> tensors;
    bool is_list = false;
  };

  Scope scope_;
  NodeDef def_;
  std::string default_name_;
  std::vector<Arg> args_;
  std::vector<Operation> control_inputs_;
  absl::Status error_;
};

// Output 0 of `op`, or a null Output when `op` is null.
inline Output FirstOutput(const Operation& op) { return op.valid() ? op.output(0) : Output(); }

// Every output of `op` (empty when `op` is null).
std::vector<Output> AllOutputs(const Operation& op);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_GRAPH_BUILDER_H_

#ifndef OVERSEER_CLIENT_GRAPH_SCOPE_H_
#define OVERSEER_CLIENT_GRAPH_SCOPE_H_

// Scope: where the graph-building API puts the next node. It names the graph, the name
// scope ("layer1/"), the op name for the next node, the device, the control
// dependencies and the colocation of the nodes built through it. A value type: every
// With*/New* method returns a new Scope and leaves this one unchanged.
//
// Errors of the API (unknown op, bad attrs, dtype mismatch, shape-function errors) are
// recorded in the graph; status() returns the first one, and every builder called on a
// scope whose graph holds an error adds nothing and returns a null Output/Operation
// (TensorFlow's C++ API behaves the same way).
//
//   Scope root = Scope::NewRootScope();
//   Scope layer = root.NewSubScope("layer1");          // names "layer1/..."
//   Output y = ops::MatMul(layer.WithOpName("mm"), x, w);  // "layer1/mm"
//   if (!root.ok()) ...

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "client/graph/graph.h"
#include "proto/graph.pb.h"

namespace overseer {

// Thread-compatible: a Scope value may be copied and used from several threads when
// its graph is (ClientGraph is thread-safe).
class Scope {
 public:
  // A root scope owning a new, empty graph.
  static Scope NewRootScope();
  // A root scope over `graph`, which must outlive every scope made from it.
  static Scope RootScopeFor(ClientGraph* graph);

  // The next node built through the returned scope is called `name` (made unique, and
  // prefixed with the name scope). Empty: the op's default name.
  Scope WithOpName(absl::string_view name) const;
  // The next node is called exactly `full_name`: no name-scope prefix, no uniquing
  // (adding it fails if a node of that name exists). For nodes named after a name
  // scope, as TensorFlow names a variable "w" inside its name scope "w/".
  Scope WithExactOpName(absl::string_view full_name) const;
  // A child name scope: nodes are named "<scope>/<name>/<node>". `name` is made unique
  // among the graph's names ("a", then "a_1"). An empty name returns this scope with
  // no op name.
  Scope NewSubScope(absl::string_view name) const;
  // The name scope `absolute` exactly (no uniquing; "" is the root name scope), with
  // the other settings kept. Used to put nodes next to another node ("w/Adam").
  Scope WithNameScope(absl::string_view absolute) const;
  // Nodes request `device` (a full or partial device name; "" clears it).
  Scope WithDevice(absl::string_view device) const;
  // TensorFlow's tf.device(function): each node's device is `fn` of its NodeDef (op,
  // attrs, and the device WithDevice requests, as `device`), for every node built
  // through the scope except those colocated with another (ColocateWith), which keep
  // that node's device. E.g. ReplicaDeviceSetter::DeviceFunction. nullptr clears it.
  using DeviceFunction = std::function<std::string(const NodeDef& node)>;
  Scope WithDeviceFunction(DeviceFunction fn) const;
  // Nodes run after `deps` (added to those already in effect).
  Scope WithControlDependencies(const std::vector<Operation>& deps) const;
  Scope WithControlDependencies(const Output& dep) const;
  // Nodes have no control dependencies from the scope.
  Scope WithNoControlDependencies() const;
  // Nodes are placed with `op` (its device and a "_class" = "loc:@name" attr).
  Scope ColocateWith(const Operation& op) const;
  Scope ColocateWith(const Output& output) const { return ColocateWith(Operation(output.node())); }
  Scope ClearColocation() const;

  ClientGraph* graph() const { return graph_.get(); }
  std::shared_ptr<ClientGraph> graph_as_shared_ptr() const { return graph_; }

  // The first error recorded in the graph, or OK.
  absl::Status status() const { return graph_->status(); }
  bool ok() const { return status().ok(); }
  // Records `status` in the graph if it is an error and the first one.
  void UpdateStatus(const absl::Status& status) const { graph_->RecordError(status); }
  // The graph as a GraphDef; the first recorded error instead if there is one.
  absl::Status ToGraphDef(GraphDef* out) const { return graph_->ToGraphDef(out); }

  // The name for a node of the next op: the op name if set, else `default_name`,
  // prefixed with the name scope and made unique. Marks it used.
  std::string GetUniqueNameForOp(absl::string_view default_name) const;

  // "" at the root, else "a/b" (no trailing slash).
  const std::string& name_scope() const { return name_scope_; }
  const std::string& op_name() const { return op_name_; }
  const std::string& device() const { return device_; }
  const DeviceFunction& device_function() const { return device_function_; }
  const std::vector<Operation>& control_deps() const { return control_deps_; }
  // The node to colocate with, or null.
  const Operation& colocate_with() const { return colocate_with_; }

 private:
  explicit Scope(std::shared_ptr<ClientGraph> graph) : graph_(std::move(graph)) {}

  std::shared_ptr<ClientGraph> graph_;
  std::string name_scope_;
  std::string op_name_;
  bool exact_op_name_ = false;
  std::string device_;
  DeviceFunction device_function_;
  std::vector<Operation> control_deps_;
  Operation colocate_with_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_SCOPE_H_

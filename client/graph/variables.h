#ifndef OVERSEER_CLIENT_GRAPH_VARIABLES_H_
#define OVERSEER_CLIENT_GRAPH_VARIABLES_H_

// Variables as TensorFlow's Python API makes them: a VariableV2 node "w", its
// initializer "w/Assign" from an initial value, a snapshot "w/read", membership of the
// "variables" (and "trainable_variables") collections; the initializer ops, the
// uninitialized-variables report and the global step.
//
//   Variable w = MakeVariable(root.WithOpName("w"), GlorotUniformInitializer({784, 10}, 1));
//   Output y = ops::MatMul(root, x, w.value);
//   Operation init = GlobalVariablesInitializer(root);

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"

namespace overseer {

// Handles to a variable's nodes. A value type; invalid (!valid()) when creation failed.
struct Variable {
  Output ref;             // The VariableV2 output (a ref): what Assign/Apply* take.
  Output value;           // The snapshot "w/read": what computations read.
  Operation initializer;  // "w/Assign".
  Output initial_value;
  bool trainable = true;

  bool valid() const { return ref.valid(); }
  // The VariableV2 node's name ("w"). Precondition: valid().
  const std::string& name() const { return ref.node()->name(); }
  DataType dtype() const { return RemoveRefType(ref.dtype()); }
  const PartialShape& shape() const { return ref.shape(); }
};

// Builds the initial value inside the variable's name scope ("w/Initializer").
using InitializerFn = std::function<Output(const Scope& scope)>;

struct VariableOptions {
  bool trainable = true;
  // The collections the variable joins, as TensorFlow's `collections`: by default the
  // global one; {GraphKeys::kLocalVariables} makes a local variable (make it not
  // trainable too, as TensorFlow's local_variable does), {} a variable of no
  // collection. A trainable variable also joins "trainable_variables".
  std::vector<std::string> collections = {GraphKeys::kGlobalVariables};
};

// Creates a variable named after the scope's op name ("Variable" by default, made
// unique) with `initial_value` (a value becomes the Const "w/initial_value"). The
// variable's shape and dtype are the initial value's. The scope's control
// dependencies do not apply to the variable's nodes. Errors are recorded in the scope
// and give an invalid Variable.
Variable MakeVariable(const Scope& scope, const Input& initial_value,
                      const VariableOptions& options = {});
Variable MakeVariable(const Scope& scope, const InitializerFn& initializer,
                      const VariableOptions& options = {});

// The Variable of a variable node made by MakeVariable; NOT_FOUND otherwise.
absl::StatusOr<Variable> LookupVariable(const ClientGraph& graph, absl::string_view var_node);
// The variables of the "variables" / "trainable_variables" / "local_variables"
// collections, in order.
std::vector<Variable> GlobalVariables(const ClientGraph& graph);
std::vector<Variable> TrainableVariables(const ClientGraph& graph);
std::vector<Variable> LocalVariables(const ClientGraph& graph);

// A NoOp (named "init" unless the scope has an op name) that runs every initializer of
// `vars`.
Operation VariablesInitializer(const Scope& scope, const std::vector<Variable>& vars);
// VariablesInitializer of GlobalVariables, and of LocalVariables.
Operation GlobalVariablesInitializer(const Scope& scope);
Operation LocalVariablesInitializer(const Scope& scope);

// A string vector of the names of the variables of `vars` (default: every global and
// local variable, as TensorFlow's) that are not initialized, each checked next to its
// variable.
Output ReportUninitializedVariables(const Scope& scope, const std::vector<Variable>& vars);
Output ReportUninitializedVariables(const Scope& scope);

// The global step: an int64 scalar variable "global_step" (not trainable) in the
// "global_step" collection, starting at 0.
// ALREADY_EXISTS if the graph has one; errors of the scope otherwise.
absl::StatusOr<Variable> CreateGlobalStep(const Scope& scope);
// NOT_FOUND if the graph has none.
absl::StatusOr<Variable> GetGlobalStep(const ClientGraph& graph);
absl::StatusOr<Variable> GetOrCreateGlobalStep(const Scope& scope);
// The value of a global step tensor as fetched: an int32 or int64 scalar;
// INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> StepValue(const Tensor& t);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_VARIABLES_H_

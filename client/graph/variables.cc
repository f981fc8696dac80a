#include "client/graph/variables.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_state.h"
#include "core/status_macros.h"

namespace overseer {

namespace {

Variable BuildVariable(const Scope& scope,
                       const std::function<Output(const Scope&)>& make_initial_value,
                       const VariableOptions& options) {
  if (!scope.ok()) return Variable();
  const std::string base = scope.op_name().empty() ? "Variable" : scope.op_name();
  // The name scope "w/" holds the variable's helpers; the variable itself is "w".
  const Scope var_scope = scope.WithNoControlDependencies().NewSubScope(base);
  const std::string name = var_scope.name_scope();
  Variable v;
  v.trainable = options.trainable;
  v.initial_value = make_initial_value(var_scope);
  if (!v.initial_value.valid()) return Variable();
  const PartialShape shape = v.initial_value.shape();
  v.ref = ops::VariableV2(var_scope.WithExactOpName(name), shape,
                          RemoveRefType(v.initial_value.dtype()));
  if (!v.ref.valid()) return Variable();
  const Scope with_var = var_scope.ColocateWith(v.ref);
  v.initializer = Operation(ops::Assign(with_var.WithOpName("Assign"), v.ref, v.initial_value,
                                        /*validate_shape=*/shape.IsFullyDefined())
                                .node());
  v.value = ops::Identity(with_var.WithOpName("read"), v.ref);
  if (!v.initializer.valid() || !v.value.valid()) return Variable();
  ClientGraph* graph = scope.graph();
  graph->AddVariableRecord(
      {name, v.initializer.name(), v.initial_value.name(), v.value.name(), options.trainable});
  for (const std::string& key : options.collections) graph->AddToCollection(key, name);
  if (options.trainable && std::find(options.collections.begin(), options.collections.end(),
                                     GraphKeys::kTrainableVariables) == options.collections.end()) {
    graph->AddToCollection(GraphKeys::kTrainableVariables, name);
  }
  return v;
}

std::vector<Variable> FromCollection(const ClientGraph& graph, const std::string& key) {
  std::vector<Variable> vars;
  for (const std::string& name : graph.GetCollection(key)) {
    absl::StatusOr<Variable> v = LookupVariable(graph, name);
    if (v.ok()) vars.push_back(*v);
  }
  return vars;
}

}  // namespace

Variable MakeVariable(const Scope& scope, const Input& initial_value,
                      const VariableOptions& options) {
  return BuildVariable(
      scope,
      [&](const Scope& s) {
        if (initial_value.is_value()) {
          return ops::Const(s.WithOpName("initial_value"), initial_value);
        }
        return initial_value.ToOutput(s);
      },
      options);
}

Variable MakeVariable(const Scope& scope, const InitializerFn& initializer,
                      const VariableOptions& options) {
  return BuildVariable(
      scope, [&](const Scope& s) { return initializer(s.NewSubScope("Initializer")); }, options);
}

absl::StatusOr<Variable> LookupVariable(const ClientGraph& graph, absl::string_view var_node) {
  std::optional<VariableRecord> r = graph.FindVariableRecord(var_node);
  if (!r.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("'", var_node, "' is not a variable made by MakeVariable"));
  }
  Variable v;
  ASSIGN_OR_RETURN(v.ref, graph.FindOutput(r->var_node));
  ASSIGN_OR_RETURN(v.value, graph.FindOutput(r->snapshot));
  ASSIGN_OR_RETURN(v.initial_value, graph.FindOutput(r->initial_value));
  ASSIGN_OR_RETURN(Output init, graph.FindOutput(r->initializer_node));
  v.initializer = Operation(init.node());
  v.trainable = r->trainable;
  return v;
}

std::vector<Variable> GlobalVariables(const ClientGraph& graph) {
  return FromCollection(graph, GraphKeys::kGlobalVariables);
}

std::vector<Variable> TrainableVariables(const ClientGraph& graph) {
  return FromCollection(graph, GraphKeys::kTrainableVariables);
}

std::vector<Variable> LocalVariables(const ClientGraph& graph) {
  return FromCollection(graph, GraphKeys::kLocalVariables);
}

Operation VariablesInitializer(const Scope& scope, const std::vector<Variable>& vars) {
  std::vector<Operation> inits;
  for (const Variable& v : vars) inits.push_back(v.initializer);
  const Scope s = scope.op_name().empty() ? scope.WithOpName("init") : scope;
  return ops::Group(s, inits);
}

Operation GlobalVariablesInitializer(const Scope& scope) {
  return VariablesInitializer(scope, GlobalVariables(*scope.graph()));
}

Operation LocalVariablesInitializer(const Scope& scope) {
  return VariablesInitializer(scope, LocalVariables(*scope.graph()));
}

Output ReportUninitializedVariables(const Scope& scope, const std::vector<Variable>& vars) {
  const Scope s = scope.NewSubScope(scope.op_name().empty() ? "report_uninitialized_variables"
                                                            : scope.op_name());
  if (vars.empty()) {
    return ops::Const(s.WithOpName("Const"), Tensor(DT_STRING, TensorShape({0})));
  }
  InputList flags;
  std::vector<std::string> names;
  for (const Variable& v : vars) {
    if (!v.valid()) {
      s.UpdateStatus(absl::InvalidArgumentError(
          "ReportUninitializedVariables: an invalid Variable was given"));
      return Output();
    }
    flags.push_back(ops::IsVariableInitialized(s.ColocateWith(v.ref), v.ref));
    names.push_back(v.name());
  }
  return ops::ReportUninitializedVariables(s.WithOpName("ReportUninitializedVariables"), flags,
                                           names);
}

Output ReportUninitializedVariables(const Scope& scope) {
  std::vector<Variable> vars = GlobalVariables(*scope.graph());
  for (const Variable& v : LocalVariables(*scope.graph())) {
    const bool global = std::any_of(vars.begin(), vars.end(),
                                    [&](const Variable& g) { return g.name() == v.name(); });
    if (!global) vars.push_back(v);
  }
  return ReportUninitializedVariables(scope, vars);
}

absl::StatusOr<Variable> CreateGlobalStep(const Scope& scope) {
  if (GetGlobalStep(*scope.graph()).ok()) {
    return absl::AlreadyExistsError("the graph already has a global step");
  }
  VariableOptions options;
  options.trainable = false;
  options.collections = {GraphKeys::kGlobalVariables, GraphKeys::kGlobalStep};
  Variable v =
      MakeVariable(scope.WithNameScope("").WithOpName("global_step"), Input(int64_t{0}), options);
  RETURN_IF_ERROR(scope.status());
  return v;
}

absl::StatusOr<Variable> GetGlobalStep(const ClientGraph& graph) {
  std::vector<std::string> steps = graph.GetCollection(GraphKeys::kGlobalStep);
  if (steps.size() > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("the graph has ", steps.size(), " global steps"));
  }
  if (steps.empty()) return absl::NotFoundError("the graph has no global step");
  return LookupVariable(graph, steps[0]);
}

absl::StatusOr<Variable> GetOrCreateGlobalStep(const Scope& scope) {
  absl::StatusOr<Variable> step = GetGlobalStep(*scope.graph());
  if (step.ok() || step.status().code() != absl::StatusCode::kNotFound) return step;
  return CreateGlobalStep(scope);
}

absl::StatusOr<int64_t> StepValue(const Tensor& t) {
  if (t.NumElements() == 1 && t.dtype() == DT_INT64) return t.data<int64_t>()[0];
  if (t.NumElements() == 1 && t.dtype() == DT_INT32) return t.data<int32_t>()[0];
  return absl::InvalidArgumentError(
      absl::StrCat("the global step must be an int32 or int64 scalar, not ",
                   DataTypeString(t.dtype()), " ", t.shape().DebugString()));
}

}  // namespace overseer

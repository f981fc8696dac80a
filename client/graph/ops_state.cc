#include "client/graph/ops_state.h"

#include "client/graph/graph_builder.h"

namespace overseer {
namespace ops {

Output VariableV2(const Scope& scope, const PartialShape& shape, DataType dtype,
                  const std::string& container, const std::string& shared_name) {
  return FirstOutput(NodeBuilder(scope, "VariableV2", "Variable")
                         .Attr("shape", shape)
                         .Attr("dtype", dtype)
                         .Attr("container", container)
                         .Attr("shared_name", shared_name)
                         .Finalize());
}

Output Assign(const Scope& scope, Input ref, Input value, bool validate_shape, bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "Assign")
                         .Input(ref)
                         .Input(value)
                         .Attr("validate_shape", validate_shape)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

namespace {

Output Scatter(const Scope& scope, const char* op, Input ref, Input indices, Input updates,
               bool use_locking) {
  return FirstOutput(NodeBuilder(scope, op)
                         .Input(ref)
                         .Input(indices)
                         .Input(updates)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

}  // namespace

Output ScatterUpdate(const Scope& scope, Input ref, Input indices, Input updates,
                     bool use_locking) {
  return Scatter(scope, "ScatterUpdate", ref, indices, updates, use_locking);
}

Output ScatterAdd(const Scope& scope, Input ref, Input indices, Input updates, bool use_locking) {
  return Scatter(scope, "ScatterAdd", ref, indices, updates, use_locking);
}

Output ScatterSub(const Scope& scope, Input ref, Input indices, Input updates, bool use_locking) {
  return Scatter(scope, "ScatterSub", ref, indices, updates, use_locking);
}

Output AssignAdd(const Scope& scope, Input ref, Input value, bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "AssignAdd")
                         .Input(ref)
                         .Input(value)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

Output CountUpTo(const Scope& scope, Input ref, int64_t limit) {
  return FirstOutput(NodeBuilder(scope, "CountUpTo").Input(ref).Attr("limit", limit).Finalize());
}

Output AssignSub(const Scope& scope, Input ref, Input value, bool use_locking) {
  return FirstOutput(NodeBuilder(scope, "AssignSub")
                         .Input(ref)
                         .Input(value)
                         .Attr("use_locking", use_locking)
                         .Finalize());
}

Output AssignMul(const Scope& scope, Input ref, Input value) {
  return FirstOutput(NodeBuilder(scope, "AssignMul").Input(ref).Input(value).Finalize());
}

Output IsVariableInitialized(const Scope& scope, Input ref) {
  Output r = ref.ToOutput(scope);
  if (!r.valid()) return Output();
  return FirstOutput(NodeBuilder(scope, "IsVariableInitialized")
                         .Input(r)
                         .Attr("dtype", RemoveRefType(r.dtype()))
                         .Finalize());
}

Output ReportUninitializedVariables(const Scope& scope, const InputList& is_initialized,
                                    const std::vector<std::string>& var_names) {
  return FirstOutput(NodeBuilder(scope, "ReportUninitializedVariables")
                         .Input(is_initialized)
                         .Attr("var_names", var_names)
                         .Finalize());
}

}  // namespace ops
}  // namespace overseer

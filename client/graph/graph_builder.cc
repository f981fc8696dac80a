#include "client/graph/graph_builder.h"

#include "absl/strings/str_cat.h"
#include "core/types.h"

namespace overseer {

NodeBuilder::NodeBuilder(const Scope& scope, absl::string_view op, absl::string_view default_name)
    : scope_(scope), default_name_(default_name.empty() ? op : default_name) {
  def_.set_op(std::string(op));
}

NodeBuilder& NodeBuilder::Input(const ::overseer::Input& input) {
  Arg arg;
  arg.tensors.push_back(input.ToOutput(scope_));
  args_.push_back(std::move(arg));
  return *this;
}

NodeBuilder& NodeBuilder::Input(const InputList& inputs) {
  Arg arg;
  arg.is_list = true;
  for (const ::overseer::Input& in : inputs) arg.tensors.push_back(in.ToOutput(scope_));
  args_.push_back(std::move(arg));
  return *this;
}

NodeBuilder& NodeBuilder::ControlInput(const Operation& op) {
  control_inputs_.push_back(op);
  return *this;
}

NodeBuilder& NodeBuilder::Attr(absl::string_view name, const AttrValue& value) {
  (*def_.mutable_attr())[std::string(name)] = value;
  return *this;
}

NodeBuilder& NodeBuilder::Attr(absl::string_view name, const std::vector<std::string>& value) {
  AttrValue v;
  auto* list = v.mutable_list();
  for (const std::string& s : value) list->add_s(s);
  return Attr(name, v);
}

NodeBuilder& NodeBuilder::Attr(absl::string_view name, const std::vector<int32_t>& value) {
  return Attr(name, std::vector<int64_t>(value.begin(), value.end()));
}

Operation NodeBuilder::Finalize() {
  if (!scope_.ok()) return Operation();
  def_.set_name(scope_.GetUniqueNameForOp(default_name_));
  auto fail = [&](absl::string_view message) {
    scope_.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("node '", def_.name(), "' (op '", def_.op(), "'): ", message)));
    return Operation();
  };
  // A constant input may have failed to convert; that error is recorded already.
  if (!scope_.ok()) return Operation();
  ClientGraph* graph = scope_.graph();
  for (size_t a = 0; a < args_.size(); ++a) {
    for (size_t k = 0; k < args_[a].tensors.size(); ++k) {
      const Output& t = args_[a].tensors[k];
      if (!t.valid()) {
        return fail(absl::StrCat("input ", a,
                                 " is a null Output (no tensor: an earlier "
                                 "error, or no gradient)"));
      }
      if (t.node()->graph() != graph) {
        return fail(absl::StrCat("input '", t.name(), "' belongs to another graph"));
      }
    }
  }
  if (const OpDef* op = OpRegistry::Global()->Find(def_.op()); op != nullptr) {
    if (op->inputs.size() != args_.size()) {
      return fail(absl::StrCat("the op has ", op->inputs.size(), " input args but ", args_.size(),
                               " were given"));
    }
    auto& attrs = *def_.mutable_attr();
    for (size_t a = 0; a < args_.size(); ++a) {
      const ArgDef& arg = op->inputs[a];
      const std::vector<Output>& ts = args_[a].tensors;
      if (!arg.number_attr.empty() && attrs.count(arg.number_attr) == 0) {
        SetNodeAttr(&def_, arg.number_attr, static_cast<int64_t>(ts.size()));
      }
      if (!arg.type_attr.empty() && attrs.count(arg.type_attr) == 0 && !ts.empty()) {
        SetNodeAttr(&def_, arg.type_attr, RemoveRefType(ts[0].dtype()));
      }
      if (!arg.type_list_attr.empty() && attrs.count(arg.type_list_attr) == 0) {
        std::vector<DataType> types;
        for (const Output& t : ts) types.push_back(RemoveRefType(t.dtype()));
        SetNodeAttr(&def_, arg.type_list_attr, types);
      }
    }
  }
  for (const Arg& arg : args_) {
    for (const Output& t : arg.tensors) def_.add_input(t.name());
  }
  std::vector<Operation> deps = scope_.control_deps();
  deps.insert(deps.end(), control_inputs_.begin(), control_inputs_.end());
  for (const Operation& dep : deps) {
    if (!dep.valid()) return fail("a control input is a null Operation");
    if (dep.node()->graph() != graph) {
      return fail(absl::StrCat("control input '", dep.name(), "' belongs to another graph"));
    }
    def_.add_input(absl::StrCat("^", dep.name()));
  }
  def_.set_device(scope_.device());
  if (scope_.device_function() && !scope_.colocate_with().valid()) {
    def_.set_device(scope_.device_function()(def_));
  }
  if (scope_.colocate_with().valid()) {
    AttrValue v;
    v.mutable_list()->add_s(absl::StrCat("loc:@", scope_.colocate_with().name()));
    (*def_.mutable_attr())["_class"] = v;
  }
  absl::StatusOr<Node*> node = graph->AddNode(def_);
  if (!node.ok()) {
    scope_.UpdateStatus(node.status());
    return Operation();
  }
  return Operation(*node);
}

std::vector<Output> AllOutputs(const Operation& op) {
  std::vector<Output> outs;
  if (!op.valid()) return outs;
  for (int i = 0; i < op.num_outputs(); ++i) outs.push_back(op.output(i));
  return outs;
}

}  // namespace overseer

#include "client/graph/scope.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace overseer {

namespace {
std::string Join(const std::string& prefix, absl::string_view name) {
  return prefix.empty() ? std::string(name) : absl::StrCat(prefix, "/", name);
}
}  // namespace

Scope Scope::NewRootScope() { return Scope(std::make_shared<ClientGraph>()); }

Scope Scope::RootScopeFor(ClientGraph* graph) {
  // Borrowed: the deleter does nothing.
  return Scope(std::shared_ptr<ClientGraph>(graph, [](ClientGraph*) {}));
}

Scope Scope::WithOpName(absl::string_view name) const {
  Scope s = *this;
  s.op_name_ = std::string(name);
  s.exact_op_name_ = false;
  return s;
}

Scope Scope::WithExactOpName(absl::string_view full_name) const {
  Scope s = *this;
  s.op_name_ = std::string(full_name);
  s.exact_op_name_ = true;
  return s;
}

Scope Scope::NewSubScope(absl::string_view name) const {
  Scope s = *this;
  s.op_name_.clear();
  s.exact_op_name_ = false;
  if (name.empty()) return s;
  s.name_scope_ = graph_->UniqueName(Join(name_scope_, name));
  return s;
}

Scope Scope::WithNameScope(absl::string_view absolute) const {
  Scope s = *this;
  s.op_name_.clear();
  s.exact_op_name_ = false;
  s.name_scope_ = std::string(absolute);
  while (!s.name_scope_.empty() && s.name_scope_.back() == '/') s.name_scope_.pop_back();
  return s;
}

Scope Scope::WithDevice(absl::string_view device) const {
  Scope s = *this;
  s.device_ = std::string(device);
  return s;
}

Scope Scope::WithDeviceFunction(DeviceFunction fn) const {
  Scope s = *this;
  s.device_function_ = std::move(fn);
  return s;
}

Scope Scope::WithControlDependencies(const std::vector<Operation>& deps) const {
  Scope s = *this;
  for (const Operation& op : deps) {
    if (op.valid()) s.control_deps_.push_back(op);
  }
  return s;
}

Scope Scope::WithControlDependencies(const Output& dep) const {
  return WithControlDependencies({Operation(dep.node())});
}

Scope Scope::WithNoControlDependencies() const {
  Scope s = *this;
  s.control_deps_.clear();
  return s;
}

Scope Scope::ColocateWith(const Operation& op) const {
  Scope s = *this;
  s.colocate_with_ = op;
  if (op.valid()) s.device_ = op.node()->def().device();
  return s;
}

Scope Scope::ClearColocation() const {
  Scope s = *this;
  s.colocate_with_ = Operation();
  return s;
}

std::string Scope::GetUniqueNameForOp(absl::string_view default_name) const {
  if (exact_op_name_ && !op_name_.empty()) return op_name_;
  const absl::string_view base = op_name_.empty() ? default_name : op_name_;
  return graph_->UniqueName(Join(name_scope_, base));
}

}  // namespace overseer

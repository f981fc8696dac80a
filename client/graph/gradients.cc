#include "client/graph/gradients.h"

#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_math.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {

namespace {

struct RegistryTable {
  absl::Mutex mu;
  std::map<std::string, GradFunc> fns ABSL_GUARDED_BY(mu);
};

RegistryTable* Table() {
  static RegistryTable* table = new RegistryTable();
  return table;
}

}  // namespace

GradientRegistry* GradientRegistry::Global() {
  static GradientRegistry* registry = new GradientRegistry();
  return registry;
}

absl::Status GradientRegistry::Register(const std::string& op, GradFunc fn) {
  RegistryTable* t = Table();
  absl::MutexLock lock(&t->mu);
  if (!t->fns.emplace(op, std::move(fn)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("a gradient for op '", op, "' is already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<GradFunc> GradientRegistry::Lookup(const std::string& op) const {
  RegistryTable* t = Table();
  absl::MutexLock lock(&t->mu);
  auto it = t->fns.find(op);
  if (it == t->fns.end()) {
    return absl::NotFoundError(absl::StrCat("no gradient is registered for op '", op, "'"));
  }
  return it->second;
}

namespace internal {
GradientRegistrar::GradientRegistrar(const char* op, GradFunc fn) {
  absl::Status s = GradientRegistry::Global()->Register(op, std::move(fn));
  CHECK(s.ok()) << s;
}
}  // namespace internal

namespace {

// Builds the gradient nodes of one AddSymbolicGradients call.
class SymbolicGradientBuilder {
 public:
  SymbolicGradientBuilder(const Scope& scope, const std::vector<Output>& outputs,
                          const std::vector<Output>& inputs, const std::vector<Output>& grad_inputs)
      : scope_(scope), outputs_(outputs), inputs_(inputs), grad_inputs_(grad_inputs) {}

  absl::Status Run(std::vector<Output>* grad_outputs);

 private:
  absl::Status Validate() const;
  // The nodes on a data path from an input to an output.
  void FindBetweenNodes();
  Output SumGradients(const Scope& scope, std::vector<Output>* grads);
  absl::Status Backprop(Node* node, const std::vector<Output>& out_grads,
                        std::vector<Output>* in_grads);

  const Scope scope_;
  const std::vector<Output>& outputs_;
  const std::vector<Output>& inputs_;
  const std::vector<Output>& grad_inputs_;
  std::unordered_set<Node*> between_;
  std::unordered_map<Node*, int> pending_;
};

absl::Status SymbolicGradientBuilder::Validate() const {
  RETURN_IF_ERROR(scope_.status());
  ClientGraph* graph = scope_.graph();
  auto check = [&](const Output& t, const char* what, size_t i) -> absl::Status {
    if (!t.valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("AddSymbolicGradients: ", what, " ", i, " is a null Output"));
    }
    if (t.node()->graph() != graph) {
      return absl::InvalidArgumentError(absl::StrCat("AddSymbolicGradients: ", what, " '", t.name(),
                                                     "' belongs to another graph"));
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < outputs_.size(); ++i) RETURN_IF_ERROR(check(outputs_[i], "output", i));
  for (size_t i = 0; i < inputs_.size(); ++i) RETURN_IF_ERROR(check(inputs_[i], "input", i));
  if (!grad_inputs_.empty()) {
    if (grad_inputs_.size() != outputs_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("AddSymbolicGradients: ", grad_inputs_.size(),
                                                     " grad_inputs for ", outputs_.size(),
                                                     " outputs"));
    }
    for (size_t i = 0; i < grad_inputs_.size(); ++i) {
      RETURN_IF_ERROR(check(grad_inputs_[i], "grad_input", i));
      if (RemoveRefType(grad_inputs_[i].dtype()) != RemoveRefType(outputs_[i].dtype())) {
        return absl::InvalidArgumentError(
            absl::StrCat("AddSymbolicGradients: grad_input '", grad_inputs_[i].name(),
                         "' has dtype ", DataTypeString(grad_inputs_[i].dtype()), " but output '",
                         outputs_[i].name(), "' has dtype ", DataTypeString(outputs_[i].dtype())));
      }
    }
  }
  return absl::OkStatus();
}

void SymbolicGradientBuilder::FindBetweenNodes() {
  ClientGraph* graph = scope_.graph();
  const int n = graph->num_nodes();
  std::unordered_map<Node*, std::vector<Node*>> consumers;
  for (int i = 0; i < n; ++i) {
    Node* node = graph->node(i);
    for (const Output& in : node->inputs()) consumers[in.node()].push_back(node);
  }
  std::unordered_set<Node*> forward;
  std::deque<Node*> queue;
  for (const Output& in : inputs_) {
    if (forward.insert(in.node()).second) queue.push_back(in.node());
  }
  while (!queue.empty()) {
    Node* node = queue.front();
    queue.pop_front();
    for (Node* c : consumers[node]) {
      if (forward.insert(c).second) queue.push_back(c);
    }
  }
  std::unordered_set<Node*> backward;
  for (const Output& out : outputs_) {
    if (backward.insert(out.node()).second) queue.push_back(out.node());
  }
  while (!queue.empty()) {
    Node* node = queue.front();
    queue.pop_front();
    for (const Output& in : node->inputs()) {
      if (backward.insert(in.node()).second) queue.push_back(in.node());
    }
  }
  for (Node* node : backward) {
    if (forward.count(node) > 0) between_.insert(node);
  }
  for (Node* node : between_) {
    for (const Output& in : node->inputs()) {
      if (between_.count(in.node()) > 0) ++pending_[in.node()];
    }
  }
}

Output SymbolicGradientBuilder::SumGradients(const Scope& scope, std::vector<Output>* grads) {
  if (grads->empty()) return Output();
  if (grads->size() == 1) return (*grads)[0];
  InputList list(grads->begin(), grads->end());
  return ops::AddN(scope, list);
}

absl::Status SymbolicGradientBuilder::Backprop(Node* node, const std::vector<Output>& out_grads,
                                               std::vector<Output>* in_grads) {
  in_grads->assign(node->num_inputs(), Output());
  bool any_grad = false;
  for (const Output& g : out_grads) any_grad |= g.valid();
  bool feeds_between = false;
  for (const Output& in : node->inputs()) feeds_between |= between_.count(in.node()) > 0;
  if (!any_grad || !feeds_between) return absl::OkStatus();
  absl::StatusOr<GradFunc> fn = GradientRegistry::Global()->Lookup(node->op());
  if (!fn.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no gradient is registered for op '", node->op(), "' (node '", node->name(),
                     "'), which is on a path from the inputs to the outputs; wrap the input in "
                     "StopGradient if none is needed"));
  }
  if (!*fn) return absl::OkStatus();  // Registered as having no gradient.
  std::vector<Output> result;
  const Scope op_scope = scope_.NewSubScope(absl::StrCat(node->name(), "_grad"));
  RETURN_IF_ERROR((*fn)(op_scope, Operation(node), out_grads, &result));
  RETURN_IF_ERROR(scope_.status());
  if (static_cast<int>(result.size()) != node->num_inputs()) {
    return absl::InternalError(
        absl::StrCat("the gradient function of op '", node->op(), "' returned ", result.size(),
                     " gradients for ", node->num_inputs(), " inputs (node '", node->name(), "')"));
  }
  *in_grads = std::move(result);
  return absl::OkStatus();
}

absl::Status SymbolicGradientBuilder::Run(std::vector<Output>* grad_outputs) {
  RETURN_IF_ERROR(Validate());
  FindBetweenNodes();
  // grads[node][k]: the gradients received by output k of node.
  std::unordered_map<Node*, std::vector<std::vector<Output>>> grads;
  auto slot = [&](const Output& t) -> std::vector<Output>& {
    auto& per_node = grads[t.node()];
    if (per_node.empty()) per_node.resize(t.node()->num_outputs());
    return per_node[t.index()];
  };
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (between_.count(outputs_[i].node()) == 0) continue;
    Output g = grad_inputs_.empty() ? ops::OnesLike(scope_, outputs_[i]) : grad_inputs_[i];
    RETURN_IF_ERROR(scope_.status());
    slot(outputs_[i]).push_back(g);
  }
  std::deque<Node*> ready;
  for (Node* node : between_) {
    if (pending_[node] == 0) ready.push_back(node);
  }
  std::unordered_map<Node*, std::vector<Output>> summed;
  while (!ready.empty()) {
    Node* node = ready.front();
    ready.pop_front();
    std::vector<Output> out_grads(node->num_outputs());
    for (int k = 0; k < node->num_outputs(); ++k) {
      out_grads[k] = SumGradients(scope_, &slot(Output(node, k)));
    }
    RETURN_IF_ERROR(scope_.status());
    std::vector<Output> in_grads;
    RETURN_IF_ERROR(Backprop(node, out_grads, &in_grads));
    summed[node] = std::move(out_grads);
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Output& in = node->input(i);
      if (between_.count(in.node()) == 0) continue;
      if (in_grads[i].valid()) slot(in).push_back(in_grads[i]);
      if (--pending_[in.node()] == 0) ready.push_back(in.node());
    }
  }
  grad_outputs->clear();
  for (const Output& in : inputs_) {
    auto it = summed.find(in.node());
    grad_outputs->push_back(it == summed.end() ? Output() : it->second[in.index()]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& outputs,
                                  const std::vector<Output>& inputs,
                                  const std::vector<Output>& grad_inputs,
                                  std::vector<Output>* grad_outputs) {
  if (!scope.ok()) return scope.status();
  SymbolicGradientBuilder builder(scope.NewSubScope("gradients"), outputs, inputs, grad_inputs);
  absl::Status s = builder.Run(grad_outputs);
  if (!s.ok()) grad_outputs->assign(inputs.size(), Output());
  return s;
}

absl::Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& outputs,
                                  const std::vector<Output>& inputs,
                                  std::vector<Output>* grad_outputs) {
  return AddSymbolicGradients(scope, outputs, inputs, {}, grad_outputs);
}

}  // namespace overseer

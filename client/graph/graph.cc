#include "client/graph/graph.h"

#include <atomic>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/node_def_util.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"
#include "core/version.h"

namespace overseer {

std::string Output::name() const { return absl::StrCat(node_->name(), ":", index_); }
DataType Output::dtype() const { return node_->output_type(index_); }
const PartialShape& Output::shape() const { return node_->output_shape(index_); }

const std::string& Operation::name() const { return node_->name(); }
int Operation::num_outputs() const { return node_->num_outputs(); }
int Operation::num_inputs() const { return node_->num_inputs(); }
Output Operation::input(int i) const { return node_->input(i); }

namespace {

std::atomic<uint64_t> next_graph_id{1};

absl::Status NodeError(const NodeDef& def, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", def.name(), "' (op '", def.op(), "'): ", message));
}

// The build-time value of a Shape or Size node whose input shape is fully defined.
std::optional<Tensor> FoldShapeOp(const NodeDef& def, const PartialShape& input,
                                  DataType out_type) {
  if (!input.IsFullyDefined()) return std::nullopt;
  if (def.op() == "Shape") {
    const auto& dims = input.dims();
    if (out_type == DT_INT32) {
      return Tensor::FromVector(std::vector<int32_t>(dims.begin(), dims.end()));
    }
    if (out_type == DT_INT64) return Tensor::FromVector(dims);
  } else if (def.op() == "Size") {
    const int64_t n = input.ToTensorShape().num_elements();
    if (out_type == DT_INT32) return Tensor::Scalar<int32_t>(static_cast<int32_t>(n));
    if (out_type == DT_INT64) return Tensor::Scalar<int64_t>(n);
  }
  return std::nullopt;
}

}  // namespace

ClientGraph::ClientGraph() : id_(next_graph_id.fetch_add(1)) {}

absl::Status ClientGraph::Validate(NodeDef* def, Node* node) const {
  if (def->name().empty()) return NodeError(*def, "a node needs a name");
  if (by_name_.count(def->name()) > 0) {
    return NodeError(*def, "a node of that name is already in the graph");
  }
  const OpDef* op = OpRegistry::Global()->Find(def->op());
  if (op == nullptr) return NodeError(*def, absl::StrCat("unknown op '", def->op(), "'"));
  RETURN_IF_ERROR(AddDefaultsAndValidateAttrs(*op, def));
  RETURN_IF_ERROR(InOutTypesForNode(*def, *op, &node->input_types_, &node->output_types_));
  bool seen_control = false;
  for (const std::string& input : def->input()) {
    absl::StatusOr<TensorId> id = ParseTensorName(input);
    if (!id.ok()) return NodeError(*def, id.status().message());
    auto it = by_name_.find(id->node);
    if (it == by_name_.end()) {
      return NodeError(*def, absl::StrCat("input '", input, "' is not a node of this graph"));
    }
    Node* src = it->second;
    if (id->IsControl()) {
      seen_control = true;
      node->control_inputs_.push_back(src);
      continue;
    }
    if (seen_control) {
      return NodeError(*def, "data inputs must come before control inputs");
    }
    if (id->index >= src->num_outputs()) {
      return NodeError(*def, absl::StrCat("input '", input, "': node '", src->name(), "' has only ",
                                          src->num_outputs(), " outputs"));
    }
    node->inputs_.emplace_back(src, id->index);
  }
  if (node->inputs_.size() != node->input_types_.size()) {
    return NodeError(*def, absl::StrCat("the op takes ", node->input_types_.size(), " inputs but ",
                                        node->inputs_.size(), " were given"));
  }
  for (size_t i = 0; i < node->inputs_.size(); ++i) {
    const DataType want = node->input_types_[i];
    const DataType got = node->inputs_[i].dtype();
    // A ref feeds a value input; a value cannot feed a ref input.
    const bool ok = IsRefType(want) ? got == want : RemoveRefType(got) == want;
    if (!ok) {
      return NodeError(
          *def, absl::StrCat("input ", i, " ('", node->inputs_[i].name(), "') has dtype ",
                             DataTypeString(got), " but the op expects ", DataTypeString(want)));
    }
  }
  std::vector<PartialShape> shapes;
  std::vector<const Tensor*> values;
  for (const Output& in : node->inputs_) {
    shapes.push_back(in.shape());
    values.push_back(in.index() == 0 ? in.node()->constant_value() : nullptr);
  }
  ASSIGN_OR_RETURN(node->output_shapes_, InferShapes(*def, *op, shapes, values));
  if (node->output_shapes_.size() != node->output_types_.size()) {
    node->output_shapes_.resize(node->output_types_.size());
  }
  node->op_def_ = op;
  if (def->op() == "Const") {
    Tensor value;
    RETURN_IF_ERROR(GetNodeAttr(*def, "value", &value));
    node->constant_value_ = value;
    node->output_shapes_[0] = PartialShape(value.shape());
  } else if ((def->op() == "Shape" || def->op() == "Size") && !node->inputs_.empty()) {
    node->constant_value_ = FoldShapeOp(*def, node->inputs_[0].shape(), node->output_types_[0]);
  }
  return absl::OkStatus();
}

absl::StatusOr<Node*> ClientGraph::AddNode(NodeDef def) {
  auto node = absl::WrapUnique(new Node());
  absl::MutexLock lock(&mu_);
  if (finalized_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Graph is finalized and cannot be modified: adding node '", def.name(), "' (op ", def.op(),
        ") after Finalize (a Scaffold or monitored session finalized it)"));
  }
  RETURN_IF_ERROR(Validate(&def, node.get()));
  node->graph_ = this;
  node->id_ = static_cast<int>(nodes_.size());
  node->def_ = std::move(def);
  Node* raw = node.get();
  nodes_.push_back(std::move(node));
  by_name_[raw->name()] = raw;
  MarkUsed(raw->name());
  return raw;
}

void ClientGraph::MarkUsed(const std::string& name) {
  int& count = names_in_use_[name];
  if (count == 0) count = 1;
}

std::string ClientGraph::UniqueName(absl::string_view base) {
  absl::MutexLock lock(&mu_);
  std::string name(base);
  int& count = names_in_use_[name];
  int i = count++;
  if (i == 0) return name;
  std::string candidate;
  do {
    candidate = absl::StrCat(base, "_", i++);
  } while (names_in_use_.count(candidate) > 0);
  names_in_use_[name] = i;
  names_in_use_[candidate] = 1;
  return candidate;
}

bool ClientGraph::IsNameUsed(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = names_in_use_.find(name);
  return it != names_in_use_.end() && it->second > 0;
}

Node* ClientGraph::FindNode(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

absl::StatusOr<Output> ClientGraph::FindOutput(absl::string_view tensor_name) const {
  absl::StatusOr<TensorId> id = ParseTensorName(tensor_name);
  if (!id.ok() || id->IsControl()) {
    return absl::NotFoundError(absl::StrCat("'", tensor_name, "' is not a tensor name"));
  }
  Node* node = FindNode(id->node);
  if (node == nullptr || id->index >= node->num_outputs()) {
    return absl::NotFoundError(absl::StrCat("no tensor '", tensor_name, "' in the graph"));
  }
  return Output(node, id->index);
}

int ClientGraph::num_nodes() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(nodes_.size());
}

Node* ClientGraph::node(int i) const {
  absl::MutexLock lock(&mu_);
  return nodes_[i].get();
}

absl::Status ClientGraph::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void ClientGraph::RecordError(const absl::Status& error) {
  absl::MutexLock lock(&mu_);
  if (status_.ok()) status_ = error;
}

absl::Status ClientGraph::ToGraphDef(GraphDef* out) const { return ToGraphDefFrom(0, out); }

absl::Status ClientGraph::ToGraphDefFrom(int first_node, GraphDef* out) const {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(status_);
  out->Clear();
  out->mutable_versions()->set_producer(kGraphDefProducer);
  for (size_t i = std::max(first_node, 0); i < nodes_.size(); ++i) {
    *out->add_node() = nodes_[i]->def();
  }
  return absl::OkStatus();
}

void ClientGraph::AddToCollection(const std::string& key, const std::string& value) {
  absl::MutexLock lock(&mu_);
  collections_[key].push_back(value);
}

std::vector<std::string> ClientGraph::GetCollection(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = collections_.find(key);
  return it == collections_.end() ? std::vector<std::string>() : it->second;
}

void ClientGraph::SetCollection(const std::string& key, std::vector<std::string> values) {
  absl::MutexLock lock(&mu_);
  if (values.empty()) {
    collections_.erase(key);
  } else {
    collections_[key] = std::move(values);
  }
}

std::vector<std::string> ClientGraph::CollectionKeys() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> keys;
  for (const auto& [key, values] : collections_) keys.push_back(key);
  return keys;
}

void ClientGraph::Finalize() {
  absl::MutexLock lock(&mu_);
  finalized_ = true;
}

bool ClientGraph::finalized() const {
  absl::MutexLock lock(&mu_);
  return finalized_;
}

void ClientGraph::Unfinalize() {
  absl::MutexLock lock(&mu_);
  finalized_ = false;
}

void ClientGraph::AddVariableRecord(VariableRecord record) {
  absl::MutexLock lock(&mu_);
  variables_.push_back(std::move(record));
}

std::vector<VariableRecord> ClientGraph::VariableRecords() const {
  absl::MutexLock lock(&mu_);
  return variables_;
}

std::optional<VariableRecord> ClientGraph::FindVariableRecord(absl::string_view var_node) const {
  absl::MutexLock lock(&mu_);
  for (const VariableRecord& r : variables_) {
    if (r.var_node == var_node) return r;
  }
  return std::nullopt;
}

}  // namespace overseer

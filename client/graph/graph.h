#ifndef OVERSEER_CLIENT_GRAPH_GRAPH_H_
#define OVERSEER_CLIENT_GRAPH_GRAPH_H_

// A graph being built on the client: nodes validated against the op registry as they
// are added, with their output dtypes and statically inferred shapes; named
// collections; the variables created in it. The graph-building API (scope.h, ops.h)
// adds nodes through NodeBuilder (graph_builder.h); ToGraphDef hands the result to a
// Session.

#include <any>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/op_registry.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"
#include "proto/graph.pb.h"
#include "proto/node_def.pb.h"

namespace overseer {

class ClientGraph;
class Node;

// Output `index` of a node: a tensor of the graph. A null Output (node() == nullptr)
// stands for "no tensor" (e.g. no gradient). A value type; cheap to copy.
class Output {
 public:
  Output() = default;
  Output(Node* node, int index) : node_(node), index_(index) {}

  bool valid() const { return node_ != nullptr; }
  Node* node() const { return node_; }
  int index() const { return index_; }
  // "node:k". Precondition: valid().
  std::string name() const;
  DataType dtype() const;
  // The shape inferred when the node was added (unknown rank when inference could not
  // tell).
  const PartialShape& shape() const;

  bool operator==(const Output& o) const { return node_ == o.node_ && index_ == o.index_; }
  bool operator!=(const Output& o) const { return !(*this == o); }
  bool operator<(const Output& o) const {
    return node_ != o.node_ ? node_ < o.node_ : index_ < o.index_;
  }

 private:
  Node* node_ = nullptr;
  int index_ = 0;
};

// A node viewed as something to run (a target) or to depend on. A value type; a null
// Operation (node() == nullptr) is returned by builders that failed.
class Operation {
 public:
  Operation() = default;
  explicit Operation(Node* node) : node_(node) {}

  bool valid() const { return node_ != nullptr; }
  Node* node() const { return node_; }
  // Preconditions below: valid().
  const std::string& name() const;
  int num_outputs() const;
  Output output(int i) const { return Output(node_, i); }
  int num_inputs() const;
  // The tensor feeding data input i.
  Output input(int i) const;

  bool operator==(const Operation& o) const { return node_ == o.node_; }

 private:
  Node* node_ = nullptr;
};

// A node of a ClientGraph. Immutable once added; owned by its ClientGraph (pointers
// stay valid for the graph's lifetime). Thread-safe to read.
class Node {
 public:
  const std::string& name() const { return def_.name(); }
  const std::string& op() const { return def_.op(); }
  const NodeDef& def() const { return def_; }
  const OpDef& op_def() const { return *op_def_; }
  ClientGraph* graph() const { return graph_; }
  // Position in the graph's order of addition (0, 1, ...).
  int id() const { return id_; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  Output input(int i) const { return inputs_[i]; }
  const std::vector<Output>& inputs() const { return inputs_; }
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }
  DataType input_type(int i) const { return input_types_[i]; }

  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType output_type(int i) const { return output_types_[i]; }
  const PartialShape& output_shape(int i) const { return output_shapes_[i]; }
  // The value of output 0 when it is known while building (a Const, or the Shape or
  // Size of a fully defined shape); nullptr otherwise.
  const Tensor* constant_value() const {
    return constant_value_.has_value() ? &*constant_value_ : nullptr;
  }

 private:
  friend class ClientGraph;
  Node() = default;

  ClientGraph* graph_ = nullptr;
  int id_ = 0;
  NodeDef def_;
  const OpDef* op_def_ = nullptr;
  std::vector<Output> inputs_;
  std::vector<Node*> control_inputs_;
  std::vector<DataType> input_types_;
  std::vector<DataType> output_types_;
  std::vector<PartialShape> output_shapes_;
  std::optional<Tensor> constant_value_;
};

// Collection keys used by the client library (TensorFlow's GraphKeys).
struct GraphKeys {
  static constexpr const char* kGlobalVariables = "variables";
  // Variables local to a trainer: not saved by default, initialised by the local init
  // op (TensorFlow's LOCAL_VARIABLES).
  static constexpr const char* kLocalVariables = "local_variables";
  static constexpr const char* kTrainableVariables = "trainable_variables";
  static constexpr const char* kSummaries = "summaries";
  static constexpr const char* kQueueRunners = "queue_runners";
  static constexpr const char* kGlobalStep = "global_step";
  // The pieces a Scaffold or Supervisor makes by default, kept for the next one
  // (TensorFlow's INIT_OP, READY_OP, ...): one node or tensor name each.
  static constexpr const char* kInitOp = "init_op";
  static constexpr const char* kReadyOp = "ready_op";
  static constexpr const char* kReadyForLocalInitOp = "ready_for_local_init_op";
  static constexpr const char* kLocalInitOp = "local_init_op";
  static constexpr const char* kSummaryOp = "summary_op";
};

// What the graph remembers about a variable created by the variables helper. Names are
// node names ("w", "w/Assign") or tensor names ("w/initial_value:0").
struct VariableRecord {
  std::string var_node;          // The VariableV2 node.
  std::string initializer_node;  // The Assign that initialises it.
  std::string initial_value;     // Tensor name of the initial value.
  std::string snapshot;          // Tensor name of its read ("w/read:0").
  bool trainable = true;
};

// A graph under construction (TensorFlow's tf.Graph; named ClientGraph to keep it
// apart from the runtime's index over a GraphDef, core/graph/graph.h). Thread-safe: nodes may be
// added from several threads (the API is usually driven from one) while a ClientSession reads it.
class ClientGraph {
 public:
  ClientGraph();
  ClientGraph(const ClientGraph&) = delete;
  ClientGraph& operator=(const ClientGraph&) = delete;

  // Unique in the process; tells graphs apart (a session refuses another's tensors).
  uint64_t id() const { return id_; }

  // Validates `def` and adds it: the op must be registered, attrs complete and typed
  // (defaults are added), every input an existing node's output of the dtype the op
  // wants ("node", "node:k", "^node" for control inputs), the name new. Output shapes
  // are inferred with the op's shape function from the inputs' shapes and constant
  // values. INVALID_ARGUMENT naming the node otherwise; the graph is unchanged then.
  // This does not record the error in status(); the builders do.
  absl::StatusOr<Node*> AddNode(NodeDef def);

  // A name not yet used by a node or name scope, TensorFlow style: "add", "add_1",
  // "add_2", ... Marks it used.
  std::string UniqueName(absl::string_view base);
  // Whether `name` is used by a node or a name scope.
  bool IsNameUsed(absl::string_view name) const;

  // The node called `name`, or nullptr.
  Node* FindNode(absl::string_view name) const;
  // Output "node:k" / "node"; NOT_FOUND if there is no such node or output.
  absl::StatusOr<Output> FindOutput(absl::string_view tensor_name) const;
  int num_nodes() const;
  // The node with id `i`. Precondition: 0 <= i < num_nodes().
  Node* node(int i) const;

  // The first error recorded by the graph-building API, or OK.
  absl::Status status() const;
  // Keeps `error` if it is the first (OK is ignored).
  void RecordError(const absl::Status& error);

  // The nodes as a GraphDef; status() if an error was recorded.
  absl::Status ToGraphDef(GraphDef* out) const;
  // The nodes with ids >= `first_node` (to extend a session with what is new).
  absl::Status ToGraphDefFrom(int first_node, GraphDef* out) const;

  // Named collections of strings: node names, tensor names or serialized protos, by
  // the convention of each key (GraphKeys). Order of addition is kept.
  void AddToCollection(const std::string& key, const std::string& value);
  std::vector<std::string> GetCollection(const std::string& key) const;
  // Replaces (or with an empty list removes) a collection.
  void SetCollection(const std::string& key, std::vector<std::string> values);
  std::vector<std::string> CollectionKeys() const;

  // Finalizes the graph (TensorFlow's Graph.finalize): from now on AddNode fails
  // FAILED_PRECONDITION "Graph is finalized and cannot be modified", so that nothing
  // adds nodes while monitored sessions run it (Scaffold::Finalize calls this).
  // Collections and attachments may still change. Idempotent.
  void Finalize();
  bool finalized() const;
  // Lifts Finalize (TensorFlow's _unsafe_unfinalize), for a MonitoredSession that
  // finalized a graph which was not finalized before it, when it closes.
  void Unfinalize();

  // Objects the client library keeps with the graph under `key` (TensorFlow keeps
  // Python objects such as the default Saver in collections): Get returns the one Set,
  // or null if there is none or it is not a T.
  template <typename T>
  void SetAttachment(const std::string& key, std::shared_ptr<T> value) {
    absl::MutexLock lock(&mu_);
    attachments_[key] = std::move(value);
  }
  template <typename T>
  std::shared_ptr<T> GetAttachment(const std::string& key) const {
    absl::MutexLock lock(&mu_);
    auto it = attachments_.find(key);
    if (it == attachments_.end()) return nullptr;
    const auto* value = std::any_cast<std::shared_ptr<T>>(&it->second);
    return value == nullptr ? nullptr : *value;
  }

  // The variables created by the variables helper, in creation order.
  void AddVariableRecord(VariableRecord record);
  std::vector<VariableRecord> VariableRecords() const;
  // The record of the VariableV2 node `var_node`, or nullptr-like empty optional.
  std::optional<VariableRecord> FindVariableRecord(absl::string_view var_node) const;

 private:
  absl::Status Validate(NodeDef* def, Node* node) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void MarkUsed(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t id_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Node>> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Node*, std::less<>> by_name_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int, std::less<>> names_in_use_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::string>> collections_ ABSL_GUARDED_BY(mu_);
  std::vector<VariableRecord> variables_ ABSL_GUARDED_BY(mu_);
  bool finalized_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::any> attachments_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_GRAPH_H_

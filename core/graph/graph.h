#ifndef OVERSEER_CORE_GRAPH_GRAPH_H_
#define OVERSEER_CORE_GRAPH_GRAPH_H_

// An index over a GraphDef: each node's op, dtypes, data and control inputs, its
// consumers, and a topological order. Built once per (validated or pruned) graph and
// then read by validation, pruning and the executor.

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/op_registry.h"
#include "proto/graph.pb.h"
#include "proto/node_def.pb.h"

namespace overseer {

// Output `index` of node `node` (node ids index Graph::node()).
struct Endpoint {
  int node = -1;
  int index = 0;
  bool operator==(const Endpoint& o) const { return node == o.node && index == o.index; }
};

// An edge leaving a node: data edges carry `src_output` >= 0 and `dst_input` >= 0;
// control edges have both -1.
struct OutEdge {
  int src_output = -1;
  int dst = -1;
  int dst_input = -1;
  bool IsControl() const { return dst_input < 0; }
};

struct GraphNode {
  int id = -1;
  const NodeDef* def = nullptr;        // Owned by the Graph.
  const OpDef* op = nullptr;           // Owned by the OpRegistry.
  std::vector<DataType> input_types;   // Refs as *_REF.
  std::vector<DataType> output_types;  // Refs as *_REF.
  std::vector<Endpoint> inputs;        // Data inputs, in order.
  std::vector<int> control_inputs;     // Node ids.
  std::vector<OutEdge> out_edges;      // Data edges first, then control edges.
  const std::string& name() const { return def->name(); }
};

// Immutable after Build; safe to read from any thread.
class Graph {
 public:
  // Indexes `def`. Every node's attrs must be complete (see AddDefaultsAndValidateAttrs;
  // ValidateGraph does it). INVALID_ARGUMENT naming the node for: an unknown op, a
  // duplicate name, a malformed input name, a control input before a data input, an
  // input naming a missing node or output, a wrong number of inputs, a dtype mismatch
  // between producer and consumer (a ref output may feed a non-ref input, never the
  // reverse), and a cycle (naming a node on it).
  static absl::StatusOr<std::unique_ptr<Graph>> Build(GraphDef def);

  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const GraphDef& def() const { return def_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const GraphNode& node(int id) const { return nodes_[id]; }
  // The id of the node named `name`, or -1.
  int FindNode(absl::string_view name) const;
  // Every node id, each after all of its data and control inputs.
  const std::vector<int>& topological_order() const { return topo_order_; }

 private:
  Graph() = default;
  absl::Status Index();
  absl::Status ConnectInputs(GraphNode* n);
  absl::Status Sort();

  GraphDef def_;
  std::vector<GraphNode> nodes_;
  absl::flat_hash_map<std::string, int> by_name_;
  std::vector<int> topo_order_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_GRAPH_GRAPH_H_

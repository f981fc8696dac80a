#include "core/graph/graph.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"
#include "core/types.h"

namespace overseer {
namespace {

absl::Status NodeError(const NodeDef& node, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("node '", node.name(), "': ", message));
}

// Whether a producer of `produced` may feed an input declared `wanted`.
bool TypesCompatible(DataType produced, DataType wanted) {
  if (produced == wanted) return true;
  return IsRefType(produced) && !IsRefType(wanted) && RemoveRefType(produced) == wanted;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> Graph::Build(GraphDef def) {
  std::unique_ptr<Graph> graph(new Graph());
  graph->def_ = std::move(def);
  RETURN_IF_ERROR(graph->Index());
  for (GraphNode& n : graph->nodes_) RETURN_IF_ERROR(graph->ConnectInputs(&n));
  RETURN_IF_ERROR(graph->Sort());
  return graph;
}

int Graph::FindNode(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

absl::Status Graph::Index() {
  const int n = def_.node_size();
  nodes_.resize(n);
  by_name_.reserve(n);
  for (int i = 0; i < n; ++i) {
    const NodeDef& nd = def_.node(i);
    if (nd.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node #", i, " (op '", nd.op(), "') has an empty name"));
    }
    if (!by_name_.emplace(nd.name(), i).second) {
      return NodeError(nd, "duplicate node name");
    }
    GraphNode& gn = nodes_[i];
    gn.id = i;
    gn.def = &nd;
    gn.op = OpRegistry::Global()->Find(nd.op());
    if (gn.op == nullptr) return NodeError(nd, absl::StrCat("unknown op '", nd.op(), "'"));
    absl::Status s = InOutTypesForNode(nd, *gn.op, &gn.input_types, &gn.output_types);
    if (!s.ok()) return NodeError(nd, s.message());
  }
  return absl::OkStatus();
}

absl::Status Graph::ConnectInputs(GraphNode* n) {
  const NodeDef& nd = *n->def;
  bool seen_control = false;
  for (int i = 0; i < nd.input_size(); ++i) {
    auto id = ParseTensorName(nd.input(i));
    if (!id.ok()) {
      return NodeError(nd, absl::StrCat("bad input '", nd.input(i), "': ", id.status().message()));
    }
    const int src = FindNode(id->node);
    if (src < 0) {
      return NodeError(nd, absl::StrCat("input '", nd.input(i), "' names node '", id->node,
                                        "', which is not in the graph"));
    }
    if (id->IsControl()) {
      seen_control = true;
      n->control_inputs.push_back(src);
      continue;
    }
    if (seen_control) {
      return NodeError(nd, absl::StrCat("data input '", nd.input(i),
                                        "' comes after a control input; control inputs "
                                        "must come last"));
    }
    const GraphNode& producer = nodes_[src];
    if (id->index >= static_cast<int>(producer.output_types.size())) {
      return NodeError(
          nd, absl::StrCat("input '", nd.input(i), "' names output ", id->index, " of node '",
                           id->node, "', which has ", producer.output_types.size(), " outputs"));
    }
    n->inputs.push_back({src, id->index});
  }
  if (n->inputs.size() != n->input_types.size()) {
    return NodeError(nd, absl::StrCat("op '", nd.op(), "' takes ", n->input_types.size(),
                                      " data inputs but the node has ", n->inputs.size()));
  }
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    const Endpoint& e = n->inputs[i];
    const DataType produced = nodes_[e.node].output_types[e.index];
    const DataType wanted = n->input_types[i];
    if (!TypesCompatible(produced, wanted)) {
      std::string why =
          absl::StrCat("input ", i, " ('", nd.input(i), "') has dtype ", DataTypeString(produced),
                       " but op '", nd.op(), "' wants ", DataTypeString(wanted));
      if (IsRefType(wanted) && !IsRefType(produced)) {
        absl::StrAppend(&why, " (a reference, e.g. a variable)");
      }
      return NodeError(nd, why);
    }
    nodes_[e.node].out_edges.push_back({e.index, n->id, static_cast<int>(i)});
  }
  return absl::OkStatus();
}

absl::Status Graph::Sort() {
  // Control edges go after every data edge, so add them in a second pass.
  for (GraphNode& n : nodes_) {
    for (int src : n.control_inputs) nodes_[src].out_edges.push_back({-1, n.id, -1});
  }
  const int n = num_nodes();
  std::vector<int> pending(n);
  topo_order_.clear();
  topo_order_.reserve(n);
  for (int i = 0; i < n; ++i) {
    pending[i] = static_cast<int>(nodes_[i].inputs.size() + nodes_[i].control_inputs.size());
    if (pending[i] == 0) topo_order_.push_back(i);
  }
  for (size_t next = 0; next < topo_order_.size(); ++next) {
    for (const OutEdge& e : nodes_[topo_order_[next]].out_edges) {
      if (--pending[e.dst] == 0) topo_order_.push_back(e.dst);
    }
  }
  if (static_cast<int>(topo_order_.size()) == n) return absl::OkStatus();

  // Every node left has an input that is left too; walking back along such inputs
  // must revisit a node, which is then on a cycle.
  int at = 0;
  while (pending[at] == 0) ++at;
  std::vector<bool> visited(n, false);
  while (!visited[at]) {
    visited[at] = true;
    const GraphNode& g = nodes_[at];
    int back = -1;
    for (const Endpoint& e : g.inputs) {
      if (pending[e.node] > 0) back = e.node;
    }
    for (int c : g.control_inputs) {
      if (pending[c] > 0) back = c;
    }
    at = back;
  }
  return NodeError(*nodes_[at].def, "is part of a cycle; a graph must be acyclic");
}

}  // namespace overseer

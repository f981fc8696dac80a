#include "core/graph/prune.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/node_def_util.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"
#include "core/types.h"

namespace overseer {

REGISTER_OP(kFeedOp)
    .Output("output: T")
    .Attr("T: type")
    .Attr("index: int")
    .SetShapeFn(shape_fn::Unknown);

namespace {

struct EndpointHash {
  size_t operator()(const Endpoint& e) const {
    return std::hash<int64_t>()((static_cast<int64_t>(e.node) << 20) ^ e.index);
  }
};

std::string UniqueFeedName(const Graph& graph, int index) {
  std::string name = absl::StrCat("_feed/", index);
  while (graph.FindNode(name) >= 0) name += "_";
  return name;
}

}  // namespace

absl::StatusOr<Endpoint> ResolveTensor(const Graph& graph, const std::string& name,
                                       absl::string_view what) {
  auto id = ParseTensorName(name);
  if (!id.ok() || id->IsControl()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", name, "' is not a tensor name (\"node:k\" or \"node\")"));
  }
  const int node = graph.FindNode(id->node);
  if (node < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", name, "': no node named '", id->node, "' in the graph"));
  }
  const int outputs = static_cast<int>(graph.node(node).output_types.size());
  if (id->index >= outputs) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", name, "': node '", id->node, "' has ", outputs, " outputs"));
  }
  return Endpoint{node, id->index};
}

absl::StatusOr<PrunedGraph> PruneGraph(const Graph& graph, const std::vector<std::string>& feeds,
                                       const std::vector<std::string>& fetches,
                                       const std::vector<std::string>& targets) {
  // Fed endpoint -> feed index.
  absl::flat_hash_map<Endpoint, int, EndpointHash> fed;
  std::vector<Endpoint> feed_sources;
  for (size_t i = 0; i < feeds.size(); ++i) {
    ASSIGN_OR_RETURN(Endpoint e, ResolveTensor(graph, feeds[i], "feed"));
    if (!fed.emplace(e, static_cast<int>(i)).second) {
      return absl::InvalidArgumentError(absl::StrCat("feed '", feeds[i], "' is fed twice"));
    }
    feed_sources.push_back(e);
  }

  // Walk back from the fetches and targets.
  std::vector<bool> needed(graph.num_nodes(), false);
  std::vector<int> stack;
  auto need = [&](int node) {
    if (!needed[node]) {
      needed[node] = true;
      stack.push_back(node);
    }
  };
  std::vector<Endpoint> fetch_sources;
  for (const std::string& f : fetches) {
    ASSIGN_OR_RETURN(Endpoint e, ResolveTensor(graph, f, "fetch"));
    fetch_sources.push_back(e);
    if (!fed.contains(e)) need(e.node);
  }
  std::vector<int> target_sources;
  for (const std::string& t : targets) {
    const int node = graph.FindNode(t);
    if (node < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", t, "': no node named '", t, "' in the graph"));
    }
    target_sources.push_back(node);
    need(node);
  }
  while (!stack.empty()) {
    const GraphNode& n = graph.node(stack.back());
    stack.pop_back();
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!fed.contains(n.inputs[i])) {
        need(n.inputs[i].node);
      } else if (IsRefType(n.input_types[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", n.name(), "' takes input ", i, " ('", n.def->input(i),
                         "') as a reference, so that tensor cannot be fed"));
      }
    }
    for (int c : n.control_inputs) need(c);
  }

  // Build the pruned GraphDef: feed nodes first, then the kept nodes in order.
  GraphDef out;
  *out.mutable_versions() = graph.def().versions();
  std::vector<std::string> feed_names;
  for (size_t i = 0; i < feeds.size(); ++i) {
    const Endpoint& e = feed_sources[i];
    NodeDef* node = out.add_node();
    node->set_name(UniqueFeedName(graph, static_cast<int>(i)));
    node->set_op(kFeedOp);
    SetNodeAttr(node, "T", RemoveRefType(graph.node(e.node).output_types[e.index]));
    SetNodeAttr(node, "index", static_cast<int64_t>(i));
    feed_names.push_back(node->name());
  }
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!needed[id]) continue;
    const GraphNode& n = graph.node(id);
    NodeDef* node = out.add_node();
    *node = *n.def;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto it = fed.find(n.inputs[i]);
      if (it != fed.end()) node->set_input(static_cast<int>(i), feed_names[it->second]);
    }
  }

  PrunedGraph result;
  ASSIGN_OR_RETURN(result.graph, Graph::Build(std::move(out)));
  const Graph& g = *result.graph;
  for (const std::string& name : feed_names) result.feed_nodes.push_back(g.FindNode(name));
  for (const Endpoint& e : fetch_sources) {
    auto it = fed.find(e);
    if (it != fed.end()) {
      result.fetches.push_back({result.feed_nodes[it->second], 0});
    } else {
      result.fetches.push_back({g.FindNode(graph.node(e.node).name()), e.index});
    }
  }
  for (int t : target_sources) result.targets.push_back(g.FindNode(graph.node(t).name()));
  return result;
}

}  // namespace overseer

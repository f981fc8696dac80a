#ifndef OVERSEER_CORE_GRAPH_PRUNE_H_
#define OVERSEER_CORE_GRAPH_PRUNE_H_

// Pruning a graph to what one step needs: the nodes that the fetches and targets
// depend on, with fed tensors taken as given.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace overseer {

// The op of the nodes that PruneGraph puts in place of fed tensors (attrs: "T", the
// dtype, and "index", the feed's position). It has no kernel: an executor sets the
// node's only output to the value fed for it.
inline constexpr char kFeedOp[] = "_Feed";

// One step's graph. Ids index `graph`.
struct PrunedGraph {
  std::unique_ptr<Graph> graph;
  std::vector<int> feed_nodes;    // The kFeedOp node of feeds[i].
  std::vector<Endpoint> fetches;  // Where fetches[i] is read (a feed node if fed).
  std::vector<int> targets;       // The node of targets[i].
};

// Keeps only the nodes that `fetches` ("node:k" or "node") and `targets` (node names)
// need, following data and control inputs. Every fed tensor (`feeds`, "node:k") is
// replaced by a kFeedOp node, and its producer is kept only if something else needs
// it. INVALID_ARGUMENT naming the tensor or node for: a malformed name, a node not in
// `graph`, an output index out of range, a tensor fed twice, and a fed tensor that a
// kept node takes as a reference (variables cannot be fed to their updaters).
absl::StatusOr<PrunedGraph> PruneGraph(const Graph& graph, const std::vector<std::string>& feeds,
                                       const std::vector<std::string>& fetches,
                                       const std::vector<std::string>& targets);

// Resolves a tensor name ("node:k" or "node") against `graph`. INVALID_ARGUMENT
// naming `what` ("fetch", "feed") and the tensor otherwise.
absl::StatusOr<Endpoint> ResolveTensor(const Graph& graph, const std::string& name,
                                       absl::string_view what);

}  // namespace overseer

#endif  // OVERSEER_CORE_GRAPH_PRUNE_H_

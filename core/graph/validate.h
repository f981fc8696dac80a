#ifndef OVERSEER_CORE_GRAPH_VALIDATE_H_
#define OVERSEER_CORE_GRAPH_VALIDATE_H_

// Graph validation: what Session::Create and Extend check before accepting a graph.

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/tensor_shape.h"
#include "proto/graph.pb.h"

namespace overseer {

// Checks `graph` and adds each node's attr defaults in place. INVALID_ARGUMENT naming
// the node for: an unknown op ("node 'x': unknown op 'Foo'"), a missing or ill-typed
// attr, a wrong number of inputs, a dtype mismatch between producer and consumer, an
// input naming a missing node, a duplicate name, a control input before a data input,
// a cycle, or a shape error found by running every op's shape function in topological
// order (with the values of Const inputs). On error `graph` may have gained defaults.
absl::Status ValidateGraph(GraphDef* graph);

// A validated graph and the shapes inferred for every node's outputs.
struct ValidatedGraph {
  std::unique_ptr<Graph> graph;
  std::vector<std::vector<PartialShape>> output_shapes;  // By node id, then output.
};

// ValidateGraph, keeping the index and the inferred shapes.
absl::StatusOr<ValidatedGraph> ValidateAndIndexGraph(GraphDef graph);

}  // namespace overseer

#endif  // OVERSEER_CORE_GRAPH_VALIDATE_H_

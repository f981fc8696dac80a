#include "core/graph/validate.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/node_def_util.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"
#include "core/tensor.h"

namespace overseer {
namespace {

absl::Status AddDefaults(GraphDef* graph) {
  for (NodeDef& node : *graph->mutable_node()) {
    const OpDef* op = OpRegistry::Global()->Find(node.op());
    if (op == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name(), "': unknown op '", node.op(), "'"));
    }
    RETURN_IF_ERROR(AddDefaultsAndValidateAttrs(*op, &node));
  }
  return absl::OkStatus();
}

absl::Status InferAllShapes(const Graph& graph, std::vector<std::vector<PartialShape>>* shapes) {
  shapes->assign(graph.num_nodes(), {});
  // Values of Const nodes, parsed when a consumer first needs them.
  std::vector<std::unique_ptr<Tensor>> constants(graph.num_nodes());
  std::vector<PartialShape> in_shapes;
  std::vector<const Tensor*> in_tensors;
  for (int id : graph.topological_order()) {
    const GraphNode& n = graph.node(id);
    in_shapes.clear();
    in_tensors.clear();
    for (const Endpoint& e : n.inputs) {
      in_shapes.push_back((*shapes)[e.node][e.index]);
      const GraphNode& src = graph.node(e.node);
      const Tensor* value = nullptr;
      if (src.def->op() == "Const") {
        if (constants[e.node] == nullptr) {
          Tensor t;
          if (GetNodeAttr(*src.def, "value", &t).ok()) {
            constants[e.node] = std::make_unique<Tensor>(std::move(t));
          }
        }
        value = constants[e.node].get();
      }
      in_tensors.push_back(value);
    }
    ASSIGN_OR_RETURN((*shapes)[id], InferShapes(*n.def, *n.op, in_shapes, in_tensors));
    (*shapes)[id].resize(n.output_types.size());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ValidatedGraph> ValidateAndIndexGraph(GraphDef graph) {
  RETURN_IF_ERROR(AddDefaults(&graph));
  ValidatedGraph out;
  ASSIGN_OR_RETURN(out.graph, Graph::Build(std::move(graph)));
  RETURN_IF_ERROR(InferAllShapes(*out.graph, &out.output_shapes));
  return out;
}

absl::Status ValidateGraph(GraphDef* graph) {
  RETURN_IF_ERROR(AddDefaults(graph));
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> indexed, Graph::Build(*graph));
  std::vector<std::vector<PartialShape>> shapes;
  return InferAllShapes(*indexed, &shapes);
}

}  // namespace overseer

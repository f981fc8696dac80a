#ifndef OVERSEER_MASTER_PLACEMENT_TEST_UTIL_H_
#define OVERSEER_MASTER_PLACEMENT_TEST_UTIL_H_

// Small GraphDef builders for the placer and partitioner tests.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/node_def_util.h"
#include "core/tensor.h"
#include "proto/graph.pb.h"

namespace overseer {
namespace test {

inline NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op,
                        std::vector<std::string> inputs, const std::string& device = "") {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  n->set_device(device);
  for (auto& i : inputs) n->add_input(i);
  return n;
}

inline NodeDef* AddConst(GraphDef* g, const std::string& name, float v,
                         const std::string& device = "") {
  NodeDef* n = AddNode(g, name, "Const", {}, device);
  SetNodeAttr(n, "dtype", DT_FLOAT);
  SetNodeAttr(n, "value", Tensor::Scalar<float>(v));
  return n;
}

inline NodeDef* AddVariable(GraphDef* g, const std::string& name, const std::string& device = "") {
  NodeDef* n = AddNode(g, name, "VariableV2", {}, device);
  SetNodeAttr(n, "dtype", DT_FLOAT);
  SetNodeAttr(n, "shape", TensorShape({}));
  return n;
}

inline NodeDef* AddBinary(GraphDef* g, const std::string& name, const std::string& op,
                          const std::string& a, const std::string& b,
                          const std::string& device = "") {
  NodeDef* n = AddNode(g, name, op, {a, b}, device);
  SetNodeAttr(n, "T", DT_FLOAT);
  return n;
}

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_MASTER_PLACEMENT_TEST_UTIL_H_

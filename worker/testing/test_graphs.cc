#include "worker/testing/test_graphs.h"

#include "core/node_def_util.h"
#include "core/tensor_shape.h"

namespace overseer {
namespace test {
namespace {

void SetEdgeAttrs(NodeDef* n, DataType dtype, const std::string& tensor_name,
                  const std::string& send_device, uint64_t incarnation,
                  const std::string& recv_device, bool client_terminated) {
  SetNodeAttr(n, "T", dtype);
  SetNodeAttr(n, "tensor_name", tensor_name);
  SetNodeAttr(n, "send_device", send_device);
  SetNodeAttr(n, "send_device_incarnation", static_cast<int64_t>(incarnation));
  SetNodeAttr(n, "recv_device", recv_device);
  SetNodeAttr(n, "client_terminated", client_terminated);
}

}  // namespace

NodeDef* AddNode(GraphDef* graph, const std::string& name, const std::string& op,
                 const std::string& device, const std::vector<std::string>& inputs) {
  NodeDef* n = graph->add_node();
  n->set_name(name);
  n->set_op(op);
  n->set_device(device);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

NodeDef* AddConst(GraphDef* graph, const std::string& name, const Tensor& value,
                  const std::string& device) {
  NodeDef* n = AddNode(graph, name, "Const", device);
  SetNodeAttr(n, "dtype", value.dtype());
  SetNodeAttr(n, "value", value);
  return n;
}

void AddQueue(GraphDef* graph, const std::string& device) {
  for (const NodeDef& node : graph->node()) {
    if (node.name() == "q") return;
  }
  NodeDef* q = AddNode(graph, "q", "FIFOQueue", device);
  SetNodeAttr(q, "component_types", std::vector<DataType>{DT_FLOAT});
  SetNodeAttr(q, "shared_name", std::string("q"));
}

NodeDef* AddDequeue(GraphDef* graph, const std::string& name, const std::string& device,
                    int64_t timeout_ms) {
  AddQueue(graph, device);
  NodeDef* n = AddNode(graph, name, "QueueDequeue", device, {"q"});
  SetNodeAttr(n, "component_types", std::vector<DataType>{DT_FLOAT});
  SetNodeAttr(n, "timeout_ms", timeout_ms);
  return n;
}

NodeDef* AddEnqueue(GraphDef* graph, const std::string& name, const std::string& value,
                    const std::string& device) {
  AddQueue(graph, device);
  NodeDef* n = AddNode(graph, name, "QueueEnqueue", device, {"q", value});
  SetNodeAttr(n, "Tcomponents", std::vector<DataType>{DT_FLOAT});
  return n;
}

NodeDef* AddSend(GraphDef* graph, const std::string& name, const std::string& input, DataType dtype,
                 const std::string& tensor_name, const std::string& send_device,
                 uint64_t incarnation, const std::string& recv_device, bool client_terminated) {
  NodeDef* n = AddNode(graph, name, "_Send", send_device, {input});
  SetEdgeAttrs(n, dtype, tensor_name, send_device, incarnation, recv_device, client_terminated);
  return n;
}

NodeDef* AddRecv(GraphDef* graph, const std::string& name, DataType dtype,
                 const std::string& tensor_name, const std::string& send_device,
                 uint64_t incarnation, const std::string& recv_device, bool client_terminated) {
  NodeDef* n = AddNode(graph, name, "_Recv", recv_device);
  SetEdgeAttrs(n, dtype, tensor_name, send_device, incarnation, recv_device, client_terminated);
  return n;
}

void AddVariable(GraphDef* graph, const std::string& name, const std::string& device,
                 uint64_t incarnation, bool assign, bool read) {
  NodeDef* var = AddNode(graph, name, "VariableV2", device);
  SetNodeAttr(var, "dtype", DT_FLOAT);
  SetNodeAttr(var, "shape", TensorShape({2}));
  if (assign) {
    AddRecv(graph, name + "/value", DT_FLOAT, name + "_value", device, incarnation, device, true);
    NodeDef* a = AddNode(graph, name + "/assign", "Assign", device, {name, name + "/value"});
    SetNodeAttr(a, "T", DT_FLOAT);
  }
  if (read) {
    std::vector<std::string> inputs = {name};
    if (assign) inputs.push_back("^" + name + "/assign");
    NodeDef* id = AddNode(graph, name + "/read", "Identity", device, inputs);
    SetNodeAttr(id, "T", DT_FLOAT);
    AddSend(graph, name + "/fetch", name + "/read", DT_FLOAT, name + "_read", device, incarnation,
            device, true);
  }
}

}  // namespace test
}  // namespace overseer

#ifndef OVERSEER_WORKER_TESTING_TEST_GRAPHS_H_
#define OVERSEER_WORKER_TESTING_TEST_GRAPHS_H_

// Hand-built partitions for worker tests: what the master's partitioner would send.

#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "proto/graph.pb.h"

namespace overseer {
namespace test {

// Adds node `name` running `op` on `device` with data/control `inputs`.
NodeDef* AddNode(GraphDef* graph, const std::string& name, const std::string& op,
                 const std::string& device, const std::vector<std::string>& inputs = {});

// A Const holding `value`.
NodeDef* AddConst(GraphDef* graph, const std::string& name, const Tensor& value,
                  const std::string& device);

// A _Send (op "_Send") or _Recv of `dtype` for edge `tensor_name` from `send_device`
// (whose task runs `incarnation`) to `recv_device`. A _Send takes `input`.
NodeDef* AddSend(GraphDef* graph, const std::string& name, const std::string& input, DataType dtype,
                 const std::string& tensor_name, const std::string& send_device,
                 uint64_t incarnation, const std::string& recv_device,
                 bool client_terminated = false);
NodeDef* AddRecv(GraphDef* graph, const std::string& name, DataType dtype,
                 const std::string& tensor_name, const std::string& send_device,
                 uint64_t incarnation, const std::string& recv_device,
                 bool client_terminated = false);

// Node "q", unless the graph has it: a FIFOQueue of floats shared under the name "q", so
// that every graph of a session that adds it uses one queue.
void AddQueue(GraphDef* graph, const std::string& device);
// Node `name`, a QueueDequeue of "q" (with `timeout_ms`, -1: none) or a QueueEnqueue of
// node `value` into it, and "q" if needed.
NodeDef* AddDequeue(GraphDef* graph, const std::string& name, const std::string& device,
                    int64_t timeout_ms = -1);
NodeDef* AddEnqueue(GraphDef* graph, const std::string& name, const std::string& value,
                    const std::string& device);

// A float variable `name` of `shape` with an Assign "<name>/assign" from a fed
// client-terminated _Recv "<name>/value" (key tensor name "<name>_value") and a
// client-terminated _Send of its value "<name>/read" (key tensor name "<name>_read").
// Returns nothing; the keys are made with MakeRendezvousKey(device, incarnation,
// device, ...).
void AddVariable(GraphDef* graph, const std::string& name, const std::string& device,
                 uint64_t incarnation, bool assign, bool read);

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_WORKER_TESTING_TEST_GRAPHS_H_

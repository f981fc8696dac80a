#include "master/partitioner.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/cluster/device_name.h"
#include "core/cluster/rendezvous_key.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "core/types.h"

namespace overseer {
namespace {

// Builds the partitions; one instance per PartitionGraph call.
class Partitioner {
 public:
  Partitioner(const PrunedGraph& step, const std::vector<std::string>& devices,
              const PartitionOptions& options)
      : graph_(*step.graph), step_(step), devices_(devices), options_(options) {}

  absl::StatusOr<PartitionedGraph> Run();

 private:
  GraphDef& PartitionOf(const std::string& device) {
    GraphDef& g = out_.partitions[task_of_.at(device)];
    if (!g.has_versions()) *g.mutable_versions() = graph_.def().versions();
    return g;
  }
  std::string UniqueName(absl::string_view base) {
    std::string name(base);
    for (int i = 1; graph_.FindNode(name) >= 0 || !used_names_.insert(name).second; ++i) {
      name = absl::StrCat(base, "_", i);
    }
    return name;
  }
  NodeDef* AddSendRecv(const std::string& op, const std::string& on_device, DataType dtype,
                       const std::string& tensor_name, const std::string& send_device,
                       const std::string& recv_device, bool client_terminated,
                       const std::string& name_base);
  // Records the edge of a _Send/_Recv pair between tasks (PartitionedGraph::peer_edges).
  void AddPeerEdge(const std::string& send_device, const std::string& recv_device,
                   const std::string& tensor_name) {
    out_.peer_edges.push_back({task_of_.at(send_device), task_of_.at(recv_device),
                               MakeRendezvousKey(send_device, options_.incarnation(send_device),
                                                 recv_device, tensor_name)});
  }
  // The _Recv (in the consumer task) of output `src` sent towards `dst_device`.
  std::string CrossTaskInput(const Endpoint& src, const std::string& dst_device);
  // The _Recv (in the consumer task) that follows every node of `srcs` (ids in one
  // other task, sorted), for a consumer on `dst_device`: one pair for all of them.
  std::string CrossTaskControl(const std::vector<int>& srcs, const std::string& dst_device);

  const Graph& graph_;
  const PrunedGraph& step_;
  const std::vector<std::string>& devices_;
  const PartitionOptions& options_;
  PartitionedGraph out_;
  absl::flat_hash_map<std::string, std::string> task_of_;  // device -> task name.
  absl::flat_hash_set<std::string> used_names_;
  // (producer node, output, consumer task) -> _Recv node name.
  std::map<std::tuple<int, int, std::string>, std::string> recvs_;
  // (producer nodes of control edges, consumer task) -> _Recv node name.
  std::map<std::pair<std::vector<int>, std::string>, std::string> control_recvs_;
  int edge_counter_ = 0;
};

NodeDef* Partitioner::AddSendRecv(const std::string& op, const std::string& on_device,
                                  DataType dtype, const std::string& tensor_name,
                                  const std::string& send_device, const std::string& recv_device,
                                  bool client_terminated, const std::string& name_base) {
  NodeDef* n = PartitionOf(on_device).add_node();
  n->set_name(UniqueName(name_base));
  n->set_op(op);
  n->set_device(on_device);
  SetNodeAttr(n, "T", dtype);
  SetNodeAttr(n, "tensor_name", tensor_name);
  SetNodeAttr(n, "send_device", send_device);
  SetNodeAttr(n, "send_device_incarnation",
              static_cast<int64_t>(options_.incarnation(send_device)));
  SetNodeAttr(n, "recv_device", recv_device);
  SetNodeAttr(n, "client_terminated", client_terminated);
  return n;
}

std::string Partitioner::CrossTaskInput(const Endpoint& src, const std::string& dst_device) {
  const std::string& dst_task = task_of_.at(dst_device);
  auto key = std::make_tuple(src.node, src.index, dst_task);
  auto it = recvs_.find(key);
  if (it != recvs_.end()) return it->second;
  const GraphNode& p = graph_.node(src.node);
  const DataType dtype = RemoveRefType(p.output_types[src.index]);
  const std::string& src_device = devices_[src.node];
  const std::string tensor_name = absl::StrCat("edge_", edge_counter_++, "_", p.name());
  NodeDef* send = AddSendRecv(kSendOp, src_device, dtype, tensor_name, src_device, dst_device,
                              false, absl::StrCat("_send_", p.name(), "_", src.index));
  send->add_input(src.index == 0 ? p.name() : absl::StrCat(p.name(), ":", src.index));
  NodeDef* recv = AddSendRecv(kRecvOp, dst_device, dtype, tensor_name, src_device, dst_device,
                              false, absl::StrCat("_recv_", p.name(), "_", src.index));
  AddPeerEdge(src_device, dst_device, tensor_name);
  return recvs_[key] = recv->name();
}

std::string Partitioner::CrossTaskControl(const std::vector<int>& srcs,
                                          const std::string& dst_device) {
  auto key = std::make_pair(srcs, task_of_.at(dst_device));
  auto it = control_recvs_.find(key);
  if (it != control_recvs_.end()) return it->second;
  // A dummy Const after every source, sent as a scalar: a consumer that waits for
  // several nodes of one task waits for one tensor (one RecvTensor per step, one
  // thread), not one per node.
  const std::string& first = graph_.node(srcs[0]).name();
  const std::string base = srcs.size() == 1 ? first : absl::StrCat(first, "_and_", srcs.size() - 1);
  const std::string& src_device = devices_[srcs[0]];
  NodeDef* dummy = PartitionOf(src_device).add_node();
  dummy->set_name(UniqueName(absl::StrCat("_ctrl_", base)));
  dummy->set_op("Const");
  dummy->set_device(src_device);
  SetNodeAttr(dummy, "dtype", DT_FLOAT);
  SetNodeAttr(dummy, "value", Tensor::Scalar<float>(0.0f));
  for (int src : srcs) dummy->add_input(absl::StrCat("^", graph_.node(src).name()));
  const std::string tensor_name = absl::StrCat("edge_", edge_counter_++, "_", base, "_ctrl");
  NodeDef* send = AddSendRecv(kSendOp, src_device, DT_FLOAT, tensor_name, src_device, dst_device,
                              false, absl::StrCat("_send_", base, "_ctrl"));
  send->add_input(dummy->name());
  NodeDef* recv = AddSendRecv(kRecvOp, dst_device, DT_FLOAT, tensor_name, src_device, dst_device,
                              false, absl::StrCat("_recv_", base, "_ctrl"));
  AddPeerEdge(src_device, dst_device, tensor_name);
  return control_recvs_[key] = recv->name();
}

absl::StatusOr<PartitionedGraph> Partitioner::Run() {
  if (static_cast<int>(devices_.size()) != graph_.num_nodes() ||
      options_.feed_names.size() != step_.feed_nodes.size() ||
      options_.fetch_names.size() != step_.fetches.size()) {
    return absl::InvalidArgumentError(
        "PartitionGraph: devices, feed names or fetch names do not match the step graph");
  }
  for (const std::string& d : devices_) {
    if (task_of_.contains(d)) continue;
    ASSIGN_OR_RETURN(DeviceName dn, DeviceName::Parse(d));
    if (dn.job.empty() || !dn.has_task) {
      return absl::InvalidArgumentError(absl::StrCat("device '", d, "' names no task"));
    }
    task_of_[d] = dn.TaskName();
  }
  absl::flat_hash_map<int, int> feed_index;  // node id -> feed position.
  for (size_t i = 0; i < step_.feed_nodes.size(); ++i) feed_index[step_.feed_nodes[i]] = i;
  out_.feeds.resize(step_.feed_nodes.size());

  for (int id : graph_.topological_order()) {
    const GraphNode& n = graph_.node(id);
    const std::string& device = devices_[id];
    auto feed = feed_index.find(id);
    if (feed != feed_index.end()) {
      const std::string& name = options_.feed_names[feed->second];
      NodeDef* recv = PartitionOf(device).add_node();
      recv->set_name(n.name());
      used_names_.insert(n.name());
      recv->set_op(kRecvOp);
      recv->set_device(device);
      const DataType dtype = n.output_types[0];
      SetNodeAttr(recv, "T", dtype);
      SetNodeAttr(recv, "tensor_name", name);
      SetNodeAttr(recv, "send_device", device);
      SetNodeAttr(recv, "send_device_incarnation",
                  static_cast<int64_t>(options_.incarnation(device)));
      SetNodeAttr(recv, "recv_device", device);
      SetNodeAttr(recv, "client_terminated", true);
      out_.feeds[feed->second] = {
          task_of_[device], MakeRendezvousKey(device, options_.incarnation(device), device, name)};
      continue;
    }
    NodeDef copy = *n.def;
    copy.set_device(device);
    copy.clear_input();
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Endpoint& in = n.inputs[i];
      if (task_of_[devices_[in.node]] == task_of_[device]) {
        copy.add_input(n.def->input(static_cast<int>(i)));
      } else {
        copy.add_input(CrossTaskInput(in, device));
      }
    }
    std::map<std::string, std::vector<int>> control_from;  // Other task -> sources.
    for (int c : n.control_inputs) {
      const std::string& src_task = task_of_[devices_[c]];
      if (src_task == task_of_[device]) {
        copy.add_input(absl::StrCat("^", graph_.node(c).name()));
      } else {
        control_from[src_task].push_back(c);
      }
    }
    for (auto& [task, srcs] : control_from) {
      std::sort(srcs.begin(), srcs.end());
      srcs.erase(std::unique(srcs.begin(), srcs.end()), srcs.end());
      copy.add_input(absl::StrCat("^", CrossTaskControl(srcs, device)));
    }
    used_names_.insert(copy.name());
    *PartitionOf(device).add_node() = std::move(copy);
  }

  std::map<std::string, PartitionEndpoint> fetched;  // Fetching a name twice sends once.
  for (size_t i = 0; i < step_.fetches.size(); ++i) {
    auto again = fetched.find(options_.fetch_names[i]);
    if (again != fetched.end()) {
      out_.fetches.push_back(again->second);
      continue;
    }
    const Endpoint& e = step_.fetches[i];
    const GraphNode& p = graph_.node(e.node);
    const std::string& device = devices_[e.node];
    const std::string& name = options_.fetch_names[i];
    NodeDef* send = AddSendRecv(kSendOp, device, RemoveRefType(p.output_types[e.index]), name,
                                device, device, true, absl::StrCat("_fetch_", p.name()));
    send->add_input(e.index == 0 ? p.name() : absl::StrCat(p.name(), ":", e.index));
    out_.fetches.push_back(
        {task_of_[device], MakeRendezvousKey(device, options_.incarnation(device), device, name)});
    fetched[name] = out_.fetches.back();
  }
  return std::move(out_);
}

}  // namespace

absl::StatusOr<PartitionedGraph> PartitionGraph(const PrunedGraph& step,
                                                const std::vector<std::string>& devices,
                                                const PartitionOptions& options) {
  return Partitioner(step, devices, options).Run();
}

}  // namespace overseer

#include "worker/graph_mgr.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/cluster/device_name.h"
#include "core/graph/prune.h"
#include "core/graph/validate.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"
#include "worker/rendezvous_mgr.h"

namespace overseer {

GraphMgr::GraphMgr(std::string local_task, uint64_t incarnation, ThreadPool* pool)
    : local_task_(std::move(local_task)), incarnation_(incarnation), pool_(pool) {}

absl::Status GraphMgr::CheckPlacement(const GraphDef& def) const {
  for (const NodeDef& node : def.node()) {
    if (!node.device().empty()) {
      absl::StatusOr<DeviceName> device = DeviceName::Parse(node.device());
      if (!device.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", node.name(), "': ", device.status().message()));
      }
      if ((!device->job.empty() || device->has_task) && device->TaskName() != local_task_) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", node.name(), "' is placed on ", node.device(),
                         ", which is not on this task (", local_task_, ")"));
      }
    }
    if (node.op() != "_Send" && node.op() != "_Recv") continue;
    std::string send_device;
    int64_t incarnation = 0;
    if (!GetNodeAttr(node, "send_device", &send_device).ok() ||
        !GetNodeAttr(node, "send_device_incarnation", &incarnation).ok()) {
      continue;  // ValidateGraph names the missing attr.
    }
    absl::StatusOr<std::string> task = TaskOfDevice(send_device);
    if (!task.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name(), "': ", task.status().message()));
    }
    if (*task == local_task_ && static_cast<uint64_t>(incarnation) != incarnation_) {
      return absl::AbortedError(absl::StrFormat(
          "node '%s' names incarnation %016x of task %s, which now runs incarnation %016x "
          "(the task restarted; recreate the session)",
          node.name(), static_cast<uint64_t>(incarnation), local_task_, incarnation_));
    }
  }
  return absl::OkStatus();
}

void RegisteredGraph::RecordRun(absl::Duration took) {
  const int64_t us = absl::ToInt64Microseconds(took);
  const int64_t before = recent_run_us.load(std::memory_order_relaxed);
  // Concurrent runs may lose an update; the average stays a fair estimate.
  recent_run_us.store(before < 0 ? us : before + (us - before) / 8, std::memory_order_relaxed);
}

absl::StatusOr<std::string> GraphMgr::Register(GraphDef def) {
  RETURN_IF_ERROR(CheckPlacement(def));
  std::vector<std::string> targets;
  targets.reserve(def.node_size());
  for (const NodeDef& node : def.node()) targets.push_back(node.name());
  ASSIGN_OR_RETURN(ValidatedGraph validated, ValidateAndIndexGraph(std::move(def)));
  ASSIGN_OR_RETURN(PrunedGraph pruned, PruneGraph(*validated.graph, {}, {}, targets));
  auto registered = std::make_shared<RegisteredGraph>();
  absl::StatusOr<std::unique_ptr<Executor>> executor =
      Executor::Create(std::move(pruned), &registered->kernels, pool_);
  if (!executor.ok()) {
    // A node without a kernel is a bad graph, not a missing resource.
    return absl::InvalidArgumentError(executor.status().message());
  }
  registered->executor = std::move(*executor);
  absl::MutexLock lock(&mu_);
  std::string handle = absl::StrCat("graph_", next_id_++);
  graphs_[handle] = std::move(registered);
  return handle;
}

absl::StatusOr<std::shared_ptr<RegisteredGraph>> GraphMgr::Lookup(const std::string& handle) const {
  absl::MutexLock lock(&mu_);
  auto it = graphs_.find(handle);
  if (it == graphs_.end()) {
    return absl::NotFoundError(
        absl::StrCat("graph handle '", handle, "' is not registered in this worker session"));
  }
  return it->second;
}

absl::Status GraphMgr::Deregister(const std::string& handle) {
  absl::MutexLock lock(&mu_);
  if (graphs_.erase(handle) == 0) {
    return absl::NotFoundError(
        absl::StrCat("graph handle '", handle, "' is not registered in this worker session"));
  }
  return absl::OkStatus();
}

int GraphMgr::num_graphs() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(graphs_.size());
}

}  // namespace overseer

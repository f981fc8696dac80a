#include "client/graph/device_setter.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cluster/device_name.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// `base` with every component set in `over` taken from `over` (TensorFlow's
// DeviceSpec.make_merged_spec).
DeviceName Overridden(DeviceName base, const DeviceName& over) {
  if (!over.job.empty()) base.job = over.job;
  if (over.has_replica) {
    base.has_replica = true;
    base.replica = over.replica;
  }
  if (over.has_task) {
    base.has_task = true;
    base.task = over.task;
  }
  if (!over.type.empty()) base.type = over.type;
  if (over.has_id) {
    base.has_id = true;
    base.id = over.id;
  }
  return base;
}

// The bytes a ps op holds, as TensorFlow's byte_size_load_fn counts them: a
// variable's shape times its dtype's size; 0 when unknown or for other ops.
int64_t NodeBytes(const NodeDef& node) {
  PartialShape shape;
  DataType dtype = DT_INVALID;
  if (!GetNodeAttr(node, "shape", &shape).ok() || !GetNodeAttr(node, "dtype", &dtype).ok() ||
      !shape.IsFullyDefined() || !shape.KnownElementsFit()) {
    return 0;
  }
  return shape.ToTensorShape().num_elements() * static_cast<int64_t>(DataTypeSize(dtype));
}

}  // namespace

std::vector<std::string> StandardPsOps() {
  return {"Variable",
          "VariableV2",
          "AutoReloadVariable",
          "MutableHashTable",
          "MutableHashTableV2",
          "MutableHashTableOfTensors",
          "MutableHashTableOfTensorsV2",
          "MutableDenseHashTable",
          "MutableDenseHashTableV2",
          "VarHandleOp"};
}

absl::StatusOr<ReplicaDeviceSetter> ReplicaDeviceSetter::Create(
    ReplicaDeviceSetterOptions options) {
  if (options.num_ps_tasks < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ReplicaDeviceSetter needs at least one ps task; num_ps_tasks is ", options.num_ps_tasks));
  }
  if (options.ps_job.empty()) {
    return absl::InvalidArgumentError("ReplicaDeviceSetter: ps_job is empty");
  }
  if (absl::StatusOr<DeviceName> worker = DeviceName::Parse(options.worker_device); !worker.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReplicaDeviceSetter: worker_device: ", worker.status().message()));
  }
  return ReplicaDeviceSetter(std::move(options));
}

absl::StatusOr<std::optional<ReplicaDeviceSetter>> ReplicaDeviceSetter::ForCluster(
    const ClusterSpec& cluster, ReplicaDeviceSetterOptions options) {
  options.num_ps_tasks = cluster.NumTasks(options.ps_job);
  if (options.num_ps_tasks == 0) return std::optional<ReplicaDeviceSetter>();
  ASSIGN_OR_RETURN(ReplicaDeviceSetter setter, Create(std::move(options)));
  return std::optional<ReplicaDeviceSetter>(std::move(setter));
}

ReplicaDeviceSetter::ReplicaDeviceSetter(ReplicaDeviceSetterOptions options)
    : options_(std::make_shared<const ReplicaDeviceSetterOptions>(std::move(options))),
      state_(std::make_shared<State>()) {
  absl::MutexLock lock(&state_->mu);
  state_->bytes.assign(options_->num_ps_tasks, 0);
}

int ReplicaDeviceSetter::NextTask(const ReplicaDeviceSetterOptions& options, State* state,
                                  int64_t bytes) {
  absl::MutexLock lock(&state->mu);
  int task = 0;
  if (options.strategy == PsStrategy::kRoundRobin) {
    task = static_cast<int>(state->next % options.num_ps_tasks);
    ++state->next;
  } else {
    for (int i = 1; i < options.num_ps_tasks; ++i) {
      if (state->bytes[i] < state->bytes[task]) task = i;
    }
  }
  state->bytes[task] += bytes;
  return task;
}

std::string ReplicaDeviceSetter::NextPsDevice(const TensorShape& shape, DataType dtype) {
  const int64_t bytes = shape.num_elements() * static_cast<int64_t>(DataTypeSize(dtype));
  return absl::StrCat("/job:", options_->ps_job,
                      "/task:", NextTask(*options_, state_.get(), bytes));
}

Scope ReplicaDeviceSetter::ForVariable(const Scope& scope, const TensorShape& shape,
                                       DataType dtype) {
  return scope.WithDevice(NextPsDevice(shape, dtype));
}

Scope ReplicaDeviceSetter::ForOps(const Scope& scope) const {
  if (options_->worker_device.empty()) return scope;
  return scope.WithDevice(options_->worker_device);
}

Scope::DeviceFunction ReplicaDeviceSetter::DeviceFunction() const {
  return [options = options_, state = state_](const NodeDef& node) -> std::string {
    if (!options->merge_devices && !node.device().empty()) return node.device();
    absl::StatusOr<DeviceName> requested = DeviceName::Parse(node.device());
    // Adding the node reports a bad device name; leave it for that.
    if (!requested.ok()) return node.device();
    const bool on_ps = std::find(options->ps_ops.begin(), options->ps_ops.end(), node.op()) !=
                       options->ps_ops.end();
    DeviceName device;
    if (on_ps) {
      device.job = options->ps_job;
      if (requested->job.empty() || requested->job == options->ps_job) {
        device.has_task = true;
        device.task = NextTask(*options, state.get(), NodeBytes(node));
      }
    } else {
      device = *DeviceName::Parse(options->worker_device);  // Checked by Create.
    }
    return Overridden(std::move(device), *requested).ToString();
  };
}

std::vector<int64_t> ReplicaDeviceSetter::BytesPerTask() const {
  absl::MutexLock lock(&state_->mu);
  return state_->bytes;
}

}  // namespace overseer

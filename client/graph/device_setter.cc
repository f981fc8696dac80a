#include "client/graph/device_setter.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace overseer {

absl::StatusOr<ReplicaDeviceSetter> ReplicaDeviceSetter::Create(
    ReplicaDeviceSetterOptions options) {
  if (options.num_ps_tasks < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ReplicaDeviceSetter needs at least one ps task; num_ps_tasks is ", options.num_ps_tasks));
  }
  if (options.ps_job.empty()) {
    return absl::InvalidArgumentError("ReplicaDeviceSetter: ps_job is empty");
  }
  return ReplicaDeviceSetter(std::move(options));
}

ReplicaDeviceSetter::ReplicaDeviceSetter(ReplicaDeviceSetterOptions options)
    : options_(std::move(options)), bytes_(options_.num_ps_tasks, 0) {}

ReplicaDeviceSetter::ReplicaDeviceSetter(ReplicaDeviceSetter&& other) : options_(other.options_) {
  absl::MutexLock lock(&other.mu_);
  next_ = other.next_;
  bytes_ = std::move(other.bytes_);
}

std::string ReplicaDeviceSetter::NextPsDevice(const TensorShape& shape, DataType dtype) {
  const int64_t bytes = shape.num_elements() * static_cast<int64_t>(DataTypeSize(dtype));
  absl::MutexLock lock(&mu_);
  int task = 0;
  if (options_.strategy == PsStrategy::kRoundRobin) {
    task = static_cast<int>(next_ % options_.num_ps_tasks);
    ++next_;
  } else {
    for (int i = 1; i < options_.num_ps_tasks; ++i) {
      if (bytes_[i] < bytes_[task]) task = i;
    }
  }
  bytes_[task] += bytes;
  return absl::StrCat("/job:", options_.ps_job, "/task:", task);
}

Scope ReplicaDeviceSetter::ForVariable(const Scope& scope, const TensorShape& shape,
                                       DataType dtype) {
  return scope.WithDevice(NextPsDevice(shape, dtype));
}

Scope ReplicaDeviceSetter::ForOps(const Scope& scope) const {
  if (options_.worker_device.empty()) return scope;
  return scope.WithDevice(options_.worker_device);
}

std::vector<int64_t> ReplicaDeviceSetter::BytesPerTask() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace overseer

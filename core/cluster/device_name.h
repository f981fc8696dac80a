#ifndef OVERSEER_CORE_CLUSTER_DEVICE_NAME_H_
#define OVERSEER_CORE_CLUSTER_DEVICE_NAME_H_

// Device names as TensorFlow writes them: "/job:ps/replica:0/task:1/device:CPU:0".
// Every component is optional, so a name may be partial ("/job:ps", "/device:CPU:0",
// "/job:worker/task:1"); partial names are placement constraints that match every full
// name agreeing on the components they set. The legacy short form "/cpu:0" is accepted
// as "/device:CPU:0".

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace overseer {

// A value type; components absent from the name are unset (has_* false / empty).
struct DeviceName {
  std::string job;  // Empty: unset.
  bool has_replica = false;
  int replica = 0;
  bool has_task = false;
  int task = 0;
  std::string type;  // "CPU"; empty: unset.
  bool has_id = false;
  int id = 0;

  // Parses `name`. "" is the empty (match-all) name. INVALID_ARGUMENT naming `name`
  // and the bad component for anything else that is not a device name (unknown
  // component, negative or non-numeric index, a component given twice, no leading '/').
  static absl::StatusOr<DeviceName> Parse(absl::string_view name);

  // The canonical form, only the set components, in the order job, replica, task,
  // device: "/job:ps/replica:0/task:1/device:CPU:0". "" for the empty name.
  std::string ToString() const;

  // "/job:<job>/replica:<replica>/task:<task>" (unset replica as 0).
  std::string TaskName() const;

  // Whether job, task and device type and id are all set.
  bool IsFullySpecified() const;

  // Whether every component set in `this` has the same value in `other` (so "/job:ps"
  // matches "/job:ps/replica:0/task:1/device:CPU:0", and "" matches everything).
  bool Matches(const DeviceName& other) const;

  // Sets in `this` the components set in `other`. INVALID_ARGUMENT naming both names if
  // a component set in both differs (e.g. "/job:ps" merged with "/job:worker").
  absl::Status MergeFrom(const DeviceName& other);

  bool operator==(const DeviceName& o) const;
  bool operator!=(const DeviceName& o) const { return !(*this == o); }
};

// The name of device `type`:`id` of task `job`:`task`, fully specified with replica 0:
// "/job:<job>/replica:0/task:<task>/device:<type>:<id>".
std::string FullDeviceName(absl::string_view job, int task, absl::string_view type = "CPU",
                           int id = 0);

}  // namespace overseer

#endif  // OVERSEER_CORE_CLUSTER_DEVICE_NAME_H_

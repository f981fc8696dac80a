#ifndef OVERSEER_MASTER_PLACER_H_
#define OVERSEER_MASTER_PLACER_H_

// Placement: assigns every node of a (pruned) graph to one device of the cluster.
//   1. Colocation groups: a node that takes another's output as a reference or a
//      resource (a VariableV2 and its Assign/ApplyGradientDescent/... users) and a
//      node with "_class" = ["loc:@other"] (Scope::ColocateWith) share a device.
//   2. The device constraints (NodeDef.device, full or partial names such as
//      "/job:ps") of a group's nodes are merged; a conflict is INVALID_ARGUMENT naming
//      both nodes.
//   3. A constrained group goes to the first device that matches its constraint,
//      preferring one on the default device's task; a group without a constraint
//      (and every _Feed node) goes to the default device.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace overseer {

// `devices`: the full names of the available devices ("/job:ps/replica:0/task:0/
// device:CPU:0"), in preference order. `default_device`: a full name among them.
// Returns the full device name of every node (indexed by node id). INVALID_ARGUMENT
// naming the node for a malformed device constraint, a constraint that no device
// matches (the message lists the devices), or a constraint that conflicts with that
// of a node it must be colocated with.
// With `allow_soft_placement`, a constraint that no device matches is retried without
// its device type and index (TensorFlow's soft placement: "/job:worker/device:GPU:0"
// goes to the worker's CPU), and only then is an error.
absl::StatusOr<std::vector<std::string>> PlaceGraph(const Graph& graph,
                                                    const std::vector<std::string>& devices,
                                                    const std::string& default_device,
                                                    bool allow_soft_placement = false);

}  // namespace overseer

#endif  // OVERSEER_MASTER_PLACER_H_

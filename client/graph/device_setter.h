#ifndef OVERSEER_CLIENT_GRAPH_DEVICE_SETTER_H_
#define OVERSEER_CLIENT_GRAPH_DEVICE_SETTER_H_

// ReplicaDeviceSetter: TensorFlow's tf.train.replica_device_setter for
// between-graph replicated training. Each variable goes to one of the
// parameter-server tasks
// ("/job:ps/task:<i>"), chosen round-robin or greedily by size; every other op
// goes to the trainer's own worker task. The ops that read or update a variable
// in place (its initializer, snapshot, optimizer slots and updates) are
// colocated with it by the variables and optimizer helpers, so only the
// variable needs a device.
//
//   ReplicaDeviceSetterOptions o;
//   o.num_ps_tasks = 2;
//   o.worker_device = "/job:worker/task:1";
//   ASSIGN_OR_RETURN(ReplicaDeviceSetter setter,
//   ReplicaDeviceSetter::Create(o)); Scope ops = setter.ForOps(root); // on
//   /job:worker/task:1 Variable w = MakeVariable(
//       setter.ForVariable(ops.WithOpName("w"), TensorShape({784, 10})),  // a
//       ps task GlorotUniformInitializer(TensorShape({784, 10}), 1));
//   Output y = ops::MatMul(ops, x, w.value);               // on the worker
//
// Or, as TensorFlow's `with tf.device(replica_device_setter(...))`, one device
// function for the whole model: every op of `ps_ops` goes to a ps task, every
// other op to the worker device, and a device the code requests is merged in.
//
//   Scope model = root.WithDeviceFunction(setter.DeviceFunction());
//   Variable w = MakeVariable(model.WithOpName("w"), GlorotUniformInitializer(...));
//
// Every trainer that builds the same graph in the same order with the same
// options gets the same variable placement, which between-graph replication
// relies on.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/graph/scope.h"
#include "core/cluster/cluster_spec.h"
#include "core/tensor_shape.h"
#include "core/types.h"

namespace overseer {

enum class PsStrategy {
  kRoundRobin,    // Variable k goes to ps task k mod num_ps_tasks.
  kGreedyBySize,  // To the ps task holding the fewest bytes so far (lowest index
                  // on ties): TensorFlow's GreedyLoadBalancingStrategy by byte size.
};

// TensorFlow's STANDARD_PS_OPS: the ops that hold state a ps keeps.
std::vector<std::string> StandardPsOps();

struct ReplicaDeviceSetterOptions {
  // The number of tasks of `ps_job`. Must be positive.
  int num_ps_tasks = 0;
  std::string ps_job = "ps";
  // The device of every op that is not a variable ("" leaves them
  // unconstrained, to the master's default).
  std::string worker_device = "/job:worker";
  PsStrategy strategy = PsStrategy::kRoundRobin;
  // DeviceFunction: the op types placed on a ps task (TensorFlow's ps_ops).
  std::vector<std::string> ps_ops = StandardPsOps();
  // DeviceFunction: when a node already requests a device, merge it with the setter's
  // (the node's components win: "/task:3" on a variable keeps the ps job and takes
  // task 3), or, when false, leave the node's device as it is (TensorFlow's
  // merge_devices).
  bool merge_devices = true;
};

// Thread-safe. Copies share their placement state.
class ReplicaDeviceSetter {
 public:
  // INVALID_ARGUMENT when num_ps_tasks < 1, ps_job is empty or worker_device is not a
  // device name.
  static absl::StatusOr<ReplicaDeviceSetter> Create(ReplicaDeviceSetterOptions options);
  // TensorFlow's replica_device_setter(cluster=...): num_ps_tasks is the number of
  // tasks of ps_job in `cluster`; nullopt when the cluster has no such job (TensorFlow
  // returns None: place nothing).
  static absl::StatusOr<std::optional<ReplicaDeviceSetter>> ForCluster(
      const ClusterSpec& cluster, ReplicaDeviceSetterOptions options);

  // `scope` with the device of the ps task for the next variable, whose value
  // has `shape` and `dtype` (greedy placement counts its bytes on that task).
  // Each call assigns one variable: call it once per variable, in
  // graph-building order.
  Scope ForVariable(const Scope& scope, const TensorShape& shape, DataType dtype = DT_FLOAT);
  // `scope` with the worker device (unchanged when worker_device is empty).
  Scope ForOps(const Scope& scope) const;

  // The device function (Scope::WithDeviceFunction) that places every node: ops of
  // ps_ops on the next ps task (by the strategy; a variable's bytes from its shape and
  // dtype attrs), the others on worker_device, each merged with the device the node
  // requests (see merge_devices). It shares this setter's placement state.
  Scope::DeviceFunction DeviceFunction() const;

  // "/job:<ps_job>/task:<i>" of the task the next variable of `shape`/`dtype`
  // goes to, and records it there (ForVariable uses this).
  std::string NextPsDevice(const TensorShape& shape, DataType dtype = DT_FLOAT);
  // Bytes of the variables assigned to each ps task so far.
  std::vector<int64_t> BytesPerTask() const;

  const ReplicaDeviceSetterOptions& options() const { return *options_; }

 private:
  struct State {
    absl::Mutex mu;
    int64_t next ABSL_GUARDED_BY(mu) = 0;
    std::vector<int64_t> bytes ABSL_GUARDED_BY(mu);
  };

  explicit ReplicaDeviceSetter(ReplicaDeviceSetterOptions options);
  // The next ps task for a variable of `bytes` bytes, recorded.
  static int NextTask(const ReplicaDeviceSetterOptions& options, State* state, int64_t bytes);

  std::shared_ptr<const ReplicaDeviceSetterOptions> options_;
  std::shared_ptr<State> state_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_DEVICE_SETTER_H_

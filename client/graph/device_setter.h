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
// Every trainer that builds the same graph in the same order with the same
// options gets the same variable placement, which between-graph replication
// relies on.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/graph/scope.h"
#include "core/tensor_shape.h"
#include "core/types.h"

namespace overseer {

enum class PsStrategy {
  kRoundRobin,    // Variable k goes to ps task k mod num_ps_tasks.
  kGreedyBySize,  // To the ps task holding the fewest bytes so far (lowest index
                  // on ties).
};

struct ReplicaDeviceSetterOptions {
  // The number of tasks of `ps_job`. Must be positive.
  int num_ps_tasks = 0;
  std::string ps_job = "ps";
  // The device of every op that is not a variable ("" leaves them
  // unconstrained, to the master's default).
  std::string worker_device = "/job:worker";
  PsStrategy strategy = PsStrategy::kRoundRobin;
};

// Thread-safe.
class ReplicaDeviceSetter {
 public:
  // INVALID_ARGUMENT when num_ps_tasks < 1 or ps_job is empty.
  static absl::StatusOr<ReplicaDeviceSetter> Create(ReplicaDeviceSetterOptions options);

  ReplicaDeviceSetter(ReplicaDeviceSetter&& other);

  // `scope` with the device of the ps task for the next variable, whose value
  // has `shape` and `dtype` (greedy placement counts its bytes on that task).
  // Each call assigns one variable: call it once per variable, in
  // graph-building order.
  Scope ForVariable(const Scope& scope, const TensorShape& shape, DataType dtype = DT_FLOAT);
  // `scope` with the worker device (unchanged when worker_device is empty).
  Scope ForOps(const Scope& scope) const;

  // "/job:<ps_job>/task:<i>" of the task the next variable of `shape`/`dtype`
  // goes to, and records it there (ForVariable uses this).
  std::string NextPsDevice(const TensorShape& shape, DataType dtype = DT_FLOAT);
  // Bytes of the variables assigned to each ps task so far.
  std::vector<int64_t> BytesPerTask() const;

  const ReplicaDeviceSetterOptions& options() const { return options_; }

 private:
  explicit ReplicaDeviceSetter(ReplicaDeviceSetterOptions options);

  const ReplicaDeviceSetterOptions options_;
  mutable absl::Mutex mu_;
  int64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int64_t> bytes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_DEVICE_SETTER_H_

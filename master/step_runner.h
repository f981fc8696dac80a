#ifndef OVERSEER_MASTER_STEP_RUNNER_H_
#define OVERSEER_MASTER_STEP_RUNNER_H_

// Runs one step of registered partitions: a RunGraph per task, all in parallel; the
// first failure cancels the step on every task (CleanupGraph), and every task's step
// state is cleaned up afterwards.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "master/partitioner.h"
#include "master/worker_cache.h"
#include "proto/config.pb.h"
#include "proto/tensor.pb.h"

namespace overseer {

// The partitions of one signature, registered on their tasks.
struct RegisteredStep {
  std::map<std::string, std::string> graph_handles;  // Task -> graph handle.
  std::vector<PartitionEndpoint> feeds;
  std::vector<PartitionEndpoint> fetches;
};

struct StepArgs {
  std::string session_handle;
  int64_t step_id = 0;
  std::vector<const TensorProto*> feeds;  // One per RegisteredStep::feeds.
  int64_t timeout_in_ms = 0;              // 0: none.
};

// Runs the step. On success `fetches` gets one tensor per RegisteredStep::fetches and
// `stats` (optional) the step stats of every task. Errors are those of the first task
// that failed (CANCELLED ones from the cancellation are ignored), prefixed with the
// task name, code kept. A task that is not in `workers` is UNAVAILABLE.
absl::Status RunRegisteredStep(MasterWorkerCacheInterface* workers, const RegisteredStep& step,
                               const StepArgs& args, std::vector<TensorProto>* fetches,
                               StepStats* stats);

// Prefixes `status`'s message with "task <task>: ", keeping its code.
absl::Status TaskError(const std::string& task, const absl::Status& status);

}  // namespace overseer

#endif  // OVERSEER_MASTER_STEP_RUNNER_H_

#ifndef OVERSEER_CORE_CLUSTER_CLUSTER_SPEC_H_
#define OVERSEER_CORE_CLUSTER_CLUSTER_SPEC_H_

// The tasks of a cluster: job name -> the "host:port" of each task (index = position).
// Read from --cluster_spec ("ps=h:p,h:p;worker=h:p") or from the TF_CONFIG environment
// variable as Kubeflow's TFJob sets it:
//   {"cluster": {"chief": ["h:p"], "worker": ["h:p", ...], "ps": [...]},
//    "task": {"type": "worker", "index": 0}}

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace overseer {

// One task of a cluster.
struct TaskId {
  std::string job;
  int index = 0;
  bool operator==(const TaskId& o) const { return job == o.job && index == o.index; }
  bool operator<(const TaskId& o) const { return job != o.job ? job < o.job : index < o.index; }
  // "/job:<job>/replica:0/task:<index>".
  std::string Name() const;
};

// A value type.
class ClusterSpec {
 public:
  ClusterSpec() = default;

  // Parses "job=host:port,host:port;job=host:port". Whitespace around items is
  // ignored. INVALID_ARGUMENT naming the offending item for: a job without '=', an
  // empty or malformed job name, a job given twice, an address that is not host:port
  // with a port in 1..65535, a job with no tasks, an empty spec.
  static absl::StatusOr<ClusterSpec> Parse(absl::string_view spec);

  // Adds job `job` with `addresses`. INVALID_ARGUMENT as Parse.
  absl::Status AddJob(const std::string& job, std::vector<std::string> addresses);

  // "ps=h:p,h:p;worker=h:p" (jobs in name order); Parse(ToString()) round-trips.
  std::string ToString() const;

  const std::map<std::string, std::vector<std::string>>& jobs() const { return jobs_; }
  bool empty() const { return jobs_.empty(); }
  bool HasJob(absl::string_view job) const;
  // The number of tasks of `job` (0 if absent).
  int NumTasks(absl::string_view job) const;
  // Every task, in job-name then index order.
  std::vector<TaskId> Tasks() const;
  // The address of task `job`:`index`; NOT_FOUND naming the task and the jobs
  // otherwise.
  absl::StatusOr<std::string> TaskAddress(absl::string_view job, int index) const;

 private:
  std::map<std::string, std::vector<std::string>> jobs_;
};

// TF_CONFIG: the cluster and this process's task.
struct TfConfig {
  ClusterSpec cluster;
  std::string task_type;  // Empty when TF_CONFIG has no "task".
  int task_index = 0;
};

// Parses TF_CONFIG JSON. "cluster" is required (an object of job -> list of
// "host:port" strings); "task" is optional ({"type": string, "index": non-negative
// integer}); other top-level keys ("environment", "rpc_layer") are ignored. With a
// task, the task must exist in the cluster. INVALID_ARGUMENT naming the field for any
// malformed input (not JSON, wrong JSON types, bad addresses, unknown task).
absl::StatusOr<TfConfig> ParseTfConfig(absl::string_view json);

// Checks that `address` is "host:port" with a non-empty host and a port in 1..65535
// (IPv6 hosts in brackets: "[::1]:80"). INVALID_ARGUMENT naming it otherwise.
absl::Status ValidateAddress(absl::string_view address);

}  // namespace overseer

#endif  // OVERSEER_CORE_CLUSTER_CLUSTER_SPEC_H_

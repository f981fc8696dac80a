#ifndef OVERSEER_CLIENT_TRAINING_SUMMARY_HOOKS_H_
#define OVERSEER_CLIENT_TRAINING_SUMMARY_HOOKS_H_

// The hooks that write summaries: StepCounterHook (global steps per second) and
// SummarySaverHook (the graph's summary ops every N steps or seconds), TensorFlow's
// tf.train.StepCounterHook and tf.train.SummarySaverHook.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/summary/summary_writer.h"
#include "client/training/basic_session_run_hooks.h"
#include "client/training/session_run_hook.h"
#include "core/clock.h"

namespace overseer {

// Every N global steps or N seconds: logs "<global step name>/sec: <rate>" and, with a
// writer, writes it as a scalar summary at the global step. Logs a warning after 20
// runs in a row that did not advance the global step.
struct StepCounterHookOptions {
  // Exactly one of these (set every_n_steps to nullopt to use every_n_secs).
  std::optional<int64_t> every_n_steps = 100;
  std::optional<absl::Duration> every_n_secs;
  // Not owned; may be null (then the rate is only logged).
  SummaryWriter* summary_writer = nullptr;
  // Global steps one run advances.
  int64_t steps_per_run = 1;
  // Paces the intervals and measures steps per second. Required; not owned.
  Clock* clock = nullptr;
};

class StepCounterHook : public SessionRunHook {
 public:
  // INVALID_ARGUMENT unless exactly one interval is given, or for steps_per_run < 1.
  static absl::StatusOr<std::unique_ptr<StepCounterHook>> Create(
      const StepCounterHookOptions& options);

  absl::Status Begin(const Scope& scope) override;
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;

 private:
  StepCounterHook(const StepCounterHookOptions& options, SecondOrStepTimer timer)
      : options_(options), timer_(timer) {}

  const StepCounterHookOptions options_;
  SecondOrStepTimer timer_;
  Output global_step_;
  std::string summary_tag_;
  std::optional<int64_t> last_global_step_;
  int global_step_check_count_ = 0;
};

// The summary tensors to write: DT_STRING scalars holding serialized Summary protos
// (a summary op's or MergeAllSummaries' output). Empty: nothing to write.
using SummaryOpProvider = std::function<absl::StatusOr<std::vector<Output>>()>;

// Writes the summary ops' values every save_steps global steps or save_secs seconds
// (in the first run too), at the global step after the run, and a SessionLog START at
// the first run's step. End flushes the writer. Whether to fetch the summaries is
// decided before a run from the global step fetched with the previous run; when the
// train op does not depend on the global step's read (see TensorFlow's
// _increment_global_step) that value may already include the increment, and the
// schedule then runs one step early.
struct SummarySaverHookOptions {
  // Exactly one of these.
  std::optional<int64_t> save_steps;
  std::optional<absl::Duration> save_secs;
  // Not owned. Null: the hook fetches nothing and writes nothing.
  SummaryWriter* summary_writer = nullptr;
  // Exactly one of these: the ops, or where to find them at Begin (e.g. a Scaffold's
  // summary op).
  std::vector<Output> summary_op;
  SummaryOpProvider summary_op_provider;
  // Paces save_secs and save_steps. Required; not owned.
  Clock* clock = nullptr;
};

class SummarySaverHook : public SessionRunHook {
 public:
  // INVALID_ARGUMENT unless exactly one of save_steps / save_secs and exactly one of
  // summary_op / summary_op_provider is given.
  static absl::StatusOr<std::unique_ptr<SummarySaverHook>> Create(SummarySaverHookOptions options);

  absl::Status Begin(const Scope& scope) override;
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;
  // Errors of the writer (e.g. a summary that does not parse) are returned.
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;
  absl::Status End(ClientSession* session) override;

 private:
  SummarySaverHook(SummarySaverHookOptions options, SecondOrStepTimer timer)
      : options_(std::move(options)), timer_(timer) {}

  const SummarySaverHookOptions options_;
  SecondOrStepTimer timer_;
  Output global_step_;
  std::vector<Output> summary_ops_;
  std::optional<int64_t> next_step_;
  bool request_summary_ = false;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_SUMMARY_HOOKS_H_

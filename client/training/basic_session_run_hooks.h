#ifndef OVERSEER_CLIENT_TRAINING_BASIC_SESSION_RUN_HOOKS_H_
#define OVERSEER_CLIENT_TRAINING_BASIC_SESSION_RUN_HOOKS_H_

// TensorFlow's standard session run hooks (tf.train.*Hook) and SecondOrStepTimer. The
// checkpoint hook is in checkpoint_saver_hook.h, the step counter and summary hooks in
// summary_hooks.h. Hooks are made by Create, which checks the options
// (INVALID_ARGUMENT, as TensorFlow's constructors raise ValueError). Hooks that need
// the global step look it up in Begin: FAILED_PRECONDITION "global step should be
// created to use <Hook>" when the graph has none.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/training/session_run_hook.h"
#include "core/clock.h"

namespace overseer {

// Triggers at most once every `every_secs` or once every `every_steps` steps. Not
// thread-safe.
class SecondOrStepTimer {
 public:
  // Exactly one of the two must be given (INVALID_ARGUMENT otherwise, or when it is
  // negative, or `clock` is null). `clock` (not owned) is read for every_secs.
  static absl::StatusOr<SecondOrStepTimer> Create(std::optional<absl::Duration> every_secs,
                                                  std::optional<int64_t> every_steps, Clock* clock);

  // Forgets the last trigger.
  void Reset();
  // True if it never triggered, or `step` differs from the last triggered step and
  // every_secs have passed or every_steps steps were taken since the last trigger.
  bool ShouldTriggerForStep(int64_t step) const;

  // Time and steps since the previous trigger; both empty at the first trigger.
  struct Elapsed {
    std::optional<absl::Duration> time;
    std::optional<int64_t> steps;
  };
  // Records a trigger at `step` now.
  Elapsed UpdateLastTriggeredStep(int64_t step);
  // The step of the last trigger, or nullopt.
  std::optional<int64_t> LastTriggeredStep() const { return last_step_; }

 private:
  SecondOrStepTimer(std::optional<absl::Duration> every_secs, std::optional<int64_t> every_steps,
                    Clock* clock)
      : every_secs_(every_secs), every_steps_(every_steps), clock_(clock) {}

  std::optional<absl::Duration> every_secs_;
  std::optional<int64_t> every_steps_;
  Clock* clock_;
  std::optional<int64_t> last_step_;
  absl::Time last_time_;
};

// Requests stop once the global step reaches the last step: `last_step`, or the global
// step at the first session creation plus `num_steps`. Exactly one must be given.
struct StopAtStepHookOptions {
  std::optional<int64_t> num_steps;
  std::optional<int64_t> last_step;
};

class StopAtStepHook : public SessionRunHook {
 public:
  static absl::StatusOr<std::unique_ptr<StopAtStepHook>> Create(
      const StopAtStepHookOptions& options);

  absl::Status Begin(const Scope& scope) override;
  absl::Status AfterCreateSession(ClientSession* session, Coordinator* coord) override;
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;

 private:
  explicit StopAtStepHook(const StopAtStepHookOptions& options) : options_(options) {}

  const StopAtStepHookOptions options_;
  Output global_step_;
  std::optional<int64_t> last_step_;
};

// Logs tensors with LOG(INFO) every N runs of this session, every N seconds, and/or at
// the end: "tag = value, tag = value (0.123 sec)" or the formatter's text.
struct LoggingTensorHookOptions {
  // Logged under their names, in this order.
  std::vector<Fetch> tensors;
  // Logged under the tags, in tag order (TensorFlow's dict form).
  std::map<std::string, Fetch> tagged_tensors;
  // Exactly one of these, unless only at_end is wanted (then neither).
  std::optional<int64_t> every_n_iter;
  std::optional<absl::Duration> every_n_secs;
  // Also log in End (the tensors are computed once more then).
  bool at_end = false;
  // Turns tag -> value into the logged line instead of the default.
  std::function<std::string(const std::map<std::string, Tensor>&)> formatter;
  // Paces every_n_secs and every_n_iter. Required with either; not owned.
  Clock* clock = nullptr;
};

class LoggingTensorHook : public SessionRunHook {
 public:
  // INVALID_ARGUMENT "invalid every_n_iter" for N <= 0, "exactly one of every_n_iter
  // and every_n_secs" unless only at_end, "no tensors", or a tag given twice.
  static absl::StatusOr<std::unique_ptr<LoggingTensorHook>> Create(
      LoggingTensorHookOptions options);

  // Resolves the tensor names (NOT_FOUND naming a missing one).
  absl::Status Begin(const Scope& scope) override;
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;
  absl::Status End(ClientSession* session) override;

 private:
  LoggingTensorHook(LoggingTensorHookOptions options, std::optional<SecondOrStepTimer> timer);
  void Log(const std::vector<Tensor>& values);

  const LoggingTensorHookOptions options_;
  std::vector<std::string> tags_;           // In logging order.
  std::vector<Fetch> fetches_;              // tags_[i]'s tensor.
  std::vector<Output> outputs_;             // Resolved in Begin.
  std::optional<SecondOrStepTimer> timer_;  // Empty: only at end.
  int64_t iter_count_ = 0;
  bool should_trigger_ = false;
};

// Watches a float or double loss tensor. When any element is NaN it fails the run
// (fail_on_nan_loss: INTERNAL "NaN loss during training") or requests stop.
class NanTensorHook : public SessionRunHook {
 public:
  explicit NanTensorHook(Fetch loss_tensor, bool fail_on_nan_loss = true)
      : loss_tensor_(std::move(loss_tensor)), fail_on_nan_loss_(fail_on_nan_loss) {}

  // Resolves the loss; INVALID_ARGUMENT unless it is float or double.
  absl::Status Begin(const Scope& scope) override;
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;

 private:
  const Fetch loss_tensor_;
  const bool fail_on_nan_loss_;
  Output loss_;
};

// Holds back the first run until the global step reaches wait_until_step (to start
// workers gradually): BeforeRun reads the global step every poll_interval on the clock.
struct GlobalStepWaiterHookOptions {
  int64_t wait_until_step = 0;
  absl::Duration poll_interval = absl::Milliseconds(500);
  // The wait fails DEADLINE_EXCEEDED after this long (TensorFlow waits forever).
  absl::Duration max_wait = absl::Hours(2);
  // Measures max_wait and the polls. Required; not owned.
  Clock* clock = nullptr;
};

class GlobalStepWaiterHook : public SessionRunHook {
 public:
  static absl::StatusOr<std::unique_ptr<GlobalStepWaiterHook>> Create(
      const GlobalStepWaiterHookOptions& options);

  absl::Status Begin(const Scope& scope) override;
  // Blocks (first run only) until the step is reached; errors of reading the step, or
  // DEADLINE_EXCEEDED naming both steps after max_wait.
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;

 private:
  explicit GlobalStepWaiterHook(const GlobalStepWaiterHookOptions& options) : options_(options) {}

  const GlobalStepWaiterHookOptions options_;
  Output global_step_;
  bool worker_is_started_ = false;
};

// Computes `final_ops` (with `final_ops_feed_dict`) in End; final_ops_values() holds
// the results. An OUT_OF_RANGE error there is logged (the ops read input) and returned.
struct FinalOpsHookOptions {
  std::vector<Fetch> final_ops;
  std::vector<FeedPair> final_ops_feed_dict;
};

class FinalOpsHook : public SessionRunHook {
 public:
  explicit FinalOpsHook(FinalOpsHookOptions options) : options_(std::move(options)) {}

  absl::Status End(ClientSession* session) override;
  // One tensor per final op after End; empty before.
  const std::vector<Tensor>& final_ops_values() const { return values_; }

 private:
  const FinalOpsHookOptions options_;
  std::vector<Tensor> values_;
};

// Feeds what `feed_fn` returns in every run (its error fails the run).
class FeedFnHook : public SessionRunHook {
 public:
  using FeedFn = std::function<absl::StatusOr<std::vector<FeedPair>>()>;
  explicit FeedFnHook(FeedFn feed_fn) : feed_fn_(std::move(feed_fn)) {}

  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;

 private:
  const FeedFn feed_fn_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_BASIC_SESSION_RUN_HOOKS_H_

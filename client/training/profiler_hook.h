#ifndef OVERSEER_CLIENT_TRAINING_PROFILER_HOOK_H_
#define OVERSEER_CLIENT_TRAINING_PROFILER_HOOK_H_

// TensorFlow's tf.train.ProfilerHook: every N global steps or N seconds a run is traced
// (RunOptions FULL_TRACE) and its step stats are written as a Chrome trace,
// `<output_dir>/timeline-<global step>.json`, which chrome://tracing and Perfetto open.
// Also ChromeTraceFromStepStats, TensorFlow's timeline.Timeline(step_stats)
// .generate_chrome_trace_format().

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/training/basic_session_run_hooks.h"
#include "client/training/session_run_hook.h"
#include "core/clock.h"
#include "core/io/file_system.h"
#include "proto/config.pb.h"

namespace overseer {

// A Chrome trace (the JSON trace event format): one process per device of `stats`
// ("<device> Compute"), one complete event ("ph": "X") per node, named by its op, on
// the thread that ran it, from its start for its whole run; args name the node, its op
// and its inputs, and with FULL_TRACE each output's dtype, shape and bytes.
std::string ChromeTraceFromStepStats(const StepStats& stats);

struct ProfilerHookOptions {
  // Exactly one of these.
  std::optional<int64_t> save_steps;
  std::optional<absl::Duration> save_secs;
  // Where the timelines go (created if missing). Required.
  std::string output_dir;
  // Paces save_secs. Required; not owned.
  Clock* clock = nullptr;
  // Not owned; null: the local file system.
  FileSystem* file_system = nullptr;
};

// The first trace comes save_steps steps (or save_secs seconds) after the first run,
// as TensorFlow's; a run that traces reads the global step after it and names the file
// by it. A file is written whole (a temporary file renamed), so a reader never sees
// half a trace.
class ProfilerHook : public SessionRunHook {
 public:
  // INVALID_ARGUMENT unless exactly one interval is given, for an empty output_dir or
  // a null clock.
  static absl::StatusOr<std::unique_ptr<ProfilerHook>> Create(const ProfilerHookOptions& options);

  absl::Status Begin(const Scope& scope) override;
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;

 private:
  ProfilerHook(const ProfilerHookOptions& options, SecondOrStepTimer timer)
      : options_(options), timer_(timer) {}
  absl::Status Write(int64_t step, const StepStats& stats);

  const ProfilerHookOptions options_;
  SecondOrStepTimer timer_;
  Output global_step_;
  std::optional<int64_t> next_step_;
  bool tracing_ = false;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_PROFILER_HOOK_H_

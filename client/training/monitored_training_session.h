#ifndef OVERSEER_CLIENT_TRAINING_MONITORED_TRAINING_SESSION_H_
#define OVERSEER_CLIENT_TRAINING_MONITORED_TRAINING_SESSION_H_

// MonitoredTrainingSession: TensorFlow's tf.train.MonitoredTrainingSession. For the
// chief it makes a MonitoredSession over a ChiefSessionCreator with the standard hooks
// (global steps per second, summaries, checkpoints); for other trainers one over a
// WorkerSessionCreator with the given hooks only.
//
//   MonitoredTrainingSessionOptions options;
//   options.master = "grpc://localhost:2222";
//   options.is_chief = task_index == 0;
//   options.checkpoint_dir = "grpc://localhost:7000/run1";
//   options.hooks = {stop_at_step.get()};
//   ASSIGN_OR_RETURN(auto session, MonitoredTrainingSession(root, options));
//   while (!session->ShouldStop()) { ... session->Run({}, {}, {train_op}, nullptr) ... }
//   RETURN_IF_ERROR(session->Close());
//
// Beyond TensorFlow: the chief's session is recreated after recoverable errors with
// backoff (RecoverableSession), keeping the model when its state survived and
// restoring the latest checkpoint only when a ps lost it; after such a restore the
// event file gets a SessionLog START at the restored step. On a clean end the chief
// tells the cluster the job is done (signal_job_done_on_end), so that ps and worker
// servers started with --exit_when_job_done exit (TensorFlow's ps serves forever).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/graph/scope.h"
#include "client/session/job.h"
#include "client/session/readiness.h"
#include "client/summary/summary_writer.h"
#include "client/training/monitored_session.h"
#include "client/training/recoverable_session.h"
#include "client/training/scaffold.h"
#include "client/training/session_run_hook.h"
#include "client/training/trainer_metrics.h"
#include "core/clock.h"
#include "proto/config.pb.h"

namespace overseer {

class ResourceMgr;

// Tells the cluster behind `master` that the job is done (see SignalJobDone).
using JobDoneSignal =
    std::function<absl::Status(const std::string& master, const std::string& reason)>;

struct MonitoredTrainingSessionOptions {
  // "" (in-process) or "grpc://host:port".
  std::string master;
  bool is_chief = true;
  // Where checkpoints are restored from and saved to (a local directory or
  // grpc://host:port/<run>); empty: none.
  std::string checkpoint_dir;
  // Not owned; null: a default Scaffold.
  Scaffold* scaffold = nullptr;
  // Not owned; called after the standard hooks. chief_only_hooks come first, on the
  // chief only.
  std::vector<SessionRunHook*> hooks;
  std::vector<SessionRunHook*> chief_only_hooks;
  // Checkpoints every save_checkpoint_secs (default 600 s) or, when set,
  // every save_checkpoint_steps steps instead; none when the one used is <= 0.
  std::optional<absl::Duration> save_checkpoint_secs = absl::Seconds(600);
  std::optional<int64_t> save_checkpoint_steps;
  // Summaries every save_summaries_steps (default 100) or, when set, every
  // save_summaries_secs instead; none when the one used is <= 0.
  std::optional<int64_t> save_summaries_steps = 100;
  std::optional<absl::Duration> save_summaries_secs;
  // Global steps per second every this many steps; none when <= 0.
  int64_t log_step_count_steps = 100;
  // How long a non-chief waits for the chief to make the model ready.
  absl::Duration max_wait = absl::Seconds(7200);
  // Time the coordinator's threads get to stop at Close.
  absl::Duration stop_grace_period = absl::Seconds(120);
  // Where summaries go (a local directory or grpc://host:port/<run> of a
  // summary_writer server); empty: checkpoint_dir.
  std::string summary_dir;
  // The summary writer's tunables (its clock is `clock`).
  SummaryWriterOptions summary_writer_options;
  ConfigProto config;
  // Where DirectSession keeps variables for master "" (null: the process-wide one).
  ResourceMgr* resource_mgr = nullptr;
  // Recovery's backoff and limits.
  RecoveryOptions recovery;
  // Keep a model whose state survived a recoverable error instead of restoring the
  // checkpoint (see ChiefSessionCreatorOptions).
  bool restore_only_if_not_ready = true;
  // On the chief's clean Close, with a master other than "": call job_done_signal
  // (SignalJobDone: the master tells every task) so that servers started with
  // --exit_when_job_done exit 0. A failure is logged, not returned.
  bool signal_job_done_on_end = true;
  // Null (the default): SignalJobDone with config's device filters, so that a chief
  // whose session sees only some tasks (the classic between-graph shape) tells those.
  JobDoneSignal job_done_signal;
  std::string readiness_key = "model";
  ReadinessChannel* readiness_channel = nullptr;  // Not owned; null: the master's.
  // Time for intervals, waits and backoff. Required (a trainer's main passes
  // Clock::Real()); not owned.
  Clock* clock = nullptr;
  // If set (not owned; outlives the session), the session feeds this trainer's
  // metrics (client/training/trainer_metrics.h): its steps and the global step (a hook that
  // fetches the global step with every run, which costs nothing more when another hook
  // fetches it too), its recoveries, a non-chief's waits for readiness, and the
  // chief's checkpoints. Null (the default): no metrics.
  TrainerMetrics* metrics = nullptr;
};

// A MonitoredSession for training (see the file comment). Errors: those of
// MonitoredSession::Create, of creating the hooks (INVALID_ARGUMENT for bad
// intervals) and of creating the summary writer.
absl::StatusOr<std::unique_ptr<MonitoredSession>> MonitoredTrainingSession(
    const Scope& scope, const MonitoredTrainingSessionOptions& options);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_MONITORED_TRAINING_SESSION_H_

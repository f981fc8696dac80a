#ifndef OVERSEER_CLIENT_TRAINING_MONITORED_SESSION_H_
#define OVERSEER_CLIENT_TRAINING_MONITORED_SESSION_H_

// MonitoredSession: TensorFlow's tf.train.MonitoredSession. It creates its session
// through a SessionCreator (initialising, restoring or waiting for the model), runs
// every step through hooks, starts the graph's queue runners under a Coordinator, and
// recovers from ABORTED and UNAVAILABLE by recreating the session and rerunning the
// step (recoverable_session.h). The stack is
//
//   RecoverableSession -> CoordinatedSession -> HookedSessionLayer -> ClientSession
//
// (SingularMonitoredSession has no recoverable layer.) At creation it calls every
// hook's Begin, creates the session, starts the queue runners and calls every hook's
// AfterCreateSession, which it calls again after each recreation.
//
//   ASSIGN_OR_RETURN(auto session, MonitoredSession::Create(
//       root, std::make_unique<ChiefSessionCreator>(root, nullptr, chief), {&stop_hook}));
//   while (!session->ShouldStop()) {
//     absl::Status s = session->Run({}, {}, {train_op}, nullptr);
//     if (!s.ok() && !absl::IsOutOfRange(s)) return s;  // Destruction: no End hooks.
//   }
//   return session->Close();  // End hooks, then close.

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "client/summary/summary_writer.h"
#include "client/training/coordinator.h"
#include "client/training/recoverable_session.h"
#include "client/training/session_creator.h"
#include "client/training/session_run_hook.h"
#include "client/training/trainer_metrics.h"
#include "client/training/wrapped_session.h"
#include "core/clock.h"
#include "core/tensor.h"
#include "proto/config.pb.h"

namespace overseer {

struct MonitoredTrainingSessionOptions;
class MonitoredSession;
class CheckpointSaverListener;
absl::StatusOr<std::unique_ptr<MonitoredSession>> MonitoredTrainingSession(
    const Scope& scope, const MonitoredTrainingSessionOptions& options);

// What a step function gets (TensorFlow's MonitoredSession.StepContext). Lives for one
// call of the step function.
class StepContext {
 public:
  StepContext(ClientSession* session, WrappedSession* hooked)
      : session_(session), hooked_(hooked) {}

  // The raw session: runs without hooks.
  ClientSession* session() const { return session_; }
  // A run with the hooks, as MonitoredSession::Run (return its errors from the step
  // function: recoverable ones rerun the whole step function on a new session).
  absl::Status RunWithHooks(const RunOptions& options, const std::vector<FeedPair>& feeds,
                            const std::vector<Output>& fetches,
                            const std::vector<Operation>& targets, std::vector<Tensor>* outputs,
                            RunMetadata* metadata) {
    return hooked_->Run(options, feeds, fetches, targets, outputs, metadata);
  }
  absl::Status RunWithHooks(const std::vector<FeedPair>& feeds, const std::vector<Output>& fetches,
                            const std::vector<Operation>& targets, std::vector<Tensor>* outputs) {
    return RunWithHooks(RunOptions(), feeds, fetches, targets, outputs, nullptr);
  }
  // Ends training after this step function returns: ShouldStop() becomes true (a clean
  // stop). TensorFlow raises StopIteration to leave the step function; here the step
  // function returns after calling it.
  void RequestStop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }

 private:
  ClientSession* const session_;
  WrappedSession* const hooked_;
  bool stop_requested_ = false;
};

// A step: any number of runs, with hooks (RunWithHooks) or without (session()).
using StepFn = std::function<absl::Status(StepContext& context)>;

struct MonitoredSessionOptions {
  // Time the coordinator's threads (queue runners) get to stop when the session closes.
  absl::Duration stop_grace_period = Coordinator::kDefaultStopGracePeriod;
  // Backoff and limits of recovery (MonitoredSession only).
  RecoveryOptions recovery;
  // Where backoff sleeps and the coordinator's waits read time. Required; not owned.
  Clock* clock = nullptr;
  // If set (not owned; outlives the session), told of every recovery
  // (client/training/trainer_metrics.h).
  TrainerMetrics* metrics = nullptr;
};

// Not thread-safe: one thread creates, runs, checks and closes it, and hooks are called
// from that thread. The Coordinator that coordinator() returns is thread-safe: other
// threads may report to it until the session is recreated or closed.
class MonitoredSession {
 public:
  // A monitored session of `scope`'s graph. `hooks` are borrowed, must outlive the
  // session and are called in order. Errors: INVALID_ARGUMENT for a null creator or
  // hook; a hook's Begin or AfterCreateSession error; the creator's errors (after
  // recovery gave up, for recoverable ones).
  static absl::StatusOr<std::unique_ptr<MonitoredSession>> Create(
      const Scope& scope, std::unique_ptr<SessionCreator> creator,
      std::vector<SessionRunHook*> hooks = {}, const MonitoredSessionOptions& options = {});

  // Closes the session if Close was not called, without calling the hooks' End (as
  // leaving TensorFlow's `with` block by an exception does). Errors are logged.
  virtual ~MonitoredSession();

  MonitoredSession(const MonitoredSession&) = delete;
  MonitoredSession& operator=(const MonitoredSession&) = delete;

  // Runs one step through the hooks (ClientSession::Run's arguments), recovering from
  // ABORTED and UNAVAILABLE (see RecoverableSession::Run). OUT_OF_RANGE (end of input)
  // is returned and is a clean stop: ShouldStop() becomes true and Close() calls the
  // hooks' End. Any other error ends training: ShouldStop() becomes true and Close()
  // does not call End. FAILED_PRECONDITION when closed, after training ended, or after
  // a hook requested stop ("Run called even after should_stop requested").
  absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                   const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata);
  absl::Status Run(const std::vector<FeedPair>& feeds, const std::vector<Output>& fetches,
                   const std::vector<Operation>& targets, std::vector<Tensor>* outputs) {
    return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
  }
  absl::Status Run(const std::vector<Output>& fetches, std::vector<Tensor>* outputs) {
    return Run({}, fetches, {}, outputs);
  }

  // Calls `step_fn` with a StepContext (TensorFlow's run_step_fn). A recoverable
  // error it returns reruns it on a new session (MonitoredSession only). Its result
  // counts as a Run's does; a RequestStop in it is a clean stop.
  absl::Status RunStepFn(const StepFn& step_fn);

  // Whether training should end: closed, ended (see Run), a hook or the step function
  // requested stop, or the coordinator stopped. Checking may recreate the session
  // after a recoverable error in the coordinator.
  bool ShouldStop();

  // Ends training: calls every hook's End (on a clean exit only: no run ended with an
  // error and no thread stopped the coordinator with one), then closes the session,
  // joining the coordinator's threads within stop_grace_period. Returns the first
  // error of End, of the coordinator's threads or of closing. FAILED_PRECONDITION
  // "MonitoredSession is already closed" on a second call.
  absl::Status Close();

  // The graph the session runs.
  ClientGraph* graph() const { return scope_.graph(); }
  // The current coordinator (its threads may report errors to it); null when closed.
  Coordinator* coordinator() const;
  bool closed() const { return closed_; }
  // Recoveries so far and the cause of the last (MonitoredSession only; 0 and OK for
  // SingularMonitoredSession).
  int recoveries() const;
  absl::Status last_recovery_cause() const;

 protected:
  MonitoredSession(const Scope& scope, std::unique_ptr<SessionCreator> creator,
                   std::vector<SessionRunHook*> hooks, const MonitoredSessionOptions& options);
  // Calls Begin on the hooks and creates the stack (recoverable or not).
  absl::Status Init(bool should_recover);
  // The current raw session; null when closed or being recreated.
  ClientSession* raw_session() const;

 private:
  friend absl::StatusOr<std::unique_ptr<MonitoredSession>> MonitoredTrainingSession(
      const Scope& scope, const MonitoredTrainingSessionOptions& options);

  // TensorFlow's _CoordinatedSessionCreator: a new ClientSession from the creator, a
  // new coordinator running the queue runners, the hooks' AfterCreateSession.
  absl::StatusOr<std::unique_ptr<WrappedSession>> CreateCoordinatedSession();
  CoordinatedSession* current() const;
  // FAILED_PRECONDITION unless a step may run.
  absl::Status CheckRunnable() const;
  // Records how a step ended; returns `status`.
  absl::Status Finish(absl::Status status);

  const Scope scope_;
  const std::vector<SessionRunHook*> hooks_;
  const MonitoredSessionOptions options_;
  const bool graph_was_finalized_;
  // What MonitoredTrainingSession gives the session to own (declared before the stack,
  // which is destroyed first): hooks, and listeners of those hooks (declared before
  // them: the hooks hold them).
  std::vector<std::unique_ptr<CheckpointSaverListener>> owned_listeners_;
  std::vector<std::unique_ptr<SessionRunHook>> owned_hooks_;
  std::unique_ptr<SummaryWriter> summary_writer_;
  // Called after a clean Close (MonitoredTrainingSession's job-done signal).
  std::function<void()> after_clean_close_;
  const std::unique_ptr<SessionCreator> creator_;
  std::unique_ptr<WrappedSession> stack_;
  RecoverableSession* recoverable_ = nullptr;  // In stack_, if recovering.
  bool closed_ = false;
  // A clean stop (end of input, step function) and why.
  bool stopped_ = false;
  // The error training ended with.
  absl::Status failed_;
};

// TensorFlow's SingularMonitoredSession: a chief's monitored session without recovery
// (ABORTED and UNAVAILABLE end it), whose raw session is accessible.
struct SingularMonitoredSessionOptions : ChiefSessionCreatorOptions {
  // Not owned; null: a default Scaffold.
  Scaffold* scaffold = nullptr;
  absl::Duration stop_grace_period = Coordinator::kDefaultStopGracePeriod;
};

class SingularMonitoredSession : public MonitoredSession {
 public:
  // As MonitoredSession::Create with a ChiefSessionCreator of `options`.
  static absl::StatusOr<std::unique_ptr<SingularMonitoredSession>> Create(
      const Scope& scope, std::vector<SessionRunHook*> hooks = {},
      const SingularMonitoredSessionOptions& options = {});

  // The raw session (to run without hooks, save, restore); null when closed.
  ClientSession* raw_session() const { return MonitoredSession::raw_session(); }

 private:
  using MonitoredSession::MonitoredSession;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_MONITORED_SESSION_H_

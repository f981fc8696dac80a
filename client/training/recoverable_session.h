#ifndef OVERSEER_CLIENT_TRAINING_RECOVERABLE_SESSION_H_
#define OVERSEER_CLIENT_TRAINING_RECOVERABLE_SESSION_H_

// RecoverableSession: the outer layer of a monitored session (TensorFlow's
// _RecoverableSession). A step that fails ABORTED or UNAVAILABLE (a task restarted or
// could not be reached) closes the session, backs off, recreates the session through
// its factory and runs the step again; so does a recoverable error while the session is
// created or checked for stop. Unlike TensorFlow, which retries at once and forever,
// the backoff is capped exponential on an injected clock and recovery gives up after a
// limit, returning the last error. Any other error is returned as is. Every recovery
// is logged with its cause and counted.

#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/training/wrapped_session.h"
#include "core/clock.h"

namespace overseer {

struct RecoveryOptions {
  // The wait before the first recreation of a series; it doubles for each further
  // one, up to max_backoff.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(10);
  // A series of recoverable errors (no successful step in between) gives up after
  // max_attempts recreations (0: no limit on the number)...
  int max_attempts = 0;
  // ...or once max_recovery_time has passed since its first error.
  absl::Duration max_recovery_time = absl::Minutes(10);
};

// Makes a new session for the layer to wrap (MonitoredSession's: a CoordinatedSession
// over the hooks and a fresh ClientSession from its SessionCreator).
using WrappedSessionFactory = std::function<absl::StatusOr<std::unique_ptr<WrappedSession>>()>;

// Told of each recovery (its cause) as it is counted, before the backoff, e.g. to count
// it in metrics. Called on the thread that runs the session.
using RecoveryObserver = std::function<void(const absl::Status& cause)>;

// Not thread-safe (one thread runs it), except recoveries() and last_recovery_cause().
class RecoverableSession : public WrappedSession {
 public:
  // Creates the first session, recovering from recoverable errors as Run does. Errors:
  // INVALID_ARGUMENT for a null factory or clock or a negative option; the factory's
  // other errors; the give-up error (see Run). `clock` (not owned) is slept on.
  // `on_recovery` (may be empty) is told of every recovery.
  static absl::StatusOr<std::unique_ptr<RecoverableSession>> Create(
      WrappedSessionFactory factory, const RecoveryOptions& options, Clock* clock,
      RecoveryObserver on_recovery = nullptr);
  ~RecoverableSession() override;

  // Runs the step on the current session, recreating it and running the step again
  // after each recoverable error. Returns the step's result, a non-recoverable error
  // of recreating the session, or, when recovery gives up, the last recoverable error
  // with its code and a message that says after how many attempts and how long.
  // FAILED_PRECONDITION after Close.
  absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                   const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override;

  // Run's recovery for any step: calls `step` with the current session, and again with
  // a new one after each recoverable error it returns (the whole step is rerun).
  absl::Status RunStep(const std::function<absl::Status(WrappedSession& session)>& step);

  // The session's ShouldStop. A recoverable error from it recreates the session and
  // returns false (training goes on); any other error returns true (it surfaces from
  // Close, through the coordinator). True when closed or when recovery failed (the
  // next Run returns why). Never an error.
  absl::StatusOr<bool> ShouldStop() override;

  // Closes the current session. Recoverable errors of closing are logged, not
  // returned (the task is gone anyway); when a recovery failed in ShouldStop, its error
  // is returned. Later calls do nothing.
  absl::Status Close() override;

  ClientGraph* graph() const override { return graph_; }

  // The current session; null when closed or while being recreated.
  WrappedSession* session() const { return session_.get(); }

  // Recoveries so far (each recoverable error that led to a new session), and the
  // error that caused the last one (OK if none). Thread-safe.
  int recoveries() const;
  absl::Status last_recovery_cause() const;

 private:
  // A series of recoverable errors without a successful step in between.
  struct Series {
    int attempts = 0;
    absl::Time start;
  };

  RecoverableSession(WrappedSessionFactory factory, const RecoveryOptions& options, Clock* clock,
                     RecoveryObserver on_recovery);
  // Makes session_, recovering from recoverable errors of the factory.
  absl::Status CreateSession(Series* series);
  // After recoverable error `cause` (`where` it happened): closes the session, counts
  // and logs the recovery and backs off; or returns the give-up error.
  absl::Status Recover(const absl::Status& cause, const char* where, Series* series);

  const WrappedSessionFactory factory_;
  const RecoveryOptions options_;
  Clock* const clock_;
  const RecoveryObserver on_recovery_;
  std::unique_ptr<WrappedSession> session_;
  ClientGraph* graph_ = nullptr;
  bool closed_ = false;
  // Why recovery failed in ShouldStop; returned by the next Run.
  absl::Status failed_;

  mutable absl::Mutex mu_;
  int recoveries_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_cause_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_RECOVERABLE_SESSION_H_

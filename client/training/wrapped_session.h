#ifndef OVERSEER_CLIENT_TRAINING_WRAPPED_SESSION_H_
#define OVERSEER_CLIENT_TRAINING_WRAPPED_SESSION_H_

// The layers of a monitored session (TensorFlow's _WrappedSession and its subclasses).
// MonitoredSession stacks them as
//
//   RecoverableSession -> CoordinatedSession -> HookedSessionLayer -> ClientSession
//
// (recoverable_session.h holds the first). Each layer runs steps through the one
// below, adds its own stop condition to ShouldStop, and closes the layers below.

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/graph/graph.h"
#include "client/session/client_session.h"
#include "client/training/coordinator.h"
#include "client/training/hooked_session.h"
#include "client/training/session_run_hook.h"
#include "core/tensor.h"
#include "proto/config.pb.h"

namespace overseer {

// ABORTED and UNAVAILABLE: a task restarted or could not be reached. A recoverable
// session recreates its session and reruns the step after them.
bool IsRecoverableError(const absl::Status& status);

// One layer. Not thread-safe: one thread runs, checks and closes it.
class WrappedSession {
 public:
  virtual ~WrappedSession() = default;

  // Runs one step (ClientSession::Run's arguments) through the layers below.
  virtual absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                           const std::vector<Output>& fetches,
                           const std::vector<Operation>& targets, std::vector<Tensor>* outputs,
                           RunMetadata* metadata) = 0;

  // TensorFlow's should_stop: true once the session should not be used any more (it is
  // closed, or this layer or one below asks to stop). An error when a layer's stop
  // condition carries one (a coordinator stopped with an error), for the layer above.
  virtual absl::StatusOr<bool> ShouldStop() = 0;

  // Closes this layer and the ones below. A second Close does nothing and returns OK.
  virtual absl::Status Close() = 0;

  // The graph the session runs.
  virtual ClientGraph* graph() const = 0;
};

// The innermost layer over a ClientSession (TensorFlow's _WrappedSession(sess)): runs
// it; stops only when closed; Close closes the session. The session is borrowed.
class ClientSessionLayer : public WrappedSession {
 public:
  explicit ClientSessionLayer(ClientSession* session) : session_(session) {}

  absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                   const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override;
  absl::StatusOr<bool> ShouldStop() override { return closed_; }
  absl::Status Close() override;
  ClientGraph* graph() const override { return session_->graph(); }

 private:
  ClientSession* const session_;
  bool closed_ = false;
};

// A HookedSession over a ClientSession it owns (TensorFlow's _HookedSession): every run
// goes through the hooks; a hook's stop request makes ShouldStop true, and a Run after
// it fails FAILED_PRECONDITION. The hooks are borrowed.
class HookedSessionLayer : public WrappedSession {
 public:
  HookedSessionLayer(std::unique_ptr<ClientSession> session, std::vector<SessionRunHook*> hooks);

  absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                   const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override;
  absl::StatusOr<bool> ShouldStop() override { return closed_ || hooked_.ShouldStop(); }
  absl::Status Close() override;
  ClientGraph* graph() const override { return session_->graph(); }

  // The raw session (runs without hooks).
  ClientSession* session() const { return session_.get(); }

 private:
  const std::unique_ptr<ClientSession> session_;
  HookedSession hooked_;
  bool closed_ = false;
};

// A layer with a Coordinator (TensorFlow's _CoordinatedSession): ShouldStop is true
// once the coordinator stops, and returns the error it was stopped with; a run error
// that is not recoverable is replaced by the coordinator's recorded error when that one
// is (the root cause, e.g. a queue runner that lost its ps); Close stops the
// coordinator and joins its threads (queue runners) within the grace period before
// closing the layers below.
class CoordinatedSession : public WrappedSession {
 public:
  CoordinatedSession(std::unique_ptr<WrappedSession> inner, std::shared_ptr<Coordinator> coord,
                     absl::Duration stop_grace_period = Coordinator::kDefaultStopGracePeriod);
  // Closes the session if Close was not called (errors are logged).
  ~CoordinatedSession() override;

  // FAILED_PRECONDITION after Close.
  absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                   const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override;
  absl::StatusOr<bool> ShouldStop() override;
  // Returns the coordinator's Join result: the error a thread stopped it with, or OK.
  // Errors of closing the layers below are logged, not returned (Join's say more).
  // Threads still running after the grace period are left to the coordinator.
  absl::Status Close() override;
  ClientGraph* graph() const override { return inner_->graph(); }

  Coordinator* coordinator() const { return coord_.get(); }
  WrappedSession* inner() const { return inner_.get(); }

 private:
  const std::unique_ptr<WrappedSession> inner_;
  // Declared after inner_: destroyed first, so its threads end before the session.
  const std::shared_ptr<Coordinator> coord_;
  const absl::Duration stop_grace_period_;
  bool closed_ = false;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_WRAPPED_SESSION_H_

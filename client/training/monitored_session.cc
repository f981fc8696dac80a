#include "client/training/monitored_session.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/training/checkpoint_saver_hook.h"
#include "client/training/queue_runner.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {

absl::StatusOr<std::unique_ptr<MonitoredSession>> MonitoredSession::Create(
    const Scope& scope, std::unique_ptr<SessionCreator> creator, std::vector<SessionRunHook*> hooks,
    const MonitoredSessionOptions& options) {
  std::unique_ptr<MonitoredSession> session(
      new MonitoredSession(scope, std::move(creator), std::move(hooks), options));
  RETURN_IF_ERROR(session->Init(/*should_recover=*/true));
  return session;
}

MonitoredSession::MonitoredSession(const Scope& scope, std::unique_ptr<SessionCreator> creator,
                                   std::vector<SessionRunHook*> hooks,
                                   const MonitoredSessionOptions& options)
    : scope_(scope),
      hooks_(std::move(hooks)),
      options_(options),
      graph_was_finalized_(scope.graph()->finalized()),
      creator_(std::move(creator)) {}

MonitoredSession::~MonitoredSession() {
  if (closed_) return;
  if (stack_ != nullptr) {
    absl::Status s = stack_->Close();
    if (!s.ok()) LOG(WARNING) << "Closing a monitored session on destruction: " << s;
  }
  if (!graph_was_finalized_) scope_.graph()->Unfinalize();
}

absl::Status MonitoredSession::Init(bool should_recover) {
  if (creator_ == nullptr)
    return absl::InvalidArgumentError("MonitoredSession: no session creator");
  if (options_.clock == nullptr) return absl::InvalidArgumentError("MonitoredSession: null clock");
  for (SessionRunHook* hook : hooks_) {
    if (hook == nullptr) return absl::InvalidArgumentError("MonitoredSession: a null hook");
  }
  for (SessionRunHook* hook : hooks_) RETURN_IF_ERROR(hook->Begin(scope_));
  if (should_recover) {
    ASSIGN_OR_RETURN(
        std::unique_ptr<RecoverableSession> recoverable,
        RecoverableSession::Create([this] { return CreateCoordinatedSession(); }, options_.recovery,
                                   options_.clock,
                                   [metrics = options_.metrics](const absl::Status& cause) {
                                     if (metrics != nullptr) metrics->Recovered(cause);
                                   }));
    recoverable_ = recoverable.get();
    stack_ = std::move(recoverable);
  } else {
    ASSIGN_OR_RETURN(stack_, CreateCoordinatedSession());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<WrappedSession>> MonitoredSession::CreateCoordinatedSession() {
  ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> raw, creator_->CreateSession());
  ClientSession* session = raw.get();
  if (session->graph() != scope_.graph()) {
    return absl::InvalidArgumentError(
        "MonitoredSession: the session creator made a session of another graph");
  }
  CoordinatorOptions coord_options;
  coord_options.clean_stop_codes = {};  // Every error a thread reports goes up the stack.
  coord_options.clock = options_.clock;
  auto coord = std::make_shared<Coordinator>(coord_options);
  auto coordinated = std::make_unique<CoordinatedSession>(
      std::make_unique<HookedSessionLayer>(std::move(raw), hooks_), coord,
      options_.stop_grace_period);
  absl::Status started = [&]() -> absl::Status {
    if (!scope_.graph()->GetCollection(GraphKeys::kQueueRunners).empty()) {
      RETURN_IF_ERROR(StartQueueRunners(session, coord.get()).status());
    }
    for (SessionRunHook* hook : hooks_)
      RETURN_IF_ERROR(hook->AfterCreateSession(session, coord.get()));
    return absl::OkStatus();
  }();
  if (!started.ok()) {
    absl::Status closed = coordinated->Close();
    if (!closed.ok()) LOG(WARNING) << "Closing a session that failed to start: " << closed;
    return started;
  }
  return coordinated;
}

CoordinatedSession* MonitoredSession::current() const {
  if (closed_ || stack_ == nullptr) return nullptr;
  // Every session of the stack below the recoverable layer is made by
  // CreateCoordinatedSession.
  WrappedSession* session = recoverable_ != nullptr ? recoverable_->session() : stack_.get();
  return static_cast<CoordinatedSession*>(session);
}

ClientSession* MonitoredSession::raw_session() const {
  CoordinatedSession* coordinated = current();
  if (coordinated == nullptr) return nullptr;
  return static_cast<HookedSessionLayer*>(coordinated->inner())->session();
}

Coordinator* MonitoredSession::coordinator() const {
  CoordinatedSession* coordinated = current();
  return coordinated == nullptr ? nullptr : coordinated->coordinator();
}

int MonitoredSession::recoveries() const {
  return recoverable_ == nullptr ? 0 : recoverable_->recoveries();
}

absl::Status MonitoredSession::last_recovery_cause() const {
  return recoverable_ == nullptr ? absl::OkStatus() : recoverable_->last_recovery_cause();
}

absl::Status MonitoredSession::CheckRunnable() const {
  if (closed_) return absl::FailedPreconditionError("MonitoredSession is closed");
  if (!failed_.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MonitoredSession: training already ended with an error: ", failed_.ToString()));
  }
  if (stopped_) {
    return absl::FailedPreconditionError(
        "Run called even after should_stop requested (end of input or a step function's "
        "RequestStop)");
  }
  return absl::OkStatus();
}

absl::Status MonitoredSession::Finish(absl::Status status) {
  if (status.ok()) return status;
  if (absl::IsOutOfRange(status)) {
    LOG(INFO) << "End of input, stopping: " << status;
    stopped_ = true;
  } else {
    failed_ = status;
  }
  return status;
}

absl::Status MonitoredSession::Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                                   const std::vector<Output>& fetches,
                                   const std::vector<Operation>& targets,
                                   std::vector<Tensor>* outputs, RunMetadata* metadata) {
  RETURN_IF_ERROR(CheckRunnable());
  return Finish(stack_->Run(options, feeds, fetches, targets, outputs, metadata));
}

absl::Status MonitoredSession::RunStepFn(const StepFn& step_fn) {
  RETURN_IF_ERROR(CheckRunnable());
  if (!step_fn) return absl::InvalidArgumentError("RunStepFn: no step function");
  bool stop_requested = false;
  auto step = [&](WrappedSession& session) -> absl::Status {
    // `session` is the coordinated session: runs through it go through the hooks.
    auto& coordinated = static_cast<CoordinatedSession&>(session);
    StepContext context(static_cast<HookedSessionLayer*>(coordinated.inner())->session(),
                        &coordinated);
    absl::Status s = step_fn(context);
    stop_requested = context.stop_requested();
    return s;
  };
  absl::Status s = recoverable_ != nullptr ? recoverable_->RunStep(step) : step(*stack_);
  if (stop_requested) {
    LOG(INFO) << "The step function requested stop";
    stopped_ = true;
  }
  return Finish(s);
}

bool MonitoredSession::ShouldStop() {
  if (closed_ || stopped_ || !failed_.ok()) return true;
  absl::StatusOr<bool> stop = stack_->ShouldStop();
  return !stop.ok() || *stop;
}

absl::Status MonitoredSession::Close() {
  if (closed_) return absl::FailedPreconditionError("MonitoredSession is already closed");
  absl::Status result;
  ClientSession* session = raw_session();
  Coordinator* coord = coordinator();
  const bool clean =
      failed_.ok() && session != nullptr && (coord == nullptr || coord->RequestedError().ok());
  if (clean) {
    // A server that restarts while the job ends (the chief's last checkpoint finds the
    // store restarting, the master lost the session) is recovered from as during
    // training: the session is recreated and the hooks' End goes on from the hook that
    // failed; hooks that ended are not ended again.
    size_t ended = 0;
    auto end_hooks = [&](WrappedSession&) -> absl::Status {
      for (; ended < hooks_.size(); ++ended) RETURN_IF_ERROR(hooks_[ended]->End(raw_session()));
      return absl::OkStatus();
    };
    result = recoverable_ != nullptr ? recoverable_->RunStep(end_hooks) : end_hooks(*stack_);
  } else {
    LOG(INFO) << "Closing after an error: the hooks' End is not called";
  }
  closed_ = true;
  absl::Status closed = stack_->Close();
  if (result.ok()) result = closed;
  if (!graph_was_finalized_) scope_.graph()->Unfinalize();
  if (summary_writer_ != nullptr) {
    absl::Status written = summary_writer_->Close();
    if (result.ok()) result = written;
  }
  if (clean && result.ok() && after_clean_close_) after_clean_close_();
  return result;
}

absl::StatusOr<std::unique_ptr<SingularMonitoredSession>> SingularMonitoredSession::Create(
    const Scope& scope, std::vector<SessionRunHook*> hooks,
    const SingularMonitoredSessionOptions& options) {
  MonitoredSessionOptions monitored;
  monitored.stop_grace_period = options.stop_grace_period;
  monitored.clock = options.clock;
  auto creator = std::make_unique<ChiefSessionCreator>(
      scope, options.scaffold, static_cast<const ChiefSessionCreatorOptions&>(options));
  std::unique_ptr<SingularMonitoredSession> session(
      new SingularMonitoredSession(scope, std::move(creator), std::move(hooks), monitored));
  RETURN_IF_ERROR(session->Init(/*should_recover=*/false));
  return session;
}

}  // namespace overseer

#include "client/training/wrapped_session.h"

#include <utility>

#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {

bool IsRecoverableError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAborted ||
         status.code() == absl::StatusCode::kUnavailable;
}

absl::Status ClientSessionLayer::Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                                     const std::vector<Output>& fetches,
                                     const std::vector<Operation>& targets,
                                     std::vector<Tensor>* outputs, RunMetadata* metadata) {
  if (closed_) return absl::FailedPreconditionError("Run on a closed session");
  return session_->Run(options, feeds, fetches, targets, outputs, metadata);
}

absl::Status ClientSessionLayer::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  return session_->Close();
}

HookedSessionLayer::HookedSessionLayer(std::unique_ptr<ClientSession> session,
                                       std::vector<SessionRunHook*> hooks)
    : session_(std::move(session)), hooked_(session_.get(), std::move(hooks)) {}

absl::Status HookedSessionLayer::Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                                     const std::vector<Output>& fetches,
                                     const std::vector<Operation>& targets,
                                     std::vector<Tensor>* outputs, RunMetadata* metadata) {
  if (closed_) return absl::FailedPreconditionError("Run on a closed session");
  if (hooked_.ShouldStop()) {
    return absl::FailedPreconditionError(
        "Run called even after should_stop requested (a hook asked the session to stop)");
  }
  return hooked_.Run(options, feeds, fetches, targets, outputs, metadata);
}

absl::Status HookedSessionLayer::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  return session_->Close();
}

CoordinatedSession::CoordinatedSession(std::unique_ptr<WrappedSession> inner,
                                       std::shared_ptr<Coordinator> coord,
                                       absl::Duration stop_grace_period)
    : inner_(std::move(inner)), coord_(std::move(coord)), stop_grace_period_(stop_grace_period) {}

CoordinatedSession::~CoordinatedSession() {
  if (closed_) return;
  absl::Status s = Close();
  if (!s.ok()) LOG(WARNING) << "Closing a coordinated session on destruction: " << s;
}

absl::Status CoordinatedSession::Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                                     const std::vector<Output>& fetches,
                                     const std::vector<Operation>& targets,
                                     std::vector<Tensor>* outputs, RunMetadata* metadata) {
  if (closed_) return absl::FailedPreconditionError("Run on a closed session");
  absl::Status s = inner_->Run(options, feeds, fetches, targets, outputs, metadata);
  if (s.ok() || IsRecoverableError(s)) return s;
  // A thread may have stopped the coordinator with the root cause of this error (a
  // queue runner that lost its ps leaves the step blocked, then cancelled): prefer a
  // recoverable root cause, so that the session is recreated.
  absl::Status root = coord_->RequestedError();
  if (IsRecoverableError(root)) {
    LOG(INFO) << "Run failed with " << s << "; the coordinator was stopped with " << root
              << ", which is returned instead";
    return root;
  }
  return s;
}

absl::StatusOr<bool> CoordinatedSession::ShouldStop() {
  if (closed_) return true;
  // An error a thread stopped the coordinator with goes up the stack.
  RETURN_IF_ERROR(coord_->RequestedError());
  if (coord_->ShouldStop()) return true;
  return inner_->ShouldStop();
}

absl::Status CoordinatedSession::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  coord_->RequestStop().IgnoreError();
  absl::Status joined = coord_->Join({}, stop_grace_period_, /*ignore_live_threads=*/true);
  absl::Status closed = inner_->Close();
  if (!closed.ok()) LOG(WARNING) << "Closing the session: " << closed;
  return joined;
}

}  // namespace overseer

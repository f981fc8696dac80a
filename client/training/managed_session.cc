#include "client/training/managed_session.h"

#include "client/training/supervisor.h"
#include "core/logging.h"

namespace overseer {

ManagedSession::~ManagedSession() {
  if (ended_) return;
  absl::Status s = End();
  if (!s.ok()) LOG(ERROR) << "Managed session ended with an error: " << s;
}

absl::Status ManagedSession::End(absl::Status body_status) {
  if (ended_) return absl::FailedPreconditionError("ManagedSession::End was called already");
  ended_ = true;
  if (!body_status.ok()) supervisor_->RequestStop(body_status).IgnoreError();
  absl::Status stopped = supervisor_->Stop({}, close_summary_writer_);
  // Closing unblocks anything still waiting in the session; its errors do not matter.
  session_->Close().IgnoreError();
  return stopped;
}

}  // namespace overseer

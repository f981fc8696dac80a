#ifndef OVERSEER_CLIENT_TRAINING_MANAGED_SESSION_H_
#define OVERSEER_CLIENT_TRAINING_MANAGED_SESSION_H_

// ManagedSession: what Supervisor::ManagedSession hands out (supervisor.h).
//
//   ASSIGN_OR_RETURN(auto managed, sv->ManagedSession(master));
//   absl::Status body;
//   for (int step = 0; body.ok() && step < 1000 && !sv->ShouldStop(); ++step) {
//     body = managed->session().Run({}, {}, {train}, nullptr);
//   }
//   RETURN_IF_ERROR(managed->End(body));

#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "client/session/client_session.h"
#include "proto/config.pb.h"

namespace overseer {

struct ManagedSessionOptions {
  std::optional<ConfigProto> config;
  bool start_standard_services = true;
  // Close the summary writer (after a STOP session log) when the session ends.
  bool close_summary_writer = true;
};

class Supervisor;

// TensorFlow's `with sv.managed_session(master) as sess:` block as a scope object:
// End (or the destructor) stops the supervisor's services and threads and closes the
// session. Not thread-safe; session() is thread-safe as ClientSession is.
class ManagedSession {
 public:
  // Ends the session unless End was called; an error is logged.
  ~ManagedSession();
  ManagedSession(const ManagedSession&) = delete;
  ManagedSession& operator=(const ManagedSession&) = delete;

  ClientSession& session() { return *session_; }
  ClientSession* operator->() { return session_.get(); }

  // Leaves the block: `body_status` (the training loop's result) is reported with
  // RequestStop, the services and threads are stopped within stop_grace_secs, the
  // session is closed (its errors ignored, as TensorFlow does). Returns the first error
  // reported to the coordinator (the body's, a service's or a queue runner's), except
  // OUT_OF_RANGE, which is a clean end of input; or Stop's error. FAILED_PRECONDITION
  // if called twice.
  absl::Status End(absl::Status body_status = absl::OkStatus());

 private:
  friend class Supervisor;
  ManagedSession(Supervisor* supervisor, std::unique_ptr<ClientSession> session,
                 bool close_summary_writer)
      : supervisor_(supervisor),
        session_(std::move(session)),
        close_summary_writer_(close_summary_writer) {}

  Supervisor* const supervisor_;
  std::unique_ptr<ClientSession> session_;
  const bool close_summary_writer_;
  bool ended_ = false;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_MANAGED_SESSION_H_

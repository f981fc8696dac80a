#ifndef OVERSEER_CLIENT_SESSION_JOB_H_
#define OVERSEER_CLIENT_SESSION_JOB_H_

// The end of a job (docs/design.md section 5): the chief, once training ended cleanly,
// tells the cluster through the master, so that ps and worker servers started with
// --exit_when_job_done drain and exit 0 instead of serving forever (TensorFlow's ps
// blocks forever). Part of //client/session:grpc_session.
//
//   RETURN_IF_ERROR(SignalJobDone(options.target, "training finished at step 1000"));

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace overseer {

// Asks the master at `target` ("grpc://host:port") to forward JobDone to every task of
// its cluster matching `device_filters` (the chief session's; empty: every task);
// `reason` goes to the tasks' logs. Blocks until every task was told
// (each call has a deadline; UNAVAILABLE is retried with backoff for up to 30 s).
// OK and nothing to do for the in-process target "". UNAVAILABLE when the master
// cannot be reached or some task could not be told (the message names them);
// INVALID_ARGUMENT for another form of target. Thread-safe.
absl::Status SignalJobDone(const std::string& target, const std::string& reason = "",
                           const std::vector<std::string>& device_filters = {});

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_JOB_H_

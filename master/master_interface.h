#ifndef OVERSEER_MASTER_MASTER_INTERFACE_H_
#define OVERSEER_MASTER_MASTER_INTERFACE_H_

// The master as its clients (GrpcSession) see it. Implementations: Master
// (master/master.h, in the same process) and GrpcMaster (master/rpc/grpc_master.h).
//
// Every method blocks until done and is thread-safe. Common errors:
//   ABORTED      unknown session handle (the master restarted or collected the
//                session), or a task of the session restarted (the message names it):
//                recreate the session.
//   UNAVAILABLE  a task (or, over gRPC, the master) cannot be reached.
//   INVALID_ARGUMENT  bad graph, feed, fetch or target, naming the node or tensor.
// Mutating calls carry a request_id: a retry with the same id applies once and
// returns the first call's result.

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "proto/master.pb.h"

namespace overseer {

class MasterInterface {
 public:
  virtual ~MasterInterface() = default;

  // Validates the graph, waits (up to the session deadline) for every task that
  // config.device_filters selects to answer GetStatus and creates a worker session on
  // each. UNAVAILABLE naming every task that did not answer.
  virtual absl::Status CreateSession(const CreateSessionRequest& request,
                                     CreateSessionResponse* response) = 0;
  // CreateSession for a caller that gives up at `deadline` (the gRPC call's): the
  // master waits for the tasks no longer than that. By default, CreateSession.
  virtual absl::Status CreateSessionWithDeadline(const CreateSessionRequest& request,
                                                 CreateSessionResponse* response,
                                                 absl::Time /*deadline*/) {
    return CreateSession(request, response);
  }
  // Adds nodes. FAILED_PRECONDITION when current_graph_version is not the session's
  // (another extension won); INVALID_ARGUMENT for a bad or duplicate node.
  virtual absl::Status ExtendSession(const ExtendSessionRequest& request,
                                     ExtendSessionResponse* response) = 0;
  // Runs one step (see Session::Run). DEADLINE_EXCEEDED after options.timeout_in_ms
  // (else the session's operation_timeout_in_ms).
  virtual absl::Status RunStep(const RunStepRequest& request, RunStepResponse* response) = 0;
  // RunStep without blocking the caller: `done` is called once with RunStep's status,
  // on any thread. `request` and `cancellation` (optional: cancels the step, CANCELLED)
  // must live until then. The master may keep `response` after `done` (to answer a
  // retry of the request id), so nothing may change it after `done`. The default runs
  // RunStep on a process-wide thread pool (and ignores `cancellation`).
  virtual void RunStepAsync(const RunStepRequest* request,
                            std::shared_ptr<RunStepResponse> response,
                            CancellationManager* cancellation,
                            std::function<void(absl::Status)> done);
  // Forgets the session and its worker sessions (variables stay). OK for an unknown
  // handle.
  virtual absl::Status CloseSession(const CloseSessionRequest& request,
                                    CloseSessionResponse* response) = 0;
  virtual absl::Status ListDevices(const ListDevicesRequest& request,
                                   ListDevicesResponse* response) = 0;
  // Clears resource containers on every (filtered) task and closes every session.
  virtual absl::Status Reset(const ResetRequest& request, ResetResponse* response) = 0;
  // Prepares a partial run (see Session::PartialRunSetup); its calls are RunSteps
  // naming the handle (RunStepRequest.partial_run_handle). The default returns
  // UNIMPLEMENTED.
  virtual absl::Status PartialRunSetup(const PartialRunSetupRequest& request,
                                       PartialRunSetupResponse* response);
  // Prepares a signature (see Session::MakeCallable); the handle is valid until
  // ReleaseCallable or the session's end.
  virtual absl::Status MakeCallable(const MakeCallableRequest& request,
                                    MakeCallableResponse* response) = 0;
  // INVALID_ARGUMENT for a released or never made callable handle or a wrong number of
  // feeds.
  virtual absl::Status RunCallable(const RunCallableRequest& request,
                                   RunCallableResponse* response) = 0;
  // RunCallable as RunStepAsync runs RunStep.
  virtual void RunCallableAsync(const RunCallableRequest* request,
                                std::shared_ptr<RunCallableResponse> response,
                                CancellationManager* cancellation,
                                std::function<void(absl::Status)> done);
  // OK for a released handle (so a retry is harmless); INVALID_ARGUMENT for one the
  // session never made.
  virtual absl::Status ReleaseCallable(const ReleaseCallableRequest& request,
                                       ReleaseCallableResponse* response) = 0;
};

// Whether a step run with `options` may run on its task without the master
// (RunStepRequest.direct_ok): they ask for nothing that only the master does (a trace,
// partition graphs) but a timeout, which RunGraph carries.
bool DirectStepOptions(const RunOptions& options);

}  // namespace overseer

#endif  // OVERSEER_MASTER_MASTER_INTERFACE_H_

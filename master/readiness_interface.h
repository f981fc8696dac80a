#ifndef OVERSEER_MASTER_READINESS_INTERFACE_H_
#define OVERSEER_MASTER_READINESS_INTERFACE_H_

// The master's readiness and job-end calls (docs/design.md section 5), as their clients
// (client/session/grpc_readiness.cc) see them. Implementations: Master (master/master.h, in the
// same process) and GrpcMaster (master/rpc/grpc_master.h).
//
// Readiness is pushed, not polled: the chief, once its model is initialised or
// restored, calls MarkReady; other trainers block in WaitForReady and are released as
// soon as the mark lands. The master remembers the incarnation of every task of the
// cluster at MarkReady and withdraws the mark as soon as it sees one of them restarted
// (another incarnation) or dead. Records live in the master's memory only: a restarted
// master has none, and waits on it time out not ready.
//
// Every method is thread-safe. Over gRPC, UNAVAILABLE means the master cannot be
// reached.

#include "absl/status/status.h"
#include "core/cancellation.h"
#include "proto/master.pb.h"

namespace overseer {

class MasterReadinessInterface {
 public:
  virtual ~MasterReadinessInterface() = default;

  // Records that the model `request.key` is ready, with the incarnation of every task
  // of the cluster (each asked with GetStatus, with a deadline), and releases every
  // waiter on the key. Marking again refreshes the record. UNAVAILABLE naming every
  // task that did not answer (nothing is recorded then).
  virtual absl::Status MarkReady(const MarkReadyRequest& request, MarkReadyResponse* response) = 0;

  // Removes the record of `request.key`. OK if there is none (idempotent).
  virtual absl::Status WithdrawReady(const WithdrawReadyRequest& request,
                                     WithdrawReadyResponse* response) = 0;

  // Blocks until `request.key` is ready or `request.timeout_ms` passes (capped by the
  // master, 60 s by default), then answers response.ready, with response.reason saying
  // why not. Before answering ready the master checks that the recorded tasks still
  // run the recorded incarnations (unless that was just checked); a record that fails
  // the check is withdrawn (logged, naming the task) and the wait goes on.
  // RESOURCE_EXHAUSTED when too many calls are already waiting.
  virtual absl::Status WaitForReady(const WaitForReadyRequest& request,
                                    WaitForReadyResponse* response) = 0;
  // WaitForReady that also ends when `cancellation` (not owned; may be null) is
  // cancelled: CANCELLED, so that a wait whose caller gave up (its call cancelled, past
  // its deadline, its process gone) stops holding a server thread and a waiter slot.
  // The default waits as WaitForReady does, whatever `cancellation` says.
  virtual absl::Status WaitForReadyCancellable(const WaitForReadyRequest& request,
                                               WaitForReadyResponse* response,
                                               CancellationManager* /*cancellation*/) {
    return WaitForReady(request, response);
  }

  // The chief ended training cleanly: forwards JobDone to every task of the cluster
  // (in parallel, each with a deadline). UNAVAILABLE naming the tasks that could not
  // be told (the others were).
  virtual absl::Status JobDone(const JobDoneRequest& request, JobDoneResponse* response) = 0;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_READINESS_INTERFACE_H_

#ifndef OVERSEER_WORKER_WORKER_INTERFACE_H_
#define OVERSEER_WORKER_WORKER_INTERFACE_H_

// A worker (ps or worker task) as its callers see it: the master drives it, and
// workers call RecvTensor on each other. Implementations: Worker (worker/worker.h, in
// the same process) and GrpcWorker (worker/rpc/grpc_worker.h, over gRPC).
//
// Every method blocks until the call is done and is thread-safe. Common errors:
//   ABORTED      unknown session_handle (the worker restarted or the session was
//                deleted): recreate the session.
//   UNAVAILABLE  the worker cannot be reached (over gRPC: dead or unreachable peer;
//                returned within the call's deadline, never a hang).
//   DEADLINE_EXCEEDED  the call's deadline passed.

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "core/cancellation.h"
#include "core/tensor.h"
#include "proto/worker.pb.h"

namespace overseer {

class WorkerInterface {
 public:
  virtual ~WorkerInterface() = default;

  // Devices ("/job:J/replica:0/task:I/device:CPU:0") and the process incarnation.
  virtual absl::Status GetStatus(const GetStatusRequest& request, GetStatusResponse* response) = 0;

  // Creates a worker session under the master's handle. Creating an existing handle
  // again is OK and keeps the existing session (idempotent). INVALID_ARGUMENT for an
  // empty handle or a cluster that does not contain this task.
  virtual absl::Status CreateWorkerSession(const CreateWorkerSessionRequest& request,
                                           CreateWorkerSessionResponse* response) = 0;

  // Deletes the session and its registered graphs. Resource containers (variables,
  // queues) are NOT cleared: they are shared by every session of the worker. OK for
  // an unknown handle (idempotent).
  virtual absl::Status DeleteWorkerSession(const DeleteWorkerSessionRequest& request,
                                           DeleteWorkerSessionResponse* response) = 0;

  // Validates the partition and builds its executor. INVALID_ARGUMENT naming the
  // node for a malformed graph, an unknown op, bad attrs or a node placed on another
  // task; ABORTED for an unknown session.
  virtual absl::Status RegisterGraph(const RegisterGraphRequest& request,
                                     RegisterGraphResponse* response) = 0;

  // Forgets a registered graph. NOT_FOUND for an unknown graph handle; ABORTED for an
  // unknown session.
  virtual absl::Status DeregisterGraph(const DeregisterGraphRequest& request,
                                       DeregisterGraphResponse* response) = 0;

  // Runs one step of a registered graph: delivers `send` to the step's rendezvous,
  // runs the executor, and returns the tensors under `recv_key`. Several graphs (of
  // several tasks) share a step through step_id. Errors: those of the graph's
  // kernels (prefixed with the node), INVALID_ARGUMENT for a feed that does not
  // parse, NOT_FOUND for an unknown graph handle, ABORTED for an unknown session,
  // DEADLINE_EXCEEDED after timeout_in_ms, CANCELLED if CleanupGraph cancelled the
  // step, or the error of a peer the step received from (UNAVAILABLE, ABORTED for a
  // restarted producer).
  virtual absl::Status RunGraph(const RunGraphRequest& request, RunGraphResponse* response) = 0;

  // RunGraph without blocking the caller: `done` is called once, with what RunGraph
  // would return, on another thread (or on this one if the call fails before it
  // starts). `request` and `response` must live until then. `cancellation` (optional,
  // not owned, must outlive the call) ends the call early with CANCELLED when it starts
  // cancelling (over gRPC the worker then sees its caller give up and cancels the step).
  // The default runs RunGraph on a process-wide thread pool that grows rather than make
  // a call wait, so partitions of one step that wait on each other never deadlock;
  // GrpcWorker overrides it with an asynchronous call.
  virtual void RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response,
                             CancellationManager* cancellation,
                             std::function<void(absl::Status)> done);

  // Ends a step on this worker: a RunGraph or RecvTensor of the step still waiting is
  // cancelled (CANCELLED) and the step's rendezvous is freed. Always OK (also for a
  // step the worker never saw).
  virtual absl::Status CleanupGraph(const CleanupGraphRequest& request,
                                    CleanupGraphResponse* response) = 0;

  // Clears the listed resource containers (all of them when the list is empty) in
  // this worker's ResourceMgr, shared by every session.
  virtual absl::Status CleanupAll(const CleanupAllRequest& request,
                                  CleanupAllResponse* response) = 0;

  // Waits for the tensor that a _Send on this worker produces under
  // request.rendezvous_key in step request.step_id and returns it in `tensor`.
  // `cancellation` (optional, not owned) aborts the wait with CANCELLED when it
  // starts cancelling. Errors: ABORTED when the key names another incarnation of
  // this worker (the producer restarted), INVALID_ARGUMENT for a malformed key,
  // DEADLINE_EXCEEDED after timeout_in_ms, CANCELLED when the step was cleaned up or
  // cancelled, UNAVAILABLE when the worker cannot be reached.
  virtual absl::Status RecvTensor(const RecvTensorRequest& request,
                                  CancellationManager* cancellation, Tensor* tensor) = 0;

  // RecvTensor without blocking the caller: `done` is called once, with the tensor or
  // what RecvTensor would return, on another thread (or on this one if the call fails
  // before it starts); it must not block. `cancellation` (optional, not owned) must
  // outlive the call. The default runs RecvTensor on the pool RunGraphAsync uses;
  // GrpcWorker overrides it with an asynchronous call read by its loop.
  virtual void RecvTensorAsync(const RecvTensorRequest& request, CancellationManager* cancellation,
                               std::function<void(absl::StatusOr<Tensor>)> done);

  // The job ended cleanly (the chief finished training). The task logs it and then,
  // if it was told to (worker_server --exit_when_job_done), drains and exits; else it
  // keeps serving. Always OK; idempotent.
  virtual absl::Status JobDone(const JobDoneRequest& request, JobDoneResponse* response) = 0;
};

}  // namespace overseer

#endif  // OVERSEER_WORKER_WORKER_INTERFACE_H_

#ifndef OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_
#define OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_

// Puts a MasterInterface (and MasterReadinessInterface) on gRPC: unpacks each call,
// runs the logic, converts the status, and records the master's metrics:
//   overseer_master_steps_total, overseer_master_step_latency_seconds (RunStep and
//   RunCallable), overseer_master_direct_steps_total (the steps clients report they ran
//   on a task themselves, RunStepRequest.direct_steps_run) in the registry, and in
//   rpc_metrics() (core/metrics/rpc_metrics.h)
//   overseer_master_rpc_latency_seconds{method} and
//   overseer_master_rpc_errors_total{method,code} for every method.
// (The session and readiness metrics come from the Master's listeners,
// master/rpc/session_metrics.h and master/rpc/readiness_metrics.h.)
//
// RunStep and RunCallable are asynchronous methods served on a CompletionQueueLoop
// (core/rpc/completion_queue_loop.h): a step arrives on the loop's thread, which
// starts its RunGraph calls (on the same queue when the master's GrpcWorkers use the
// loop) and, as their last reply arrives, finishes the step and sends the reply,
// without waking another thread. A step whose client gives up (cancels, passes its
// deadline or goes away), or that is still running when the server shuts down, is
// cancelled: its RunGraph calls end, and the workers cancel their part.
//
// With security on (core/rpc/security.h) a RunStep's direct_ok is ignored: a worker's
// RunGraph is the master's identities' alone, so no client may run a step directly.
//
// The other methods are synchronous: a WaitForReady holds one server thread while it waits,
// at most MasterOptions.readiness.max_wait (60 s). gRPC's sync server has no thread
// limit by default (ServerRunner sets none), so blocked waiters never starve other
// calls; the master bounds them with ReadinessOptions.max_waiters and answers them all
// when termination starts (Master::StopReadinessWaits).

#include <functional>
#include <memory>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/metrics/rpc_metrics.h"
#include "core/rpc/async_unary_call.h"
#include "core/rpc/completion_queue_loop.h"
#include "core/rpc/security.h"
#include "master/master_interface.h"
#include "master/readiness_interface.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/master.grpc.pb.h"

namespace overseer {

// Thread-safe.
class GrpcMasterService final
    : public MasterService::WithAsyncMethod_RunStep<
          MasterService::WithAsyncMethod_RunCallable<MasterService::Service>> {
 public:
  // `master`, `metrics` and `loop` are not owned and outlive this object. `loop` serves
  // RunStep and RunCallable: add it to the same server (ServerRunner::
  // AddCompletionQueueLoop) before it starts. `readiness`
  // (not owned) serves MarkReady, WithdrawReady, WaitForReady and JobDone; null:
  // `master` if it implements MasterReadinessInterface too (Master does), else those
  // calls are UNIMPLEMENTED.
  GrpcMasterService(MasterInterface* master, prometheus::Registry* metrics,
                    CompletionQueueLoop* loop, MasterReadinessInterface* readiness = nullptr);

  // Every method's latency and errors; serve it with the registry
  // (ServerRunner::AddCollectable).
  std::shared_ptr<RpcMetrics> rpc_metrics() const { return rpc_metrics_; }

  grpc::Status CreateSession(grpc::ServerContext*, const CreateSessionRequest* request,
                             CreateSessionResponse* response) override;
  grpc::Status ExtendSession(grpc::ServerContext*, const ExtendSessionRequest* request,
                             ExtendSessionResponse* response) override;
  grpc::Status CloseSession(grpc::ServerContext*, const CloseSessionRequest* request,
                            CloseSessionResponse* response) override;
  grpc::Status ListDevices(grpc::ServerContext*, const ListDevicesRequest* request,
                           ListDevicesResponse* response) override;
  grpc::Status Reset(grpc::ServerContext*, const ResetRequest* request,
                     ResetResponse* response) override;
  grpc::Status PartialRunSetup(grpc::ServerContext*, const PartialRunSetupRequest* request,
                               PartialRunSetupResponse* response) override;
  grpc::Status MakeCallable(grpc::ServerContext*, const MakeCallableRequest* request,
                            MakeCallableResponse* response) override;
  grpc::Status ReleaseCallable(grpc::ServerContext*, const ReleaseCallableRequest* request,
                               ReleaseCallableResponse* response) override;
  grpc::Status MarkReady(grpc::ServerContext*, const MarkReadyRequest* request,
                         MarkReadyResponse* response) override;
  grpc::Status WithdrawReady(grpc::ServerContext*, const WithdrawReadyRequest* request,
                             WithdrawReadyResponse* response) override;
  grpc::Status WaitForReady(grpc::ServerContext*, const WaitForReadyRequest* request,
                            WaitForReadyResponse* response) override;
  grpc::Status JobDone(grpc::ServerContext*, const JobDoneRequest* request,
                       JobDoneResponse* response) override;

 private:
  // Runs an arrived call's step and replies.
  template <typename Request, typename Response>
  void Serve(AsyncUnaryCall<Request, Response>* call);

  // Records a call of `method` that arrived at `start` and converts its status.
  grpc::Status Finish(RpcMetrics::Method* method, absl::Time start, const absl::Status& status);
  // Runs `call` on the readiness logic if the caller has `permission` for method
  // `name` (core/rpc/security.h), or UNIMPLEMENTED without readiness logic.
  grpc::Status Readiness(const grpc::ServerContext& context, Permission permission,
                         absl::string_view name, RpcMetrics::Method* method,
                         const std::function<absl::Status(MasterReadinessInterface*)>& call);

  MasterInterface* const master_;
  CompletionQueueLoop* const loop_;
  MasterReadinessInterface* const readiness_;
  prometheus::Counter* steps_;
  prometheus::Counter* direct_steps_;
  prometheus::Histogram* step_latency_;
  const std::shared_ptr<RpcMetrics> rpc_metrics_;
  // rpc_metrics_'s methods.
  RpcMetrics::Method* const create_session_;
  RpcMetrics::Method* const extend_session_;
  RpcMetrics::Method* const run_step_;
  RpcMetrics::Method* const close_session_;
  RpcMetrics::Method* const list_devices_;
  RpcMetrics::Method* const reset_;
  RpcMetrics::Method* const partial_run_setup_;
  RpcMetrics::Method* const make_callable_;
  RpcMetrics::Method* const run_callable_;
  RpcMetrics::Method* const release_callable_;
  RpcMetrics::Method* const mark_ready_;
  RpcMetrics::Method* const withdraw_ready_;
  RpcMetrics::Method* const wait_for_ready_;
  RpcMetrics::Method* const job_done_;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_

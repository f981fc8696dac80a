#ifndef OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_
#define OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_

// Puts a MasterInterface (and MasterReadinessInterface) on gRPC: unpacks each call,
// runs the logic, converts the status, and records the master's metrics:
//   overseer_master_steps_total, overseer_master_step_latency_seconds (RunStep and
//   RunCallable), overseer_master_rpc_errors_total{code}, overseer_master_sessions_open.
// (The readiness metrics come from ReadinessMetrics, master/rpc/readiness_metrics.h.)
//
// RunStep and RunCallable are asynchronous methods served on a CompletionQueueLoop
// (core/rpc/completion_queue_loop.h): a step arrives on the loop's thread, which
// starts its RunGraph calls (on the same queue when the master's GrpcWorkers use the
// loop) and, as their last reply arrives, finishes the step and sends the reply,
// without waking another thread. A step whose client gives up (cancels, passes its
// deadline or goes away), or that is still running when the server shuts down, is
// cancelled: its RunGraph calls end, and the workers cancel their part.
//
// The other methods are synchronous: a WaitForReady holds one server thread while it waits,
// at most MasterOptions.readiness.max_wait (60 s). gRPC's sync server has no thread
// limit by default (ServerRunner sets none), so blocked waiters never starve other
// calls; the master bounds them with ReadinessOptions.max_waiters and answers them all
// when termination starts (Master::StopReadinessWaits).

#include <functional>

#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/rpc/async_unary_call.h"
#include "core/rpc/completion_queue_loop.h"
#include "master/master_interface.h"
#include "master/readiness_interface.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/master.grpc.pb.h"

namespace overseer {

// Thread-safe.
class GrpcMasterService final
    : public MasterService::WithAsyncMethod_RunStep<
          MasterService::WithAsyncMethod_RunCallable<MasterService::Service>> {
 public:
  // `master`, `metrics` and `loop` are not owned and outlive this object. `open_sessions`
  // reports the number of open sessions for the gauge (may be empty). `loop` serves
  // RunStep and RunCallable: add it to the same server (ServerRunner::
  // AddCompletionQueueLoop) before it starts. `readiness`
  // (not owned) serves MarkReady, WithdrawReady, WaitForReady and JobDone; null:
  // `master` if it implements MasterReadinessInterface too (Master does), else those
  // calls are UNIMPLEMENTED.
  GrpcMasterService(MasterInterface* master, prometheus::Registry* metrics,
                    std::function<int()> open_sessions, CompletionQueueLoop* loop,
                    MasterReadinessInterface* readiness = nullptr);

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

  grpc::Status Finish(const absl::Status& status);
  // Records a finished step.
  void StepDone(absl::Time start, const absl::Status& status);
  // Runs `call` on the readiness logic, or UNIMPLEMENTED without one.
  grpc::Status Readiness(const std::function<absl::Status(MasterReadinessInterface*)>& call);

  MasterInterface* const master_;
  CompletionQueueLoop* const loop_;
  MasterReadinessInterface* const readiness_;
  const std::function<int()> open_sessions_;
  prometheus::Counter* steps_;
  prometheus::Histogram* step_latency_;
  prometheus::Family<prometheus::Counter>* rpc_errors_;
  prometheus::Gauge* sessions_open_;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_

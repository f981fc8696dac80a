#ifndef OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_
#define OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_

// Puts a MasterInterface (and MasterReadinessInterface) on gRPC: unpacks each call,
// runs the logic, converts the status, and records the master's metrics:
//   overseer_master_steps_total, overseer_master_step_latency_seconds (RunStep and
//   RunCallable), overseer_master_rpc_errors_total{code}, overseer_master_sessions_open.
// (The readiness metrics come from ReadinessMetrics, master/rpc/readiness_metrics.h.)
//
// The server is synchronous: a WaitForReady holds one server thread while it waits,
// at most MasterOptions.readiness.max_wait (60 s). gRPC's sync server has no thread
// limit by default (ServerRunner sets none), so blocked waiters never starve other
// calls; the master bounds them with ReadinessOptions.max_waiters and answers them all
// when termination starts (Master::StopReadinessWaits).

#include <functional>

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
class GrpcMasterService final : public MasterService::Service {
 public:
  // `master` and `metrics` are not owned and outlive this object. `open_sessions`
  // reports the number of open sessions for the gauge (may be empty). `readiness`
  // (not owned) serves MarkReady, WithdrawReady, WaitForReady and JobDone; null:
  // `master` if it implements MasterReadinessInterface too (Master does), else those
  // calls are UNIMPLEMENTED.
  GrpcMasterService(MasterInterface* master, prometheus::Registry* metrics,
                    std::function<int()> open_sessions,
                    MasterReadinessInterface* readiness = nullptr);

  grpc::Status CreateSession(grpc::ServerContext*, const CreateSessionRequest* request,
                             CreateSessionResponse* response) override;
  grpc::Status ExtendSession(grpc::ServerContext*, const ExtendSessionRequest* request,
                             ExtendSessionResponse* response) override;
  grpc::Status RunStep(grpc::ServerContext*, const RunStepRequest* request,
                       RunStepResponse* response) override;
  grpc::Status CloseSession(grpc::ServerContext*, const CloseSessionRequest* request,
                            CloseSessionResponse* response) override;
  grpc::Status ListDevices(grpc::ServerContext*, const ListDevicesRequest* request,
                           ListDevicesResponse* response) override;
  grpc::Status Reset(grpc::ServerContext*, const ResetRequest* request,
                     ResetResponse* response) override;
  grpc::Status MakeCallable(grpc::ServerContext*, const MakeCallableRequest* request,
                            MakeCallableResponse* response) override;
  grpc::Status RunCallable(grpc::ServerContext*, const RunCallableRequest* request,
                           RunCallableResponse* response) override;
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
  grpc::Status Finish(const absl::Status& status);
  grpc::Status Step(const std::function<absl::Status()>& run);
  // Runs `call` on the readiness logic, or UNIMPLEMENTED without one.
  grpc::Status Readiness(const std::function<absl::Status(MasterReadinessInterface*)>& call);

  MasterInterface* const master_;
  MasterReadinessInterface* const readiness_;
  const std::function<int()> open_sessions_;
  prometheus::Counter* steps_;
  prometheus::Histogram* step_latency_;
  prometheus::Family<prometheus::Counter>* rpc_errors_;
  prometheus::Gauge* sessions_open_;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_

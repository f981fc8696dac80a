#ifndef OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_
#define OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_

// Puts a MasterInterface on gRPC: unpacks each call, runs the logic, converts the
// status, and records the master's metrics:
//   overseer_master_steps_total, overseer_master_step_latency_seconds (RunStep and
//   RunCallable), overseer_master_rpc_errors_total{code}, overseer_master_sessions_open.

#include <functional>

#include "master/master_interface.h"
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
  // reports the number of open sessions for the gauge (may be empty).
  GrpcMasterService(MasterInterface* master, prometheus::Registry* metrics,
                    std::function<int()> open_sessions);

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

 private:
  grpc::Status Finish(const absl::Status& status);
  grpc::Status Step(const std::function<absl::Status()>& run);

  MasterInterface* const master_;
  const std::function<int()> open_sessions_;
  prometheus::Counter* steps_;
  prometheus::Histogram* step_latency_;
  prometheus::Family<prometheus::Counter>* rpc_errors_;
  prometheus::Gauge* sessions_open_;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_RPC_GRPC_MASTER_SERVICE_H_

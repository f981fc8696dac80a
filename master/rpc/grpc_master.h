#ifndef OVERSEER_MASTER_RPC_GRPC_MASTER_H_
#define OVERSEER_MASTER_RPC_GRPC_MASTER_H_

// GrpcMaster: MasterInterface and MasterReadinessInterface over a gRPC channel. Every
// call carries a deadline (`timeout`; for RunStep the step's timeout_in_ms plus a
// margin when that is longer, or `max_step_time` without one, as for RunCallable; for
// WaitForReady its timeout_ms plus kWaitForReadyMargin). Messages of any size up to 2 GiB are
// accepted (gRPC's 4 MiB default receive limit is lifted on the channel GrpcMaster makes). No
// retries here: the caller (GrpcSession) retries UNAVAILABLE for idempotent calls.

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "core/rpc/keepalive.h"
#include "grpcpp/channel.h"
#include "master/master_interface.h"
#include "master/readiness_interface.h"
#include "proto/master.grpc.pb.h"

namespace overseer {

// A channel to `address` ("host:port") with unlimited message sizes and gRPC's own
// retries off (a call that fails is the caller's to retry), pinging the master while
// calls are open (core/rpc/keepalive.h).
std::shared_ptr<grpc::Channel> NewMasterChannel(const std::string& address,
                                                absl::Duration keepalive = kDefaultKeepalive);

// How long a step without a timeout (RunOptions.timeout_in_ms) may run: a peer that
// stops answering is found by keepalive, not by this deadline.
inline constexpr absl::Duration kDefaultMaxStepTime = absl::Hours(24);

// How much longer than its timeout_ms a WaitForReady call may take before the client
// gives up on the master.
inline constexpr absl::Duration kWaitForReadyMargin = absl::Seconds(2);

// Thread-safe.
class GrpcMaster : public MasterInterface, public MasterReadinessInterface {
 public:
  // `timeout`: the deadline of every call but a step's; RunStep and RunCallable without
  // a timeout of their own get `max_step_time`.
  GrpcMaster(std::shared_ptr<grpc::Channel> channel, absl::Duration timeout,
             absl::Duration max_step_time = kDefaultMaxStepTime);

  absl::Status CreateSession(const CreateSessionRequest& request,
                             CreateSessionResponse* response) override;
  absl::Status ExtendSession(const ExtendSessionRequest& request,
                             ExtendSessionResponse* response) override;
  absl::Status RunStep(const RunStepRequest& request, RunStepResponse* response) override;
  absl::Status CloseSession(const CloseSessionRequest& request,
                            CloseSessionResponse* response) override;
  absl::Status ListDevices(const ListDevicesRequest& request,
                           ListDevicesResponse* response) override;
  absl::Status Reset(const ResetRequest& request, ResetResponse* response) override;
  absl::Status PartialRunSetup(const PartialRunSetupRequest& request,
                               PartialRunSetupResponse* response) override;
  absl::Status MakeCallable(const MakeCallableRequest& request,
                            MakeCallableResponse* response) override;
  absl::Status RunCallable(const RunCallableRequest& request,
                           RunCallableResponse* response) override;
  absl::Status ReleaseCallable(const ReleaseCallableRequest& request,
                               ReleaseCallableResponse* response) override;
  absl::Status MarkReady(const MarkReadyRequest& request, MarkReadyResponse* response) override;
  absl::Status WithdrawReady(const WithdrawReadyRequest& request,
                             WithdrawReadyResponse* response) override;
  absl::Status WaitForReady(const WaitForReadyRequest& request,
                            WaitForReadyResponse* response) override;
  absl::Status JobDone(const JobDoneRequest& request, JobDoneResponse* response) override;

 private:
  absl::Duration StepTimeout(int64_t timeout_in_ms) const;

  std::unique_ptr<MasterService::Stub> stub_;
  const absl::Duration timeout_;
  const absl::Duration max_step_time_;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_RPC_GRPC_MASTER_H_

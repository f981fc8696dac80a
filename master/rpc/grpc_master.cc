#include "master/rpc/grpc_master.h"

#include <algorithm>

#include "core/rpc/channel.h"
#include "core/rpc/client_context.h"
#include "core/rpc/grpc_status.h"

namespace overseer {

std::shared_ptr<grpc::Channel> NewMasterChannel(const std::string& address,
                                                absl::Duration keepalive) {
  return NewChannel(address, PeerChannelArguments(keepalive));
}

GrpcMaster::GrpcMaster(std::shared_ptr<grpc::Channel> channel, absl::Duration timeout,
                       absl::Duration max_step_time)
    : stub_(MasterService::NewStub(std::move(channel))),
      timeout_(timeout),
      max_step_time_(max_step_time) {}

absl::Duration GrpcMaster::StepTimeout(int64_t timeout_in_ms) const {
  if (timeout_in_ms <= 0) return max_step_time_;
  return std::max(timeout_, absl::Milliseconds(timeout_in_ms) + absl::Seconds(5));
}

#define OVERSEER_MASTER_CALL(method, timeout)                                                   \
  absl::Status GrpcMaster::method(const method##Request& request, method##Response* response) { \
    auto ctx = NewClientContext(timeout);                                                       \
    return FromGrpcStatus(stub_->method(ctx.get(), request, response));                         \
  }

OVERSEER_MASTER_CALL(CreateSession, timeout_)
OVERSEER_MASTER_CALL(ExtendSession, timeout_)
OVERSEER_MASTER_CALL(RunStep, StepTimeout(request.options().timeout_in_ms()))
OVERSEER_MASTER_CALL(CloseSession, timeout_)
OVERSEER_MASTER_CALL(ListDevices, timeout_)
OVERSEER_MASTER_CALL(Reset, timeout_)
OVERSEER_MASTER_CALL(PartialRunSetup, timeout_)
OVERSEER_MASTER_CALL(MakeCallable, timeout_)
OVERSEER_MASTER_CALL(RunCallable, max_step_time_)
OVERSEER_MASTER_CALL(ReleaseCallable, timeout_)
OVERSEER_MASTER_CALL(MarkReady, timeout_)
OVERSEER_MASTER_CALL(WithdrawReady, timeout_)
OVERSEER_MASTER_CALL(WaitForReady, absl::Milliseconds(std::max<int64_t>(0, request.timeout_ms())) +
                                       kWaitForReadyMargin)
OVERSEER_MASTER_CALL(JobDone, timeout_)

#undef OVERSEER_MASTER_CALL

}  // namespace overseer

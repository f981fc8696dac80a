#include "master/rpc/grpc_master.h"

#include <algorithm>

#include "core/rpc/client_context.h"
#include "core/rpc/grpc_status.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace overseer {

std::shared_ptr<grpc::Channel> NewMasterChannel(const std::string& address,
                                                absl::Duration keepalive) {
  grpc::ChannelArguments args;
  SetKeepalive(&args, keepalive);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A restarted master is reachable again quickly.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // GrpcSession retries UNAVAILABLE itself (request ids make a retried step apply once).
  // gRPC's retry filter, on by default, wraps every call in its retry machinery even
  // without a retry policy (only for transparent retries of calls that never reached the
  // server); it cost about a quarter of the client's CPU per grpc_session_bench step.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
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

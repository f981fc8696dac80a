#include "core/rpc/channel.h"

#include "core/rpc/keepalive.h"
#include "core/rpc/security.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace overseer {

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address,
                                          const grpc::ChannelArguments& args) {
  auto interceptors = ChannelInterceptors();
  if (interceptors.empty()) return grpc::CreateCustomChannel(address, ChannelCredentials(), args);
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, ChannelCredentials(),
                                                                 args, std::move(interceptors));
}

grpc::ChannelArguments PeerChannelArguments(absl::Duration keepalive) {
  grpc::ChannelArguments args;
  SetKeepalive(&args, keepalive);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A restarted master or task is reachable again quickly.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // GrpcSession retries UNAVAILABLE itself (request ids make a retried step apply once),
  // and the master decides what a failed call to a worker means (ABORTED, UNAVAILABLE, a
  // cancelled step). gRPC's retry filter, on by default, wraps every call in its retry
  // machinery even without a retry policy (only for transparent retries of calls that
  // never reached the server); it cost about a quarter of the client's CPU per
  // grpc_session_bench step, and about a tenth of the master's.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  return args;
}

}  // namespace overseer

#ifndef OVERSEER_CORE_RPC_CHANNEL_H_
#define OVERSEER_CORE_RPC_CHANNEL_H_

// Client channels to Overseer's servers: the one place that chooses their credentials
// (the process's TLS and cluster token, core/rpc/security.h; plaintext without), and
// the arguments of the channels that carry steps.

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/support/channel_arguments.h"

namespace overseer {

// A channel to `address`, with the process's security (security.h), ("host:port", see
// grpc_target.h) with `args`. Never null; it connects on its first call, so an unreachable server
// fails calls UNAVAILABLE.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address,
                                          const grpc::ChannelArguments& args = {});

// The arguments of a channel that carries steps between Overseer's processes (to a
// master or a worker): keepalive pings every `keepalive` while calls are open
// (keepalive.h), unlimited message sizes, a restarted peer reconnected within a second,
// and gRPC's own retries off (the caller decides what a failed call means).
grpc::ChannelArguments PeerChannelArguments(absl::Duration keepalive);

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_CHANNEL_H_

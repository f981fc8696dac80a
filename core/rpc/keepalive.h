#ifndef OVERSEER_CORE_RPC_KEEPALIVE_H_
#define OVERSEER_CORE_RPC_KEEPALIVE_H_

// HTTP/2 keepalive between Overseer's processes. A step may wait on a call for hours
// (a blocking dequeue, a long computation, a barrier of synchronous replicas), so its
// deadline alone cannot find a peer that stopped answering without closing its
// connection (its host died or froze, the network broke): while a call is open the
// client pings the server every `interval` and closes the connection, failing the
// call UNAVAILABLE, when a ping goes unanswered for `interval`. Servers ping their
// clients the same way, so that a call whose client vanished is cancelled (a worker
// then ends the step, core/rpc/call_watch.h). A peer that exits or is killed needs
// none of this: its kernel resets the connection at once.
//
// Both sides must agree: a gRPC server refuses pings more often than every 5 minutes
// by default (it closes the connection after two). SetServerKeepalive lets our servers
// take them every second; channels to other servers should not use SetKeepalive.

#include "absl/time/time.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/channel_arguments.h"

namespace overseer {

// The servers' default (--keepalive_seconds) and the client channels'.
inline constexpr absl::Duration kDefaultKeepalive = absl::Seconds(10);
// The shortest ping interval servers accept from a client.
inline constexpr absl::Duration kMinAcceptedPingInterval = absl::Seconds(1);

// Client side: ping after `interval` while calls are open; a ping unanswered for
// `interval` closes the connection, and a connection attempt gets twice `interval`
// (at least 2 s). Zero or negative: gRPC's defaults (no pings, 20 s to connect).
void SetKeepalive(grpc::ChannelArguments* args, absl::Duration interval);

// Server side: accept client pings as often as kMinAcceptedPingInterval, and ping
// clients every `interval` (zero or negative: gRPC's default of 2 hours).
void SetServerKeepalive(grpc::ServerBuilder* builder, absl::Duration interval);

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_KEEPALIVE_H_

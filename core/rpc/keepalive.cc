#include "core/rpc/keepalive.h"

#include <algorithm>
#include <cstdint>

namespace overseer {
namespace {

int Milliseconds(absl::Duration d) {
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(d), INT32_MAX));
}

}  // namespace

void SetKeepalive(grpc::ChannelArguments* args, absl::Duration interval) {
  if (interval <= absl::ZeroDuration()) return;
  interval = std::max(interval, kMinAcceptedPingInterval);
  args->SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, Milliseconds(interval));
  args->SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Milliseconds(interval));
  // Only while a call is open: an idle channel costs nothing.
  args->SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  // gRPC stops pinging after two pings without data by default; a call that waits
  // silently for an hour must keep pinging.
  args->SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A connection attempt to a peer that accepts TCP but never answers (frozen) fails
  // after twice the interval too, instead of gRPC's 20 s (the same with the default).
  args->SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, Milliseconds(2 * interval));
}

void SetServerKeepalive(grpc::ServerBuilder* builder, absl::Duration interval) {
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                              Milliseconds(kMinAcceptedPingInterval));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  if (interval <= absl::ZeroDuration()) return;
  interval = std::max(interval, kMinAcceptedPingInterval);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Milliseconds(interval));
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Milliseconds(interval));
}

}  // namespace overseer

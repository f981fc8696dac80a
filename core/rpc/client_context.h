#ifndef OVERSEER_CORE_RPC_CLIENT_CONTEXT_H_
#define OVERSEER_CORE_RPC_CLIENT_CONTEXT_H_

// Every client call carries a deadline (STYLE.md habit 14); this is how one is made.

#include <memory>

#include "absl/time/time.h"
#include "grpcpp/client_context.h"

namespace overseer {

// How long a unary call may take unless its caller says otherwise.
inline constexpr absl::Duration kDefaultRpcTimeout = absl::Seconds(30);

// A context whose deadline is `timeout` from now. gRPC measures deadlines on the real
// clock, so this deliberately takes no injected Clock: a fake clock's time would give
// deadlines that have long passed (or never come).
std::unique_ptr<grpc::ClientContext> NewClientContext(absl::Duration timeout = kDefaultRpcTimeout);

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_CLIENT_CONTEXT_H_

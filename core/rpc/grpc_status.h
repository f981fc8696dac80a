#ifndef OVERSEER_CORE_RPC_GRPC_STATUS_H_
#define OVERSEER_CORE_RPC_GRPC_STATUS_H_

// The one place where absl::Status and grpc::Status are converted (STYLE.md habit 4).
// Codes map one to one (both follow google.rpc.Code); messages are kept, except that a
// server cuts one longer than kMaxGrpcErrorMessageBytes: an error that echoes a huge
// input (a 1 MB fetch name) would otherwise overflow gRPC's 8 KiB limit on trailing
// metadata, and the client would see RESOURCE_EXHAUSTED about metadata instead.

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace overseer {

inline constexpr size_t kMaxGrpcErrorMessageBytes = 4096;

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_GRPC_STATUS_H_

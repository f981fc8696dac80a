#ifndef OVERSEER_CORE_RPC_GRPC_STATUS_H_
#define OVERSEER_CORE_RPC_GRPC_STATUS_H_

// The one place where absl::Status and grpc::Status are converted (STYLE.md habit 4).
// Codes map one to one (both follow google.rpc.Code); messages are kept.

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace overseer {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_GRPC_STATUS_H_

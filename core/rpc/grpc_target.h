#ifndef OVERSEER_CORE_RPC_GRPC_TARGET_H_
#define OVERSEER_CORE_RPC_GRPC_TARGET_H_

// Targets of Overseer's servers: "grpc://host:port" (a master) or
// "grpc://host:port/<rest>" (a run on a checkpoint store or a summary writer). The one
// parser of them; it does not include gRPC.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace overseer {

inline constexpr absl::string_view kGrpcScheme = "grpc://";

struct GrpcTarget {
  std::string address;  // "host:port" (the host may be "[v6 address]"): what gRPC dials.
  std::string rest;     // What follows the '/' after the port; "" if nothing does.
};

// Splits "grpc://host:port[/rest]". INVALID_ARGUMENT naming `target` and the form it
// must take when it does not start with "grpc://", its host is empty, or its port is
// missing or not a number from 1 to 65535. `rest` is the caller's to check.
absl::StatusOr<GrpcTarget> ParseGrpcTarget(absl::string_view target);

// The address of a target that names a server only, "grpc://host:port" (a trailing
// '/' is allowed). The errors of ParseGrpcTarget, and INVALID_ARGUMENT for a target
// with a rest.
absl::StatusOr<std::string> ParseGrpcAddress(absl::string_view target);

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_GRPC_TARGET_H_

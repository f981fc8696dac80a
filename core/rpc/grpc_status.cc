#include "core/rpc/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace overseer {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const absl::string_view message = status.message();
  if (message.size() <= kMaxGrpcErrorMessageBytes) {
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(message));
  }
  const std::string cut = absl::StrCat(" ... (", message.size(), " bytes, cut)");
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      absl::StrCat(message.substr(0, kMaxGrpcErrorMessageBytes - cut.size()), cut));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const int code = static_cast<int>(status.error_code());
  if (code <= 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(status.error_message());
  }
  return absl::Status(static_cast<absl::StatusCode>(code), status.error_message());
}

}  // namespace overseer

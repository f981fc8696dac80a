#include "core/rpc/client_context.h"

namespace overseer {

std::unique_ptr<grpc::ClientContext> NewClientContext(absl::Duration timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return context;
}

}  // namespace overseer

#include "core/rpc/client_context.h"

namespace overseer {

std::unique_ptr<grpc::ClientContext> NewClientContext(absl::Duration timeout, Clock* clock) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(clock->Now() + timeout));
  return context;
}

}  // namespace overseer

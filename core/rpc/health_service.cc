#include "core/rpc/health_service.h"

namespace overseer {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

HealthService::HealthService(absl::Duration watch_poll) : watch_poll_(watch_poll) {}

void HealthService::SetStatus(const std::string& service, ServingStatus status) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return;
  auto [it, inserted] = statuses_.emplace(service, status);
  if (!inserted && it->second == status) return;
  it->second = status;
  ++version_;
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return;
  shutdown_ = true;
  for (auto& [service, status] : statuses_) status = HealthCheckResponse::NOT_SERVING;
  ++version_;
}

HealthService::ServingStatus HealthService::StatusLocked(const std::string& service) const {
  auto it = statuses_.find(service);
  if (it != statuses_.end()) return it->second;
  return shutdown_ ? HealthCheckResponse::NOT_SERVING : HealthCheckResponse::SERVICE_UNKNOWN;
}

grpc::Status HealthService::Check(grpc::ServerContext*, const HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  absl::ReaderMutexLock lock(&mu_);
  auto it = statuses_.find(request->service());
  if (it == statuses_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown service '" + request->service() + "'");
  }
  response->set_status(it->second);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context, const HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  int64_t seen = -1;
  while (true) {
    HealthCheckResponse response;
    bool last = false;
    {
      absl::MutexLock lock(&mu_);
      auto changed = [this, &seen]()
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return version_ != seen; };
      if (!mu_.AwaitWithTimeout(absl::Condition(&changed), watch_poll_)) {
        if (context->IsCancelled()) return grpc::Status::OK;
        continue;
      }
      seen = version_;
      response.set_status(StatusLocked(request->service()));
      last = shutdown_;
    }
    if (!writer->Write(response) || last) return grpc::Status::OK;
  }
}

}  // namespace overseer

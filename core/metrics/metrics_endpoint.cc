#include "core/metrics/metrics_endpoint.h"

#include <exception>

#include "absl/strings/str_cat.h"
#include "core/metrics/process_collector.h"
#include "prometheus/gauge.h"

namespace overseer {

void RegisterBuildInfo(prometheus::Registry* registry, const std::string& component,
                       const std::string& version) {
  prometheus::BuildGauge()
      .Name("overseer_build_info")
      .Help("Always 1; the labels say which Overseer program (component) and version runs.")
      .Register(*registry)
      .Add({{"component", component}, {"version", version}})
      .Set(1);
}

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const MetricsEndpointOptions& options) {
  const std::string bind = absl::StrCat(options.host, ":", options.port);
  std::unique_ptr<prometheus::Exposer> exposer;
  try {  // prometheus-cpp reports a failed bind only by throwing.
    exposer = std::make_unique<prometheus::Exposer>(bind);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", bind, ": ", e.what()));
  }
  const std::vector<int> ports = exposer->GetListeningPorts();
  if (ports.empty()) return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", bind));
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint(std::move(exposer), ports.front()));
  endpoint->Add(std::make_shared<ProcessCollector>());
  auto build_info = std::make_shared<prometheus::Registry>();
  RegisterBuildInfo(build_info.get(), options.component, options.version);
  endpoint->Add(std::move(build_info));
  return endpoint;
}

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<prometheus::Exposer> exposer, int port)
    : exposer_(std::move(exposer)), port_(port) {}

void MetricsEndpoint::Add(std::shared_ptr<prometheus::Collectable> collectable) {
  absl::MutexLock lock(&mu_);
  exposer_->RegisterCollectable(collectable);
  kept_.push_back(std::move(collectable));
}

}  // namespace overseer

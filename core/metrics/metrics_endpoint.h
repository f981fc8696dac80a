#ifndef OVERSEER_CORE_METRICS_METRICS_ENDPOINT_H_
#define OVERSEER_CORE_METRICS_METRICS_ENDPOINT_H_

// An HTTP endpoint serving Prometheus' text format at http://HOST:PORT/metrics, as
// every Overseer process that exports metrics does: each server (through
// ServerRunner) and a trainer that turns its metrics on (client/training/trainer_metrics.h).
// Besides what is added to it, it serves the process's own metrics
// (core/metrics/process_collector.h) and
//   overseer_build_info{component,version}  gauge, always 1: what runs there
//
//   MetricsEndpointOptions options;
//   options.component = "trainer";
//   ASSIGN_OR_RETURN(auto endpoint, MetricsEndpoint::Start(options));
//   endpoint->Add(registry);   // a prometheus::Registry, an RpcMetrics, ...
//   LOG(INFO) << "metrics on port " << endpoint->port();

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/version.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

namespace overseer {

struct MetricsEndpointOptions {
  std::string host = "127.0.0.1";
  // 0: a free port (port() says which).
  int port = 0;
  // overseer_build_info's labels: the program ("master", "worker", "trainer", ...) and
  // its version.
  std::string component;
  std::string version = kOverseerVersion;
};

// Thread-safe.
class MetricsEndpoint {
 public:
  // Binds host:port and starts serving. UNAVAILABLE naming the address if it cannot be
  // bound (in use, not allowed).
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const MetricsEndpointOptions& options);
  // Stops serving.
  ~MetricsEndpoint() = default;
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // The bound port.
  int port() const { return port_; }

  // Serves `collectable`'s families from the next scrape on; the endpoint keeps it
  // alive. Families are served in the order added, the process's and build info first.
  void Add(std::shared_ptr<prometheus::Collectable> collectable);

 private:
  MetricsEndpoint(std::unique_ptr<prometheus::Exposer> exposer, int port);

  absl::Mutex mu_;
  // Declared before the exposer, which uses them until it is destroyed.
  std::vector<std::shared_ptr<prometheus::Collectable>> kept_ ABSL_GUARDED_BY(mu_);
  const std::unique_ptr<prometheus::Exposer> exposer_;
  const int port_;
};

// Registers overseer_build_info{component,version} 1 in `registry`.
void RegisterBuildInfo(prometheus::Registry* registry, const std::string& component,
                       const std::string& version = kOverseerVersion);

}  // namespace overseer

#endif  // OVERSEER_CORE_METRICS_METRICS_ENDPOINT_H_

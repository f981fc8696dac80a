#ifndef OVERSEER_CLIENT_TRAINING_TRAINER_METRICS_H_
#define OVERSEER_CLIENT_TRAINING_TRAINER_METRICS_H_

// A trainer's Prometheus metrics, so that Prometheus sees trainers as it sees servers.
// Off by default: a trainer turns them on by making a TrainerMetrics (Serve binds its
// own /metrics endpoint) and passing it to MonitoredTrainingSessionOptions::metrics,
// which feeds it (docs/metrics.md):
//   overseer_trainer_steps_total                       counter: steps this trainer ran
//       (MonitoredSession::Run or RunStepFn that succeeded); rate() is its step rate
//   overseer_trainer_global_step                       gauge: the global step as read by
//       this trainer's latest step (it may predate that step's own increment)
//   overseer_trainer_recoveries_total{code}            counter: sessions recreated after
//       a recoverable error (code ABORTED or UNAVAILABLE; both exist from the start)
//   overseer_trainer_readiness_wait_seconds            histogram: each wait of a
//       non-chief for the chief to make the model ready (observed when it ends)
//   overseer_trainer_waiting_for_ready                 gauge: 1 while such a wait runs
//   overseer_trainer_last_checkpoint_step              gauge: step of the last checkpoint
//       this trainer saved (a chief; absent until its first save)
//   overseer_trainer_last_checkpoint_timestamp_seconds gauge: when it was saved, Unix s
// and, when served, process_* and overseer_build_info{component="trainer",version}
// (core/metrics/metrics_endpoint.h).
//
//   TrainerMetricsOptions metrics_options;
//   metrics_options.port = 9100;                  // 0: a free port
//   ASSIGN_OR_RETURN(auto metrics, TrainerMetrics::Serve(metrics_options));
//   MonitoredTrainingSessionOptions options;
//   options.metrics = metrics.get();              // Outlives the session.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/metrics/metrics_endpoint.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace overseer {

struct TrainerMetricsOptions {
  std::string host = "127.0.0.1";
  // 0: a free port (port() says which).
  int port = 0;
  // Not empty: once listening, the port is written to this file (one line, replaced
  // atomically), for whoever started the trainer with port 0.
  std::string port_file;
};

// Thread-safe.
class TrainerMetrics {
 public:
  // Serves the metrics at http://host:port/metrics. UNAVAILABLE if the port cannot be
  // bound; INTERNAL if the port file cannot be written.
  static absl::StatusOr<std::unique_ptr<TrainerMetrics>> Serve(
      const TrainerMetricsOptions& options);

  // Registers the metrics in `registry` without serving them (port() is -1).
  explicit TrainerMetrics(std::shared_ptr<prometheus::Registry> registry);
  TrainerMetrics(const TrainerMetrics&) = delete;
  TrainerMetrics& operator=(const TrainerMetrics&) = delete;

  // The bound port, or -1 when not serving.
  int port() const { return endpoint_ != nullptr ? endpoint_->port() : -1; }
  prometheus::Registry* registry() const { return registry_.get(); }

  // What the session layer reports.
  // A step ran; `global_step` as it read it, or negative if the graph has none.
  void StepDone(int64_t global_step);
  // A session is recreated after recoverable error `cause`.
  void Recovered(const absl::Status& cause);
  // A wait for the model to be ready starts, or ends after `waited`.
  void ReadinessWaitStarted();
  void ReadinessWaitEnded(absl::Duration waited);
  // This trainer saved the checkpoint of `global_step` at `when`.
  void CheckpointSaved(int64_t global_step, absl::Time when);

 private:
  const std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricsEndpoint> endpoint_;
  prometheus::Counter* steps_;
  prometheus::Gauge* global_step_;
  prometheus::Family<prometheus::Counter>* recoveries_;
  prometheus::Counter* recoveries_aborted_;
  prometheus::Counter* recoveries_unavailable_;
  prometheus::Histogram* readiness_wait_;
  prometheus::Gauge* waiting_for_ready_;
  prometheus::Family<prometheus::Gauge>* last_checkpoint_step_;
  prometheus::Family<prometheus::Gauge>* last_checkpoint_time_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_TRAINER_METRICS_H_

#include "client/training/trainer_metrics.h"

#include "absl/strings/str_cat.h"
#include "core/port_file.h"

namespace overseer {

absl::StatusOr<std::unique_ptr<TrainerMetrics>> TrainerMetrics::Serve(
    const TrainerMetricsOptions& options) {
  MetricsEndpointOptions endpoint_options;
  endpoint_options.host = options.host;
  endpoint_options.port = options.port;
  endpoint_options.component = "trainer";
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
      MetricsEndpoint::Start(endpoint_options);
  if (!endpoint.ok()) {
    return absl::Status(endpoint.status().code(),
                        absl::StrCat("trainer metrics: ", endpoint.status().message()));
  }
  auto metrics = std::make_unique<TrainerMetrics>(std::make_shared<prometheus::Registry>());
  (*endpoint)->Add(metrics->registry_);
  metrics->endpoint_ = *std::move(endpoint);
  if (!options.port_file.empty()) {
    const absl::Status written = WritePortFile(options.port_file, {metrics->port()});
    if (!written.ok()) return written;
  }
  return metrics;
}

TrainerMetrics::TrainerMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {
  prometheus::Registry& r = *registry_;
  steps_ = &prometheus::BuildCounter()
                .Name("overseer_trainer_steps_total")
                .Help("Steps this trainer ran successfully; rate() is its step rate.")
                .Register(r)
                .Add({});
  global_step_ = &prometheus::BuildGauge()
                      .Name("overseer_trainer_global_step")
                      .Help("The global step as read by this trainer's latest step.")
                      .Register(r)
                      .Add({});
  recoveries_ = &prometheus::BuildCounter()
                     .Name("overseer_trainer_recoveries_total")
                     .Help("Sessions recreated after a recoverable error, by its code.")
                     .Register(r);
  recoveries_aborted_ = &recoveries_->Add({{"code", "ABORTED"}});
  recoveries_unavailable_ = &recoveries_->Add({{"code", "UNAVAILABLE"}});
  readiness_wait_ = &prometheus::BuildHistogram()
                         .Name("overseer_trainer_readiness_wait_seconds")
                         .Help(
                             "Each wait of this (non-chief) trainer for the chief to make "
                             "the model ready, observed when it ends.")
                         .Register(r)
                         .Add({}, prometheus::Histogram::BucketBoundaries{
                                      0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300,
                                      900, 1800, 3600, 7200});
  waiting_for_ready_ = &prometheus::BuildGauge()
                            .Name("overseer_trainer_waiting_for_ready")
                            .Help("1 while this trainer waits for the model to be ready.")
                            .Register(r)
                            .Add({});
  last_checkpoint_step_ = &prometheus::BuildGauge()
                               .Name("overseer_trainer_last_checkpoint_step")
                               .Help(
                                   "The global step of the last checkpoint this trainer "
                                   "saved.")
                               .Register(r);
  last_checkpoint_time_ = &prometheus::BuildGauge()
                               .Name("overseer_trainer_last_checkpoint_timestamp_seconds")
                               .Help(
                                   "When this trainer saved its last checkpoint, Unix "
                                   "seconds.")
                               .Register(r);
}

void TrainerMetrics::StepDone(int64_t global_step) {
  steps_->Increment();
  if (global_step >= 0) global_step_->Set(static_cast<double>(global_step));
}

void TrainerMetrics::Recovered(const absl::Status& cause) {
  if (cause.code() == absl::StatusCode::kAborted) {
    recoveries_aborted_->Increment();
  } else if (cause.code() == absl::StatusCode::kUnavailable) {
    recoveries_unavailable_->Increment();
  } else {
    recoveries_->Add({{"code", absl::StatusCodeToString(cause.code())}}).Increment();
  }
}

void TrainerMetrics::ReadinessWaitStarted() { waiting_for_ready_->Set(1); }

void TrainerMetrics::ReadinessWaitEnded(absl::Duration waited) {
  waiting_for_ready_->Set(0);
  readiness_wait_->Observe(absl::ToDoubleSeconds(waited));
}

void TrainerMetrics::CheckpointSaved(int64_t global_step, absl::Time when) {
  last_checkpoint_step_->Add({}).Set(static_cast<double>(global_step));
  last_checkpoint_time_->Add({}).Set(absl::ToDoubleSeconds(when - absl::UnixEpoch()));
}

}  // namespace overseer

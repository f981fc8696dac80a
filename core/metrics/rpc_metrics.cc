#include "core/metrics/rpc_metrics.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace overseer {

std::vector<double> RpcMetrics::StepBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

std::vector<double> RpcMetrics::SlowBuckets() {
  return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

RpcMetrics::Method::Method(std::string name, std::vector<double> bounds)
    : name_(std::move(name)),
      bounds_(std::move(bounds)),
      counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void RpcMetrics::Method::Record(absl::Duration latency, absl::StatusCode code) {
  const double seconds = absl::ToDoubleSeconds(latency);
  // The first bucket whose bound is >= the value (Prometheus' buckets are "le").
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), seconds) - bounds_.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_nanos_.fetch_add(absl::ToInt64Nanoseconds(latency), std::memory_order_relaxed);
  if (code != absl::StatusCode::kOk) {
    int index = static_cast<int>(code);
    if (index <= 0 || index >= kNumCodes) index = static_cast<int>(absl::StatusCode::kUnknown);
    errors_[index].fetch_add(1, std::memory_order_relaxed);
  }
}

RpcMetrics::RpcMetrics(std::string component, const std::vector<RpcMethodOptions>& methods)
    : component_(std::move(component)) {
  for (const RpcMethodOptions& m : methods) {
    methods_.push_back(std::unique_ptr<Method>(new Method(m.name, m.buckets)));
  }
}

RpcMetrics::Method* RpcMetrics::method(absl::string_view name) const {
  for (const auto& m : methods_) {
    if (m->name_ == name) return m.get();
  }
  return nullptr;
}

std::vector<prometheus::MetricFamily> RpcMetrics::Collect() const {
  prometheus::MetricFamily latency;
  latency.name = absl::StrCat("overseer_", component_, "_rpc_latency_seconds");
  latency.help = "Time from a call's arrival to its status (a stream: to its end), by method.";
  latency.type = prometheus::MetricType::Histogram;
  prometheus::MetricFamily errors;
  errors.name = absl::StrCat("overseer_", component_, "_rpc_errors_total");
  errors.help = "Calls that ended with an error status, by method and status code.";
  errors.type = prometheus::MetricType::Counter;
  for (const auto& m : methods_) {
    prometheus::ClientMetric histogram;
    histogram.label = {{"method", m->name_}};
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= m->bounds_.size(); ++i) {
      cumulative += m->counts_[i].load(std::memory_order_relaxed);
      prometheus::ClientMetric::Bucket bucket;
      bucket.cumulative_count = cumulative;
      bucket.upper_bound =
          i < m->bounds_.size() ? m->bounds_[i] : std::numeric_limits<double>::infinity();
      histogram.histogram.bucket.push_back(bucket);
    }
    histogram.histogram.sample_count = cumulative;
    histogram.histogram.sample_sum =
        static_cast<double>(m->sum_nanos_.load(std::memory_order_relaxed)) * 1e-9;
    latency.metric.push_back(std::move(histogram));
    for (int code = 1; code < Method::kNumCodes; ++code) {
      prometheus::ClientMetric counter;
      counter.label = {{"code", absl::StatusCodeToString(static_cast<absl::StatusCode>(code))},
                       {"method", m->name_}};
      counter.counter.value = static_cast<double>(m->errors_[code].load(std::memory_order_relaxed));
      errors.metric.push_back(std::move(counter));
    }
  }
  return {std::move(latency), std::move(errors)};
}

}  // namespace overseer

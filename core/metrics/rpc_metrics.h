#ifndef OVERSEER_CORE_METRICS_RPC_METRICS_H_
#define OVERSEER_CORE_METRICS_RPC_METRICS_H_

// The latency and the errors of the methods of one gRPC service, recorded by its rpc/
// adapter (docs/metrics.md):
//   overseer_<component>_rpc_latency_seconds{method}    histogram: every call, from its
//       arrival to its status (a stream: to its end); its _count counts the calls
//   overseer_<component>_rpc_errors_total{method,code}  counter: calls that ended with
//       status `code` (absl::StatusCodeToString: "ABORTED", "UNAVAILABLE", ...)
// Every series exists from the start, at 0: a histogram per method and an error
// counter per method for each of the 16 error codes (CANCELLED to UNAUTHENTICATED).
// That is what Prometheus' instrumentation guidelines ask of label values known in
// advance: rate() and increase() then see the first call and the first error (a series
// born at 1 hides its first increment), and an alert on an error rate needs no absent().
//
// Recording a call is two relaxed atomic additions, and one more for an error: no
// lock and no allocation, on the path of every step (prometheus-cpp 1.0's Histogram
// takes a mutex for each observation).
//
//   auto metrics = std::make_shared<RpcMetrics>(
//       "worker", std::vector<RpcMethodOptions>{{"RunGraph", RpcMetrics::StepBuckets()}});
//   RpcMetrics::Method* run_graph = metrics->method("RunGraph");
//   runner.AddCollectable(metrics);
//   ... run_graph->RecordSince(start, status) ...

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace overseer {

struct RpcMethodOptions {
  // The method's name as in its .proto ("CreateSession"): the `method` label.
  std::string name;
  // The histogram's bucket upper bounds in seconds, ascending (+Inf is added).
  std::vector<double> buckets;
};

// Thread-safe; recording never blocks.
class RpcMetrics final : public prometheus::Collectable {
 public:
  // Bounds for calls on the path of a step (RunStep, RunGraph, RecvTensor) and other
  // quick calls: 100 us to 10 s.
  static std::vector<double> StepBuckets();
  // Bounds for calls that wait or move bulk data (CreateSession waiting for the tasks,
  // WaitForReady long polls, checkpoint and event streams): 1 ms to 5 min.
  static std::vector<double> SlowBuckets();

  // Thread-safe; lives as long as the RpcMetrics.
  class Method {
   public:
    // Records one call that took `latency` and ended with `code`.
    void Record(absl::Duration latency, absl::StatusCode code);
    // Records one call that started at `start` and ended now with `status`.
    void RecordSince(absl::Time start, const absl::Status& status) {
      Record(absl::Now() - start, status.code());
    }

   private:
    friend class RpcMetrics;
    // absl::StatusCode values 0 (OK) to 16 (UNAUTHENTICATED).
    static constexpr int kNumCodes = 17;

    Method(std::string name, std::vector<double> bounds);

    const std::string name_;
    const std::vector<double> bounds_;
    // Per bucket (not cumulative); the last is +Inf.
    const std::unique_ptr<std::atomic<uint64_t>[]> counts_;
    std::atomic<int64_t> sum_nanos_{0};
    std::array<std::atomic<uint64_t>, kNumCodes> errors_{};
  };

  // `component` names the families (overseer_<component>_rpc_...); `methods` are the
  // service's methods, each recorded with its own buckets.
  RpcMetrics(std::string component, const std::vector<RpcMethodOptions>& methods);
  RpcMetrics(const RpcMetrics&) = delete;
  RpcMetrics& operator=(const RpcMetrics&) = delete;

  // The method named `name`, or null for one not given to the constructor.
  Method* method(absl::string_view name) const;

  // The two families, each method in the order given.
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string component_;
  std::vector<std::unique_ptr<Method>> methods_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_METRICS_RPC_METRICS_H_

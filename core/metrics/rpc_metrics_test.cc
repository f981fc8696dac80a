#include "core/metrics/rpc_metrics.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace overseer {
namespace {

std::string Text(const RpcMetrics& metrics) {
  return prometheus::TextSerializer().Serialize(metrics.Collect());
}

TEST(RpcMetricsTest, EverySeriesStartsAtZero) {
  RpcMetrics metrics("test", {{"Fast", {0.001, 0.01}}, {"Slow", RpcMetrics::SlowBuckets()}});
  const std::vector<prometheus::MetricFamily> families = metrics.Collect();
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0].name, "overseer_test_rpc_latency_seconds");
  EXPECT_EQ(families[0].type, prometheus::MetricType::Histogram);
  ASSERT_EQ(families[0].metric.size(), 2u);
  // 2 bounds and +Inf.
  EXPECT_EQ(families[0].metric[0].histogram.bucket.size(), 3u);
  EXPECT_EQ(families[0].metric[1].histogram.bucket.size(), RpcMetrics::SlowBuckets().size() + 1);
  EXPECT_EQ(families[1].name, "overseer_test_rpc_errors_total");
  EXPECT_EQ(families[1].type, prometheus::MetricType::Counter);
  // Every error code of every method.
  EXPECT_EQ(families[1].metric.size(), 2u * 16);
  const std::string text = Text(metrics);
  EXPECT_TRUE(absl::StrContains(text, "overseer_test_rpc_latency_seconds_count{method=\"Fast\"} 0"))
      << text;
  EXPECT_TRUE(absl::StrContains(
      text, "overseer_test_rpc_errors_total{code=\"UNAVAILABLE\",method=\"Slow\"} 0"))
      << text;
  EXPECT_TRUE(absl::StrContains(
      text, "overseer_test_rpc_errors_total{code=\"UNAUTHENTICATED\",method=\"Fast\"} 0"));
  EXPECT_FALSE(absl::StrContains(text, "code=\"OK\""));
}

TEST(RpcMetricsTest, RecordsLatencyInBucketsAndErrorsByCode) {
  RpcMetrics metrics("test", {{"A", {0.001, 0.01}}, {"B", {1}}});
  RpcMetrics::Method* a = metrics.method("A");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(metrics.method("C"), nullptr);
  a->Record(absl::Microseconds(500), absl::StatusCode::kOk);
  a->Record(absl::Milliseconds(1),
            absl::StatusCode::kOk);  // "le": the bound's bucket.
  a->Record(absl::Milliseconds(5), absl::StatusCode::kAborted);
  a->Record(absl::Seconds(2), absl::StatusCode::kUnavailable);
  a->Record(absl::Seconds(2),
            static_cast<absl::StatusCode>(99));  // Counted as UNKNOWN.
  const prometheus::ClientMetric histogram = metrics.Collect()[0].metric[0];
  ASSERT_EQ(histogram.histogram.bucket.size(), 3u);
  EXPECT_EQ(histogram.histogram.bucket[0].cumulative_count, 2u);
  EXPECT_EQ(histogram.histogram.bucket[1].cumulative_count, 3u);
  EXPECT_EQ(histogram.histogram.bucket[2].cumulative_count, 5u);
  EXPECT_EQ(histogram.histogram.sample_count, 5u);
  EXPECT_NEAR(histogram.histogram.sample_sum, 4.0065, 1e-9);
  const std::string text = Text(metrics);
  for (const char* line : {"overseer_test_rpc_errors_total{code=\"ABORTED\",method=\"A\"} 1",
                           "overseer_test_rpc_errors_total{code=\"UNAVAILABLE\",method=\"A\"} 1",
                           "overseer_test_rpc_errors_total{code=\"UNKNOWN\",method=\"A\"} 1",
                           "overseer_test_rpc_errors_total{code=\"ABORTED\",method=\"B\"} 0",
                           "overseer_test_rpc_latency_seconds_count{method=\"B\"} 0"}) {
    EXPECT_TRUE(absl::StrContains(text, line)) << line << "\n" << text;
  }
}

TEST(RpcMetricsTest, CountsEveryCallFromManyThreads) {
  RpcMetrics metrics("test", {{"A", RpcMetrics::StepBuckets()}});
  RpcMetrics::Method* a = metrics.method("A");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([a] {
      for (int i = 0; i < 10000; ++i) {
        a->Record(absl::Microseconds(i % 300),
                  i % 10 == 0 ? absl::StatusCode::kCancelled : absl::StatusCode::kOk);
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::vector<prometheus::MetricFamily> families = metrics.Collect();
  EXPECT_EQ(families[0].metric[0].histogram.sample_count, 40000u);
  EXPECT_EQ(families[1].metric[0].label[0].value, "CANCELLED");
  EXPECT_EQ(families[1].metric[0].counter.value, 4000);
}

}  // namespace
}  // namespace overseer

#include "core/metrics/metrics_endpoint.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "core/rpc/testing/http_get.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"

namespace overseer {
namespace {

MetricsEndpointOptions TestOptions() {
  MetricsEndpointOptions options;
  options.host = "127.0.0.1";
  options.component = "test";
  return options;
}

TEST(MetricsEndpointTest, ServesProcessMetricsBuildInfoAndWhatIsAdded) {
  auto endpoint = MetricsEndpoint::Start(TestOptions());
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  ASSERT_GT((*endpoint)->port(), 0);
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::Counter& things = prometheus::BuildCounter()
                                    .Name("overseer_test_things_total")
                                    .Help("things")
                                    .Register(*registry)
                                    .Add({});
  (*endpoint)->Add(registry);
  registry.reset();  // The endpoint keeps it.
  things.Increment(2);
  auto page = test::HttpGet((*endpoint)->port(), "/metrics");
  ASSERT_TRUE(page.ok()) << page.status();
  for (const char* line :
       {"overseer_test_things_total 2", "process_cpu_seconds_total ", "process_open_fds ",
        "process_resident_memory_bytes ", "process_start_time_seconds ",
        "overseer_build_info{component=\"test\",version=\""}) {
    EXPECT_TRUE(absl::StrContains(*page, line)) << line << "\n" << *page;
  }
  EXPECT_TRUE(absl::StrContains(*page, absl::StrCat("version=\"", kOverseerVersion, "\"} 1")));
}

TEST(MetricsEndpointTest, APortInUseIsUnavailable) {
  auto first = MetricsEndpoint::Start(TestOptions());
  ASSERT_TRUE(first.ok()) << first.status();
  MetricsEndpointOptions options = TestOptions();
  options.port = (*first)->port();
  auto second = MetricsEndpoint::Start(options);
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
}

}  // namespace
}  // namespace overseer

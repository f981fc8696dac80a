#include "client/training/trainer_metrics.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/rpc/testing/http_get.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace overseer {
namespace {

std::string Text(const TrainerMetrics& metrics) {
  return prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
}

void ExpectLine(const std::string& text, const std::string& line) {
  EXPECT_TRUE(absl::StrContains(text, line + "\n")) << line << "\n" << text;
}

TEST(TrainerMetricsTest, CountsWhatTheSessionReports) {
  TrainerMetrics metrics(std::make_shared<prometheus::Registry>());
  EXPECT_EQ(metrics.port(), -1);
  std::string text = Text(metrics);
  // What an alert or a rate needs exists from the start.
  ExpectLine(text, "overseer_trainer_steps_total 0");
  ExpectLine(text, "overseer_trainer_recoveries_total{code=\"ABORTED\"} 0");
  ExpectLine(text, "overseer_trainer_recoveries_total{code=\"UNAVAILABLE\"} 0");
  ExpectLine(text, "overseer_trainer_waiting_for_ready 0");
  ExpectLine(text, "overseer_trainer_readiness_wait_seconds_count 0");
  EXPECT_FALSE(absl::StrContains(text, "overseer_trainer_last_checkpoint_step "));

  metrics.ReadinessWaitStarted();
  ExpectLine(Text(metrics), "overseer_trainer_waiting_for_ready 1");
  metrics.ReadinessWaitEnded(absl::Milliseconds(30));
  metrics.StepDone(41);
  metrics.StepDone(42);
  metrics.StepDone(-1);  // A graph without a global step: counted, gauge kept.
  metrics.Recovered(absl::UnavailableError("ps:1 is gone"));
  metrics.Recovered(absl::UnavailableError("ps:1 is still gone"));
  metrics.Recovered(absl::AbortedError("session unknown"));
  metrics.CheckpointSaved(40, absl::FromUnixSeconds(1700000123));
  text = Text(metrics);
  ExpectLine(text, "overseer_trainer_waiting_for_ready 0");
  ExpectLine(text, "overseer_trainer_readiness_wait_seconds_count 1");
  ExpectLine(text, "overseer_trainer_readiness_wait_seconds_sum 0.03");
  ExpectLine(text, "overseer_trainer_steps_total 3");
  ExpectLine(text, "overseer_trainer_global_step 42");
  ExpectLine(text, "overseer_trainer_recoveries_total{code=\"ABORTED\"} 1");
  ExpectLine(text, "overseer_trainer_recoveries_total{code=\"UNAVAILABLE\"} 2");
  ExpectLine(text, "overseer_trainer_last_checkpoint_step 40");
  ExpectLine(text, "overseer_trainer_last_checkpoint_timestamp_seconds 1700000123");
}

TEST(TrainerMetricsTest, ServesOnAFreePortAndWritesItToThePortFile) {
  TrainerMetricsOptions options;
  options.host = "127.0.0.1";
  options.port_file = absl::StrCat(std::getenv("TEST_TMPDIR"), "/trainer.metrics_port");
  auto metrics = TrainerMetrics::Serve(options);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_GT((*metrics)->port(), 0);
  std::ifstream port_file(options.port_file);
  int written = -1;
  port_file >> written;
  EXPECT_EQ(written, (*metrics)->port());
  (*metrics)->StepDone(7);
  auto page = test::HttpGet((*metrics)->port(), "/metrics");
  ASSERT_TRUE(page.ok()) << page.status();
  for (const char* line : {"overseer_trainer_steps_total 1", "overseer_trainer_global_step 7",
                           "overseer_build_info{component=\"trainer\",version=\"",
                           "process_cpu_seconds_total ", "process_open_fds "}) {
    EXPECT_TRUE(absl::StrContains(*page, line)) << line << "\n" << *page;
  }
  // The port is taken now.
  TrainerMetricsOptions same;
  same.host = "127.0.0.1";
  same.port = (*metrics)->port();
  EXPECT_TRUE(absl::IsUnavailable(TrainerMetrics::Serve(same).status()));
}

}  // namespace
}  // namespace overseer

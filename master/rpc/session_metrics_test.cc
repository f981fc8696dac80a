#include "master/rpc/session_metrics.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/master.h"
#include "master/placement_test_util.h"
#include "master/testing/fake_workers.h"
#include "prometheus/text_serializer.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

class SessionMetricsTest : public ::testing::Test {
 protected:
  SessionMetricsTest() : metrics_(&registry_) {
    MasterOptions options;
    options.gc_thread = false;
    options.readiness.check_thread = false;
    options.session_gc_idle = absl::Minutes(10);
    MasterEnv env{&cache_, &clock_};
    env.session_listener = &metrics_;
    master_ = std::make_unique<Master>(env, options);
  }

  std::string Create() {
    CreateSessionRequest request;
    test::AddConst(request.mutable_graph_def(), "w", 2, "/job:ps");
    CreateSessionResponse response;
    const absl::Status s = master_->CreateSession(request, &response);
    EXPECT_TRUE(s.ok()) << s;
    return response.session_handle();
  }

  std::string Metrics() { return prometheus::TextSerializer().Serialize(registry_.Collect()); }

  void ExpectMetric(const std::string& line) {
    const std::string text = Metrics();
    EXPECT_TRUE(absl::StrContains(text, line + "\n")) << line << "\n" << text;
  }

  test::FakeClock clock_{test::FakeClock::Mode::kAutoAdvance};
  test::FakeCache cache_;
  prometheus::Registry registry_;
  SessionMetrics metrics_;
  std::unique_ptr<Master> master_;
};

// A scraper saw 50 sessions open after the GC had closed them, because the gauge was
// set only when an RPC arrived: the master feeds it now, whatever changes its sessions.
TEST_F(SessionMetricsTest, TheGcUpdatesSessionsOpenWithoutAnyCall) {
  ExpectMetric("overseer_master_sessions_open 0");
  ExpectMetric("overseer_master_sessions_collected_total 0");
  for (int i = 0; i < 50; ++i) Create();
  ExpectMetric("overseer_master_sessions_open 50");
  ExpectMetric("overseer_master_sessions_created_total 50");
  clock_.Advance(absl::Minutes(11));
  EXPECT_EQ(master_->CollectIdleSessions(), 50);
  ExpectMetric("overseer_master_sessions_open 0");
  ExpectMetric("overseer_master_sessions_collected_total 50");
}

TEST_F(SessionMetricsTest, CloseResetAndTheMastersEndUpdateSessionsOpen) {
  const std::string first = Create();
  Create();
  Create();
  CloseSessionRequest close;
  close.set_session_handle(first);
  CloseSessionResponse closed;
  ASSERT_TRUE(master_->CloseSession(close, &closed).ok());
  ExpectMetric("overseer_master_sessions_open 2");
  ResetRequest reset;
  ResetResponse done;
  ASSERT_TRUE(master_->Reset(reset, &done).ok());
  ExpectMetric("overseer_master_sessions_open 0");
  Create();
  ExpectMetric("overseer_master_sessions_open 1");
  master_.reset();
  ExpectMetric("overseer_master_sessions_open 0");
  ExpectMetric("overseer_master_sessions_created_total 4");
  ExpectMetric("overseer_master_sessions_collected_total 0");
}

TEST_F(SessionMetricsTest, SnapshotWaitsAndTimeouts) {
  ExpectMetric("overseer_master_snapshot_wait_seconds_count 0");
  ExpectMetric("overseer_master_snapshot_timeouts_total 0");
  metrics_.SnapshotWaited(absl::Microseconds(300), /*entered=*/true);
  metrics_.SnapshotWaited(absl::Seconds(30), /*entered=*/false);
  ExpectMetric("overseer_master_snapshot_wait_seconds_count 2");
  ExpectMetric("overseer_master_snapshot_wait_seconds_bucket{le=\"0.0005\"} 1");
  ExpectMetric("overseer_master_snapshot_timeouts_total 1");
}

}  // namespace
}  // namespace overseer

// Readiness pushed through a real master (LocalCluster: master_server, a ps and a
// worker as processes): a waiter blocked in WaitForReady is released by MarkReady;
// waits time out not ready when nobody marks; a ps killed with SIGKILL and restarted
// withdraws readiness (naming the task); a restarted master has no record; a dead
// master is UNAVAILABLE, never a hang; 64 concurrent waiters are all released while
// the master keeps serving steps; WithdrawReady; SIGTERM answers blocked waiters.

#include "client/session/readiness.h"

#include <signal.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "client/session/session.h"
#include "core/clock.h"
#include "core/node_def_util.h"
#include "core/rpc/retry.h"
#include "core/rpc/testing/http_get.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "master/rpc/grpc_master.h"
#include "testing/eventually.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

constexpr char kPs[] = "/job:ps/replica:0/task:0";

class ReadinessClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::LocalClusterOptions options;
    options.master_metrics = true;
    auto cluster = test::LocalCluster::Start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }

  std::unique_ptr<ReadinessChannel> Channel() {
    auto channel = NewReadinessChannel(cluster_->master_target());
    EXPECT_TRUE(channel.ok()) << channel.status();
    return channel.ok() ? *std::move(channel) : nullptr;
  }

  // A raw client of the master, to see WaitForReady's reason.
  WaitForReadyResponse RawWait(const std::string& key, int64_t timeout_ms) {
    GrpcMaster master(NewMasterChannel(cluster_->master_address()), absl::Seconds(30));
    WaitForReadyRequest request;
    request.set_key(key);
    request.set_timeout_ms(timeout_ms);
    WaitForReadyResponse response;
    const absl::Status s = master.WaitForReady(request, &response);
    EXPECT_TRUE(s.ok()) << s;
    return response;
  }

  // The value of an unlabelled metric on the master's /metrics; -1 if absent.
  double Metric(const std::string& name) {
    return test::UnlabelledMetric(cluster_->master_metrics_port(), name);
  }

  // Waits (on the master's gauge, with a deadline) until `n` WaitForReady calls block.
  void AwaitBlockedWaiters(int n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    double waiters = -1;
    while (absl::Now() < deadline) {
      waiters = Metric("overseer_master_readiness_waiters");
      if (waiters == n) return;
    }
    FAIL() << "waiters blocked: " << waiters << ", expected " << n;
  }

  // MarkReady, retried while a task that just restarted is not reachable yet.
  absl::Status MarkWithRetry(ReadinessChannel* channel, const std::string& key) {
    return RetryUnavailable(
        Clock::Real(), RetryOptions{20, absl::Milliseconds(50), absl::Milliseconds(500)},
        absl::Now() + absl::Seconds(30), [&] { return channel->MarkReady(key); });
  }

  std::unique_ptr<test::LocalCluster> cluster_;
};

TEST_F(ReadinessClusterTest, BlockedWaiterIsReleasedByMarkReady) {
  auto chief = Channel();
  auto other = Channel();
  absl::StatusOr<bool> released = false;
  std::thread waiter([&] { released = other->WaitForReady("model", absl::Seconds(60)); });
  AwaitBlockedWaiters(1);
  ASSERT_TRUE(chief->MarkReady("model").ok());
  waiter.join();
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_TRUE(*released);
  EXPECT_EQ(Metric("overseer_master_readiness_marks_total"), 1);
  EXPECT_EQ(Metric("overseer_master_readiness_waiters"), 0);
}

TEST_F(ReadinessClusterTest, WaitTimesOutNotReadyWhenNobodyMarks) {
  auto channel = Channel();
  absl::StatusOr<bool> ready = channel->WaitForReady("model", absl::Milliseconds(300));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_FALSE(*ready);
  WaitForReadyResponse r = RawWait("model", 10);
  EXPECT_FALSE(r.ready());
  EXPECT_TRUE(absl::StrContains(r.reason(), "'model' has not been marked ready")) << r.reason();
}

TEST_F(ReadinessClusterTest, PsRestartWithdrawsReadinessNamingTheTask) {
  auto chief = Channel();
  ASSERT_TRUE(chief->MarkReady("model").ok());
  ASSERT_TRUE(*chief->WaitForReady("model", absl::ZeroDuration()));
  ASSERT_TRUE(cluster_->Stop("ps", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->Restart("ps", 0).ok());
  // Withdrawn by the background check, or by a wait's own check once the mark's check
  // is older than fresh_for: however fast the restart was, never by a set time.
  WaitForReadyResponse r;
  ASSERT_TRUE(test::Eventually([&] {
    r = RawWait("model", 0);
    return !r.ready();
  }));
  EXPECT_TRUE(absl::StrContains(r.reason(), kPs)) << r.reason();
  EXPECT_TRUE(absl::StrContains(r.reason(), "withdrawn")) << r.reason();
  absl::StatusOr<bool> ready = chief->WaitForReady("model", absl::Milliseconds(100));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_FALSE(*ready);
  const std::string log = cluster_->Log("master", 0);
  EXPECT_TRUE(absl::StrContains(log, "readiness of 'model' withdrawn: task /job:ps")) << log;
  EXPECT_EQ(Metric("overseer_master_readiness_withdrawals_total"), 1);
  // The chief restores the ps and marks again.
  ASSERT_TRUE(MarkWithRetry(chief.get(), "model").ok());
  EXPECT_TRUE(*chief->WaitForReady("model", absl::Seconds(5)));
}

TEST_F(ReadinessClusterTest, RestartedMasterHasNoRecord) {
  ASSERT_TRUE(Channel()->MarkReady("model").ok());
  ASSERT_TRUE(cluster_->Stop("master", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->Restart("master", 0).ok());
  absl::StatusOr<bool> ready = Channel()->WaitForReady("model", absl::Milliseconds(300));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_FALSE(*ready);
  EXPECT_TRUE(absl::StrContains(RawWait("model", 0).reason(), "has not been marked"));
}

TEST_F(ReadinessClusterTest, DeadMasterIsUnavailableNotAHang) {
  auto channel = Channel();
  ASSERT_TRUE(cluster_->Stop("master", 0, SIGKILL).ok());
  absl::StatusOr<bool> ready = channel->WaitForReady("model", absl::Seconds(30));
  EXPECT_EQ(ready.status().code(), absl::StatusCode::kUnavailable) << ready.status();
  // Refused at once, not given up on at the deadline.
  EXPECT_FALSE(absl::StrContains(ready.status().message(), "did not answer in time"))
      << ready.status();
  EXPECT_EQ(channel->MarkReady("model").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(channel->WithdrawReady("model").code(), absl::StatusCode::kUnavailable);
}

TEST_F(ReadinessClusterTest, SixtyFourWaitersAreAllReleasedWhileStepsRun) {
  constexpr int kWaiters = 64;
  std::vector<absl::StatusOr<bool>> results(kWaiters, false);
  std::vector<std::thread> waiters;
  // Half share one connection, half have their own.
  std::unique_ptr<ReadinessChannel> shared = Channel();
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      std::unique_ptr<ReadinessChannel> own = i % 2 == 0 ? nullptr : Channel();
      ReadinessChannel* channel = own != nullptr ? own.get() : shared.get();
      results[i] = channel->WaitForReady("model", absl::Seconds(60));
    });
  }
  AwaitBlockedWaiters(kWaiters);
  // The master still serves other calls while 64 waits block.
  GraphDef graph;
  NodeDef* c = graph.add_node();
  c->set_name("c");
  c->set_op("Const");
  c->set_device("/job:worker/replica:0/task:0");
  SetNodeAttr(c, "dtype", DT_FLOAT);
  SetNodeAttr(c, "value", Tensor::Scalar<float>(7.0f));
  SessionOptions options;
  options.target = cluster_->master_target();
  auto session = NewSession(options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Create(graph).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {"c:0"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 7.0f);
  ASSERT_TRUE(Channel()->MarkReady("model").ok());
  for (auto& t : waiters) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(*r);
  }
}

TEST_F(ReadinessClusterTest, WithdrawReadyWithdraws) {
  auto chief = Channel();
  ASSERT_TRUE(chief->MarkReady("model").ok());
  ASSERT_TRUE(*chief->WaitForReady("model", absl::ZeroDuration()));
  ASSERT_TRUE(chief->WithdrawReady("model").ok());
  absl::StatusOr<bool> ready = chief->WaitForReady("model", absl::Milliseconds(100));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_FALSE(*ready);
  EXPECT_TRUE(absl::StrContains(RawWait("model", 0).reason(), "WithdrawReady"));
}

TEST_F(ReadinessClusterTest, SigtermAnswersBlockedWaitersAndExitsZero) {
  auto channel = Channel();
  absl::StatusOr<bool> answer = true;
  std::thread waiter([&] { answer = channel->WaitForReady("model", absl::Seconds(60)); });
  AwaitBlockedWaiters(1);
  absl::StatusOr<int> code = cluster_->Stop("master", 0, SIGTERM);
  waiter.join();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  // Not ready: the master said it is shutting down, then could not be reached.
  EXPECT_TRUE(!answer.ok() ? answer.status().code() == absl::StatusCode::kUnavailable : !*answer)
      << answer.status();
}

}  // namespace
}  // namespace overseer

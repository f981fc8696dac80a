#include "master/readiness_tracker.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "master/testing/fake_workers.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

constexpr char kPs[] = "/job:ps/replica:0/task:0";

// Records the tracker's events; tests wait on them instead of sleeping.
class RecordingListener : public ReadinessListener {
 public:
  void Marked(const std::string& /*key*/) override {
    absl::MutexLock lock(&mu_);
    ++marks_;
  }
  void Withdrawn(const std::string& /*key*/, const std::string& reason) override {
    absl::MutexLock lock(&mu_);
    withdrawals_.push_back(reason);
  }
  void WaitersChanged(int waiters) override {
    absl::MutexLock lock(&mu_);
    waiters_ = waiters;
  }

  void AwaitWaiters(int n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return waiters_ == n; };
    mu_.Await(absl::Condition(&reached));
  }
  // Whether `n` withdrawals happened within `timeout` (real time).
  bool AwaitWithdrawals(size_t n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return withdrawals_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
  }
  int marks() {
    absl::MutexLock lock(&mu_);
    return marks_;
  }
  std::vector<std::string> withdrawals() {
    absl::MutexLock lock(&mu_);
    return withdrawals_;
  }

 private:
  absl::Mutex mu_;
  int marks_ ABSL_GUARDED_BY(mu_) = 0;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> withdrawals_ ABSL_GUARDED_BY(mu_);
};

ReadinessOptions NoThread() {
  ReadinessOptions options;
  options.check_thread = false;
  return options;
}

WaitForReadyResponse Wait(ReadinessTracker* tracker, const std::string& key,
                          absl::Duration timeout) {
  WaitForReadyResponse response;
  const absl::Status s = tracker->WaitForReady(key, timeout, &response);
  EXPECT_TRUE(s.ok()) << s;
  return response;
}

// A clock that moves only when told: waits block until a mark or an Advance.
class ReadinessTrackerTest : public ::testing::Test {
 protected:
  test::FakeClock clock_;
  test::FakeCache cache_;
  RecordingListener listener_;
};

// This clock jumps to a wait's deadline at once: for timeouts.
class ReadinessTimeoutTest : public ::testing::Test {
 protected:
  test::FakeClock clock_{test::FakeClock::Mode::kAutoAdvance};
  test::FakeCache cache_;
};

TEST_F(ReadinessTrackerTest, MarkThenWaitIsReadyAtOnce) {
  ReadinessTracker tracker(&cache_, &clock_, &listener_, NoThread());
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  EXPECT_TRUE(Wait(&tracker, "model", absl::ZeroDuration()).ready());
  EXPECT_EQ(listener_.marks(), 1);
  EXPECT_EQ(tracker.num_records(), 1);
}

TEST_F(ReadinessTimeoutTest, WaitWithoutMarkTimesOutNotReadyWithReason) {
  ReadinessTracker tracker(&cache_, &clock_, nullptr, NoThread());
  const absl::Time start = clock_.Now();
  WaitForReadyResponse r = Wait(&tracker, "model", absl::Seconds(5));
  EXPECT_FALSE(r.ready());
  EXPECT_TRUE(absl::StrContains(r.reason(), "'model' has not been marked ready")) << r.reason();
  EXPECT_EQ(clock_.Now() - start, absl::Seconds(5));
}

TEST_F(ReadinessTimeoutTest, WaitIsCappedAtMaxWait) {
  ReadinessOptions options = NoThread();
  options.max_wait = absl::Seconds(60);
  ReadinessTracker tracker(&cache_, &clock_, nullptr, options);
  const absl::Time start = clock_.Now();
  EXPECT_FALSE(Wait(&tracker, "model", absl::Hours(1)).ready());
  EXPECT_EQ(clock_.Now() - start, absl::Seconds(60));
}

TEST_F(ReadinessTrackerTest, BlockedWaiterIsReleasedByMark) {
  ReadinessTracker tracker(&cache_, &clock_, &listener_, NoThread());
  WaitForReadyResponse released;
  std::thread waiter([&] { released = Wait(&tracker, "model", absl::Seconds(60)); });
  listener_.AwaitWaiters(1);
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  waiter.join();
  EXPECT_TRUE(released.ready());
  EXPECT_EQ(tracker.num_waiters(), 0);
}

TEST_F(ReadinessTrackerTest, ManyWaitersAreAllReleased) {
  ReadinessTracker tracker(&cache_, &clock_, &listener_, NoThread());
  constexpr int kWaiters = 32;
  std::vector<WaitForReadyResponse> results(kWaiters);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] { results[i] = Wait(&tracker, "model", absl::Seconds(60)); });
  }
  listener_.AwaitWaiters(kWaiters);
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  for (auto& t : waiters) t.join();
  for (const auto& r : results) EXPECT_TRUE(r.ready());
}

TEST_F(ReadinessTrackerTest, MarkFailsNamingADeadTask) {
  ReadinessTracker tracker(&cache_, &clock_, &listener_, NoThread());
  cache_.ps()->dead = true;
  const absl::Status s = tracker.MarkReady("model");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(s.message(), kPs)) << s;
  EXPECT_EQ(tracker.num_records(), 0);
}

TEST_F(ReadinessTrackerTest, RestartedTaskWithdrawsReadinessWhenAWaitChecks) {
  ReadinessTracker tracker(&cache_, &clock_, &listener_, NoThread());
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  clock_.Advance(absl::Seconds(1));  // The mark's check is no longer fresh.
  cache_.ps()->Restart();
  WaitForReadyResponse r = Wait(&tracker, "model", absl::ZeroDuration());
  EXPECT_FALSE(r.ready());
  EXPECT_TRUE(absl::StrContains(r.reason(), kPs)) << r.reason();
  EXPECT_TRUE(absl::StrContains(r.reason(), "restarted")) << r.reason();
  ASSERT_EQ(listener_.withdrawals().size(), 1u);
  EXPECT_EQ(tracker.num_records(), 0);
}

TEST_F(ReadinessTrackerTest, AFreshMarkAnswersWithoutAnotherCheck) {
  ReadinessOptions options = NoThread();
  options.fresh_for = absl::Milliseconds(100);
  ReadinessTracker tracker(&cache_, &clock_, &listener_, options);
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  cache_.ps()->dead = true;  // Not asked: the mark checked every task a moment ago.
  EXPECT_TRUE(Wait(&tracker, "model", absl::ZeroDuration()).ready());
  clock_.Advance(absl::Milliseconds(200));
  WaitForReadyResponse r = Wait(&tracker, "model", absl::ZeroDuration());
  EXPECT_FALSE(r.ready());
  EXPECT_TRUE(absl::StrContains(r.reason(), "did not answer")) << r.reason();
}

TEST_F(ReadinessTrackerTest, CheckRecordsWithdrawsOnlyBrokenRecords) {
  ReadinessTracker tracker(&cache_, &clock_, &listener_, NoThread());
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  EXPECT_EQ(tracker.CheckRecords(), 0);
  EXPECT_EQ(tracker.num_records(), 1);
  cache_.ps()->dead = true;
  EXPECT_EQ(tracker.CheckRecords(), 1);
  EXPECT_EQ(tracker.num_records(), 0);
  const std::vector<std::string> reasons = listener_.withdrawals();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_TRUE(absl::StrContains(reasons[0], kPs)) << reasons[0];
}

TEST_F(ReadinessTrackerTest, TheBackgroundCheckWithdrawsAfterARestart) {
  ReadinessOptions options;
  options.check_period = absl::Milliseconds(500);
  ReadinessTracker tracker(&cache_, &clock_, &listener_, options);
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  cache_.ps()->Restart();
  // The check thread reads the clock when it starts its period, which may be after an
  // Advance: move the clock on until the check has run.
  do {
    clock_.Advance(absl::Milliseconds(600));
  } while (!listener_.AwaitWithdrawals(1, absl::Milliseconds(20)));
  EXPECT_TRUE(absl::StrContains(listener_.withdrawals()[0], kPs));
  EXPECT_EQ(tracker.num_records(), 0);
}

TEST_F(ReadinessTrackerTest, WithdrawReadyRemovesTheRecord) {
  ReadinessTracker tracker(&cache_, &clock_, &listener_, NoThread());
  tracker.WithdrawReady("model");  // No record: fine.
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  tracker.WithdrawReady("model");
  WaitForReadyResponse r = Wait(&tracker, "model", absl::ZeroDuration());
  EXPECT_FALSE(r.ready());
  EXPECT_TRUE(absl::StrContains(r.reason(), "WithdrawReady")) << r.reason();
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  EXPECT_TRUE(Wait(&tracker, "model", absl::ZeroDuration()).ready());
}

TEST_F(ReadinessTrackerTest, KeysAreIndependent) {
  ReadinessTracker tracker(&cache_, &clock_, &listener_, NoThread());
  ASSERT_TRUE(tracker.MarkReady("a").ok());
  EXPECT_TRUE(Wait(&tracker, "a", absl::ZeroDuration()).ready());
  EXPECT_FALSE(Wait(&tracker, "b", absl::ZeroDuration()).ready());
}

TEST_F(ReadinessTrackerTest, ShutdownAnswersBlockedAndLaterWaits) {
  ReadinessTracker tracker(&cache_, &clock_, &listener_, ReadinessOptions());
  WaitForReadyResponse released;
  std::thread waiter([&] { released = Wait(&tracker, "model", absl::Seconds(60)); });
  listener_.AwaitWaiters(1);
  tracker.Shutdown();
  waiter.join();
  EXPECT_FALSE(released.ready());
  EXPECT_TRUE(absl::StrContains(released.reason(), "shutting down")) << released.reason();
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  EXPECT_FALSE(Wait(&tracker, "model", absl::Seconds(60)).ready());
}

TEST_F(ReadinessTrackerTest, ACancelledWaitEndsAndFreesItsSlot) {
  // The clock never moves: only the cancellation can end the wait.
  ReadinessOptions options = NoThread();
  options.max_waiters = 1;
  ReadinessTracker tracker(&cache_, &clock_, &listener_, options);
  CancellationManager cancellation;
  absl::Status ended;
  std::thread waiter([&] {
    WaitForReadyResponse r;
    ended = tracker.WaitForReady("model", absl::Seconds(60), &r, &cancellation);
  });
  listener_.AwaitWaiters(1);
  cancellation.StartCancel(absl::CancelledError("the client gave up"));
  waiter.join();
  EXPECT_EQ(ended.code(), absl::StatusCode::kCancelled) << ended;
  EXPECT_EQ(tracker.num_waiters(), 0);
  // The slot is free again, and an already cancelled wait ends at once.
  WaitForReadyResponse r;
  EXPECT_EQ(tracker.WaitForReady("model", absl::Seconds(60), &r, &cancellation).code(),
            absl::StatusCode::kCancelled);
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  CancellationManager fresh;
  ASSERT_TRUE(tracker.WaitForReady("model", absl::Seconds(60), &r, &fresh).ok());
  EXPECT_TRUE(r.ready());
}

TEST_F(ReadinessTrackerTest, TooManyWaitersIsResourceExhausted) {
  ReadinessOptions options = NoThread();
  options.max_waiters = 1;
  ReadinessTracker tracker(&cache_, &clock_, &listener_, options);
  std::thread waiter([&] { Wait(&tracker, "model", absl::Seconds(60)); });
  listener_.AwaitWaiters(1);
  WaitForReadyResponse r;
  EXPECT_EQ(tracker.WaitForReady("model", absl::Seconds(1), &r).code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(tracker.MarkReady("model").ok());
  waiter.join();
}

}  // namespace
}  // namespace overseer

#include "core/rpc/retry.h"

#include <vector>

#include "gtest/gtest.h"

namespace overseer {
namespace {

// Time moves only when the code under test sleeps.
class SleepRecordingClock : public Clock {
 public:
  absl::Time Now() override { return now; }
  void SleepFor(absl::Duration d) override {
    sleeps.push_back(d);
    now += d;
  }
  bool AwaitWithDeadline(absl::Mutex*, const absl::Condition& cond, absl::Time) override {
    return cond.Eval();
  }
  absl::Time now = absl::FromUnixSeconds(100);
  std::vector<absl::Duration> sleeps;
};

TEST(RetryTest, RetriesUnavailableWithCappedBackoffUntilSuccess) {
  SleepRecordingClock clock;
  RetryOptions options{6, absl::Milliseconds(100), absl::Milliseconds(300)};
  int calls = 0;
  absl::Status s = RetryUnavailable(&clock, options, clock.now + absl::Hours(1), [&] {
    return ++calls < 5 ? absl::UnavailableError("down") : absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(clock.sleeps,
            (std::vector<absl::Duration>{absl::Milliseconds(100), absl::Milliseconds(200),
                                         absl::Milliseconds(300), absl::Milliseconds(300)}));
}

TEST(RetryTest, OtherErrorsAreNotRetried) {
  SleepRecordingClock clock;
  int calls = 0;
  absl::Status s = RetryUnavailable(&clock, RetryOptions(), clock.now + absl::Hours(1), [&] {
    ++calls;
    return absl::AbortedError("restarted");
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(clock.sleeps.empty());
}

TEST(RetryTest, StopsAtMaxAttemptsAndAtTheDeadline) {
  SleepRecordingClock clock;
  int calls = 0;
  auto down = [&] {
    ++calls;
    return absl::UnavailableError("down");
  };
  RetryOptions options{3, absl::Milliseconds(10), absl::Seconds(1)};
  EXPECT_EQ(RetryUnavailable(&clock, options, clock.now + absl::Hours(1), down).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls, 3);

  calls = 0;
  options.max_attempts = 100;
  const absl::Time deadline = clock.now + absl::Milliseconds(35);
  EXPECT_EQ(RetryUnavailable(&clock, options, deadline, down).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls, 3);  // Waits 10 and 20 ms; a 40 ms wait would pass the deadline.
  EXPECT_LE(clock.now, deadline);
}

}  // namespace
}  // namespace overseer

#include "core/executor/step_timer.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

TEST(StepTimerTest, RunsACallbackWhenTheInjectedClockReachesItsTime) {
  test::FakeClock clock;
  StepTimer timer(&clock);
  absl::Notification ran;
  timer.Schedule(clock.Now() + absl::Hours(1), [&] { ran.Notify(); });
  clock.Advance(absl::Hours(1));
  ran.WaitForNotification();  // Returns once the timer's thread sees the fake time.
}

TEST(StepTimerTest, ACancelledCallbackNeverRuns) {
  test::FakeClock clock;
  StepTimer timer(&clock);
  std::atomic<bool> cancelled_ran{false};
  const StepTimer::Id id =
      timer.Schedule(clock.Now() + absl::Seconds(1), [&] { cancelled_ran = true; });
  timer.Cancel(id);  // The fake clock has not moved: the callback cannot have run.
  absl::Notification later_ran;
  timer.Schedule(clock.Now() + absl::Seconds(2), [&] { later_ran.Notify(); });
  clock.Advance(absl::Seconds(2));
  later_ran.WaitForNotification();  // Callbacks run in deadline order.
  EXPECT_FALSE(cancelled_ran);
}

TEST(StepTimerTest, AnAutoAdvancingClockFiresAtOnce) {
  test::FakeClock clock(test::FakeClock::Mode::kAutoAdvance);
  StepTimer timer(&clock);
  absl::Notification ran;
  const absl::Time when = clock.Now() + absl::Hours(24);
  timer.Schedule(when, [&] { ran.Notify(); });
  ran.WaitForNotification();
  EXPECT_GE(clock.Now(), when);
}

}  // namespace
}  // namespace overseer

#include "summary_writer/periodic_flusher.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

TEST(PeriodicFlusherTest, TicksOncePerPeriodOfClockTime) {
  test::FakeClock clock;
  std::atomic<int> ticks{0};
  absl::Notification first, second;
  {
    PeriodicFlusher flusher(&clock, absl::Seconds(10), [&] {
      const int n = ++ticks;
      if (n == 1) first.Notify();
      if (n == 2) second.Notify();
    });
    EXPECT_EQ(ticks.load(), 0);
    clock.Advance(absl::Seconds(10));
    first.WaitForNotification();
    EXPECT_FALSE(second.HasBeenNotified());
    clock.Advance(absl::Seconds(10));
    second.WaitForNotification();
  }
  EXPECT_EQ(ticks.load(), 2);  // Destruction stops it without another tick.
}

}  // namespace
}  // namespace overseer

#ifndef OVERSEER_TESTING_MANUAL_CLOCK_H_
#define OVERSEER_TESTING_MANUAL_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace overseer {
namespace test {

// A clock that moves only when told (Advance, SleepFor). Thread-safe.
class ManualClock : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::FromUnixSeconds(1700000000)) : now_(start) {}

  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void SleepFor(absl::Duration d) override { Advance(d); }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  void Set(absl::Time t) {
    absl::MutexLock lock(&mu_);
    now_ = t;
  }

  // Returns as soon as `cond` holds or this clock reaches `deadline`. Waiters are not
  // woken by Advance, so the wait re-checks `cond` and the manual time every
  // millisecond of real time, releasing `mu` in between.
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond, absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (true) {
      if (cond.Eval()) return true;
      if (Now() >= deadline) return false;
      mu->Unlock();
      absl::SleepFor(absl::Milliseconds(1));
      mu->Lock();
    }
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_TESTING_MANUAL_CLOCK_H_

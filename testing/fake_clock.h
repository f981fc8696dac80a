#ifndef OVERSEER_TESTING_FAKE_CLOCK_H_
#define OVERSEER_TESTING_FAKE_CLOCK_H_

// The fake Clock of every test: time moves only when the test (or a sleep or wait on
// the clock) moves it, so tests of intervals, deadlines, timeouts and backoff never
// sleep and do not depend on the speed of the machine.

#include <algorithm>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace overseer {
namespace test {

// Thread-safe.
class FakeClock : public Clock {
 public:
  // What AwaitWithDeadline does while its condition does not hold.
  enum class Mode {
    // Time moves only when told (Advance, Set, SleepFor). A wait returns as soon as its
    // condition holds or another thread moves this clock to the deadline. Waiters are
    // not woken by Advance, so a wait re-checks the condition and the fake time every
    // millisecond of real time, releasing the mutex in between.
    kManual,
    // A wait whose condition does not hold moves this clock to the wait's deadline at
    // once and returns whether the condition holds then: every timeout fires at once.
    kAutoAdvance,
  };

  // The time a clock starts at unless told otherwise.
  static absl::Time DefaultStart() { return absl::FromUnixSeconds(1700000000); }

  explicit FakeClock(absl::Time start = DefaultStart()) : FakeClock(Mode::kManual, start) {}
  explicit FakeClock(Mode mode, absl::Time start = DefaultStart()) : mode_(mode), now_(start) {}
  FakeClock(const FakeClock&) = delete;
  FakeClock& operator=(const FakeClock&) = delete;

  Mode mode() const { return mode_; }

  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  // Moves this clock forward by `d` and returns at once.
  void SleepFor(absl::Duration d) override { Advance(d); }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  void Set(absl::Time t) {
    absl::MutexLock lock(&mu_);
    now_ = t;
  }

  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond, absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (mode_ == Mode::kAutoAdvance) {
      if (cond.Eval()) return true;
      {
        absl::MutexLock lock(&mu_);
        now_ = std::max(now_, deadline);
      }
      return cond.Eval();
    }
    while (true) {
      if (cond.Eval()) return true;
      if (Now() >= deadline) return false;
      mu->Unlock();
      absl::SleepFor(absl::Milliseconds(1));
      mu->Lock();
    }
  }

 private:
  const Mode mode_;
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_TESTING_FAKE_CLOCK_H_

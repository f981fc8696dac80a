#ifndef OVERSEER_CORE_CLOCK_H_
#define OVERSEER_CORE_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace overseer {

// The source of time for everything that waits, backs off, times out or acts on an
// interval, so that tests substitute test::FakeClock (testing/fake_clock.h: it moves only
// when told, or jumps to a wait's deadline) instead of sleeping. Libraries take a Clock*
// from their caller (an *Env or options struct); only binaries' main and public option
// structs turn a null clock into Clock::Real(). Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  // The current time.
  virtual absl::Time Now() = 0;

  // Blocks the calling thread for `d`.
  virtual void SleepFor(absl::Duration d) = 0;

  // Waits until `cond` holds (evaluated with `mu` held; the caller holds `mu`) or
  // until `deadline`. Returns whether `cond` holds. The condition must be signalled
  // by state changes made under `mu`, as with absl::Mutex::AwaitWithDeadline.
  virtual bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  // The process-wide real clock. Never null; never deleted.
  static Clock* Real();
};

// Whether a wait until `deadline` needs a clock: false for absl::InfiniteFuture() (wait
// for the condition only) and absl::InfinitePast() (do not wait), which mean the same
// on every clock.
inline bool DeadlineNeedsClock(absl::Time deadline) {
  return deadline != absl::InfiniteFuture() && deadline != absl::InfinitePast();
}

// clock->AwaitWithDeadline(mu, cond, deadline), where `clock` may be null when
// !DeadlineNeedsClock(deadline). Precondition: `clock` is not null otherwise.
bool AwaitOnClock(Clock* clock, absl::Mutex* mu, const absl::Condition& cond, absl::Time deadline)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

}  // namespace overseer

#endif  // OVERSEER_CORE_CLOCK_H_

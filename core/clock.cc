#include "core/clock.h"

#include "absl/time/clock.h"

namespace overseer {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) override {
    return mu->AwaitWithDeadline(cond, deadline);
  }
};

}  // namespace

Clock* Clock::Real() {
  static RealClock* clock = new RealClock();
  return clock;
}

bool AwaitOnClock(Clock* clock, absl::Mutex* mu, const absl::Condition& cond, absl::Time deadline) {
  if (clock != nullptr) return clock->AwaitWithDeadline(mu, cond, deadline);
  if (deadline == absl::InfinitePast()) return cond.Eval();
  mu->Await(cond);
  return true;
}

}  // namespace overseer

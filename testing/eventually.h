#ifndef OVERSEER_TESTING_EVENTUALLY_H_
#define OVERSEER_TESTING_EVENTUALLY_H_

// Waiting in a test for what another process or thread does on its own time, without
// guessing how long it takes: the condition is polled until it holds, and the timeout
// only turns a hang into a failure.

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace overseer {
namespace test {

// Whether `condition` holds within `timeout` (checked every `poll`).
inline bool Eventually(const std::function<bool()>& condition,
                       absl::Duration timeout = absl::Seconds(30),
                       absl::Duration poll = absl::Milliseconds(5)) {
  const absl::Time give_up = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(poll);
  }
  return true;
}

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_TESTING_EVENTUALLY_H_

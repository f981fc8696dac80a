#ifndef OVERSEER_CORE_RPC_RETRY_H_
#define OVERSEER_CORE_RPC_RETRY_H_

// The one retry helper (STYLE.md habit 14): retries a call that failed UNAVAILABLE
// (the peer could not be reached), with capped exponential backoff measured on an
// injected Clock. Use it only for calls that are safe to repeat: idempotent ones, or
// mutating ones that carry a request id the server deduplicates.

#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace overseer {

struct RetryOptions {
  // Calls in total (the first included); 1 disables retries.
  int max_attempts = 5;
  // The wait before the second call; it doubles for each further call...
  absl::Duration initial_backoff = absl::Milliseconds(50);
  // ...up to this.
  absl::Duration max_backoff = absl::Seconds(2);
};

// Calls `call` until it returns anything but UNAVAILABLE, max_attempts calls were
// made, or the next wait would end after `deadline`; returns the last result. Waits
// with clock->SleepFor. Blocks; `clock` is not owned.
absl::Status RetryUnavailable(Clock* clock, const RetryOptions& options, absl::Time deadline,
                              const std::function<absl::Status()>& call);

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_RETRY_H_

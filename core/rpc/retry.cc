#include "core/rpc/retry.h"

#include <algorithm>

namespace overseer {

absl::Status RetryUnavailable(Clock* clock, const RetryOptions& options, absl::Time deadline,
                              const std::function<absl::Status()>& call) {
  absl::Duration backoff = options.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    absl::Status status = call();
    if (status.code() != absl::StatusCode::kUnavailable || attempt >= options.max_attempts ||
        clock->Now() + backoff > deadline) {
      return status;
    }
    clock->SleepFor(backoff);
    backoff = std::min(backoff * 2, options.max_backoff);
  }
}

}  // namespace overseer

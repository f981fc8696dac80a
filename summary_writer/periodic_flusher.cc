#include "summary_writer/periodic_flusher.h"

namespace overseer {

PeriodicFlusher::PeriodicFlusher(Clock* clock, absl::Duration period, std::function<void()> tick)
    : clock_(clock), period_(period), tick_(std::move(tick)), start_(clock->Now()) {
  thread_ = std::thread([this] { Loop(); });
}

PeriodicFlusher::~PeriodicFlusher() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void PeriodicFlusher::Loop() {
  absl::Time next = start_ + period_;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (clock_->AwaitWithDeadline(&mu_, absl::Condition(&stop_), next)) return;
    }
    // Ticks follow a fixed schedule from construction; times already passed when this
    // one starts are skipped.
    const absl::Time now = clock_->Now();
    while (next <= now) next += period_;
    tick_();
  }
}

}  // namespace overseer

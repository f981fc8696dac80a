#include "summary_writer/periodic_flusher.h"

namespace overseer {

PeriodicFlusher::PeriodicFlusher(Clock* clock, absl::Duration period,
                                 std::function<void()> tick)
    : clock_(clock), period_(period), tick_(std::move(tick)) {
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
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (clock_->AwaitWithDeadline(&mu_, absl::Condition(&stop_), clock_->Now() + period_)) {
        return;
      }
    }
    tick_();
  }
}

}  // namespace overseer

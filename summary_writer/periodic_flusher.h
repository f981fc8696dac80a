#ifndef OVERSEER_SUMMARY_WRITER_PERIODIC_FLUSHER_H_
#define OVERSEER_SUMMARY_WRITER_PERIODIC_FLUSHER_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace overseer {

// Calls `tick` on its own thread at start + k * period of `clock` time (k = 1, 2, ...;
// times missed while a tick ran are skipped) until destroyed, so that idle writers
// still flush every flush_secs. Thread-safe.
class PeriodicFlusher {
 public:
  // `clock` is not owned and must outlive this object. Precondition: period > 0.
  PeriodicFlusher(Clock* clock, absl::Duration period, std::function<void()> tick);
  // Stops the thread; waits for a running tick to finish.
  ~PeriodicFlusher();
  PeriodicFlusher(const PeriodicFlusher&) = delete;
  PeriodicFlusher& operator=(const PeriodicFlusher&) = delete;

 private:
  void Loop();

  Clock* const clock_;
  const absl::Duration period_;
  const std::function<void()> tick_;
  const absl::Time start_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_PERIODIC_FLUSHER_H_

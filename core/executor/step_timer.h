#ifndef OVERSEER_CORE_EXECUTOR_STEP_TIMER_H_
#define OVERSEER_CORE_EXECUTOR_STEP_TIMER_H_

// Runs callbacks at given times, as an injected clock tells them, on one background
// thread: how the executor cancels a step that exceeds its timeout even while every
// thread of the step is blocked inside a kernel. Whoever runs steps (the worker, a
// DirectSession) owns one on its clock and hands it to the executor (ExecutorRunArgs).

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace overseer {

// Thread-safe. Callbacks run one at a time on the timer's thread and must not block.
class StepTimer {
 public:
  using Id = int64_t;

  // `clock` (not owned, not null, must outlive the timer) decides when a deadline has
  // come. The thread starts with the first Schedule.
  explicit StepTimer(Clock* clock);
  // Drops pending callbacks without running them.
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  // Runs `callback` once, at or soon after `when` on the clock.
  Id Schedule(absl::Time when, std::function<void()> callback);
  // Unschedules `id`. When it returns the callback is not running and will not run
  // (if it is running now, waits for it). Unknown or finished ids are ignored.
  void Cancel(Id id);

  Clock* clock() const { return clock_; }

 private:
  void Loop();

  Clock* const clock_;
  absl::Mutex mu_;
  // Pending callbacks by (deadline, id).
  std::map<std::pair<absl::Time, Id>, std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  std::map<Id, absl::Time> deadlines_ ABSL_GUARDED_BY(mu_);
  Id next_id_ ABSL_GUARDED_BY(mu_) = 0;
  Id running_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t changes_ ABSL_GUARDED_BY(mu_) = 0;  // Bumped when the earliest deadline moves.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);  // Started by the first Schedule.
};

}  // namespace overseer

#endif  // OVERSEER_CORE_EXECUTOR_STEP_TIMER_H_

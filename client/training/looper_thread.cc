#include "client/training/looper_thread.h"

#include <algorithm>
#include <utility>

namespace overseer {

std::shared_ptr<ManagedThread> LooperThread::Create(Coordinator* coord, absl::Duration interval,
                                                    std::function<absl::Status()> fn,
                                                    LooperThreadOptions options) {
  // The schedule starts now, not when the new thread first runs, so that a clock moved
  // meanwhile (a test's manual clock, a loaded machine) does not shift it.
  const absl::Time first_due = coord->clock()->Now() + options.initial_delay;
  std::shared_ptr<ManagedThread> thread = ManagedThread::Create(
      std::move(options.name), [coord, interval, fn = std::move(fn), first_due] {
        RunLoop(coord, interval, fn, first_due);
      });
  coord->RegisterThread(thread);
  return thread;
}

std::shared_ptr<ManagedThread> LooperThread::Loop(Coordinator* coord, absl::Duration interval,
                                                  std::function<absl::Status()> fn,
                                                  LooperThreadOptions options) {
  std::shared_ptr<ManagedThread> thread =
      Create(coord, interval, std::move(fn), std::move(options));
  thread->Start();
  return thread;
}

void LooperThread::RunLoop(Coordinator* coord, absl::Duration interval,
                           const std::function<absl::Status()>& fn, absl::Time first_due) {
  Clock* clock = coord->clock();
  absl::Time due = first_due;
  coord
      ->StopOnException([&]() -> absl::Status {
        // An absolute deadline: `due - Now()` turned back into a deadline would move it
        // by however far the clock went on between the two readings.
        while (!coord->WaitForStopUntil(due)) {
          absl::Status status = fn();
          if (!status.ok()) return status;
          due = std::max(due + interval, clock->Now());
        }
        return absl::OkStatus();
      })
      .IgnoreError();
}

}  // namespace overseer

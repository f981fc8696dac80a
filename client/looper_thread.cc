#include "client/looper_thread.h"

#include <algorithm>
#include <utility>

namespace overseer {

std::shared_ptr<ManagedThread> LooperThread::Create(Coordinator* coord, absl::Duration interval,
                                                    std::function<absl::Status()> fn,
                                                    LooperThreadOptions options) {
  const absl::Duration initial_delay = options.initial_delay;
  std::shared_ptr<ManagedThread> thread = ManagedThread::Create(
      std::move(options.name), [coord, interval, fn = std::move(fn), initial_delay] {
        RunLoop(coord, interval, fn, initial_delay);
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
                           const std::function<absl::Status()>& fn, absl::Duration initial_delay) {
  Clock* clock = coord->clock();
  absl::Time due = clock->Now() + initial_delay;
  coord
      ->StopOnException([&]() -> absl::Status {
        while (!coord->WaitForStop(due - clock->Now())) {
          absl::Status status = fn();
          if (!status.ok()) return status;
          due = std::max(due + interval, clock->Now());
        }
        return absl::OkStatus();
      })
      .IgnoreError();
}

}  // namespace overseer

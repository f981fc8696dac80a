#ifndef OVERSEER_CLIENT_TRAINING_COORDINATOR_H_
#define OVERSEER_CLIENT_TRAINING_COORDINATOR_H_

// Coordinator: TensorFlow's tf.train.Coordinator in C++ form. Threads that work
// together (queue runners, a supervisor's services, training loops) check ShouldStop(),
// report errors with RequestStop(status), and the main thread waits for all of them
// with Join(), which returns the first error reported.
//
//   Coordinator coord;
//   coord.RegisterThread(ManagedThread::Start("worker", [&] {
//     coord.StopOnException([&]() -> absl::Status {
//       while (!coord.ShouldStop()) RETURN_IF_ERROR(DoWork());
//       return absl::OkStatus();
//     });
//   }));
//   ...
//   RETURN_IF_ERROR(coord.Join());  // The first error reported, or OK.
//
// Threads still running after the grace period: Join returns DEADLINE_EXCEEDED naming
// them (unless ignore_live_threads) and the coordinator keeps them; its destructor
// requests a stop and waits for every thread it holds to end. Nothing is detached, so
// a thread's body may use the coordinator (and whatever outlives the coordinator) until
// it returns. Callers whose threads can block forever must unblock them (close their
// queues, as QueueRunner does on stop) before destroying the coordinator.

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/training/managed_thread.h"
#include "core/clock.h"

namespace overseer {

struct CoordinatorOptions {
  // Errors with these codes reported to RequestStop are a clean stop: the coordinator
  // stops as if RequestStop() had been called without an error, and Join does not
  // return them. OUT_OF_RANGE is what input queues report at the end of input.
  std::vector<absl::StatusCode> clean_stop_codes = {absl::StatusCode::kOutOfRange};
  // Where WaitForStop, Join's grace period and LooperThread's intervals read time. Not
  // owned. Null means the real clock: a trainer's main may make a Coordinator directly;
  // everything in this library that makes one passes its own clock.
  Clock* clock = nullptr;
};

// Thread-safe: every method may be called from any thread.
class Coordinator {
 public:
  static constexpr absl::Duration kDefaultStopGracePeriod = absl::Seconds(120);

  explicit Coordinator(CoordinatorOptions options = {});
  // Requests a stop, then waits for every thread it holds (registered and not yet
  // released by Join, and those that outlived a Join's grace period) to end. Threads
  // registered but never started are released without waiting.
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Requests that the threads stop: ShouldStop() becomes true and WaitForStop returns.
  // If `status` is an error without a clean-stop code and this is the first request
  // since construction (or ClearStop), Join will return it; a request made after the
  // stop was already requested does not change what Join returns (the first request
  // wins, even one without an error). Returns OK, except when the coordinator has been
  // joined already and `status` is such an error: the error cannot be reported through
  // Join any more, so it is returned to the caller (TensorFlow raises it) and nothing
  // changes.
  absl::Status RequestStop(absl::Status status = absl::OkStatus());

  // Clears the stop request, the recorded error and the joined flag, so that the
  // coordinator can be used again.
  void ClearStop();

  // Whether a stop was requested. Never blocks.
  bool ShouldStop() const;

  // Blocks until a stop is requested or `timeout` passes on the clock (a zero or
  // negative timeout only checks; absl::InfiniteDuration() waits without limit).
  // Returns ShouldStop().
  bool WaitForStop(absl::Duration timeout = absl::InfiniteDuration());
  // The same until `deadline` on the clock (a past deadline only checks).
  bool WaitForStopUntil(absl::Time deadline);

  // TensorFlow's `with coord.stop_on_exception(): body`: runs `body`, and if it returns
  // an error, requests a stop with it. Returns the body's status.
  absl::Status StopOnException(const std::function<absl::Status()>& body);
  // If `status` is an error, requests a stop with it. Returns `status`, so that a loop
  // can report and leave in one step: `if (!coord.StopOnError(Step()).ok()) break;`.
  absl::Status StopOnError(absl::Status status);

  // Adds `thread` to the threads Join waits for; the coordinator holds a reference until
  // Join releases it. Registering a thread twice is harmless. Null is ignored.
  void RegisterThread(std::shared_ptr<ManagedThread> thread);

  // Waits for the registered threads and `threads` (which are not registered; passing
  // registered ones is harmless), in two phases:
  //   1. until a stop is requested or all of them have finished (threads never started
  //      count as finished);
  //   2. then up to `stop_grace_period` on the clock for those still running.
  // Afterwards the coordinator is joined (joined() is true) and holds no registered
  // threads. Returns:
  //   - the error of the first RequestStop, if it carried one (see RequestStop);
  //   - else DEADLINE_EXCEEDED naming the threads still running after the grace
  //     period, unless `ignore_live_threads` (then they are logged and OK returned);
  //   - else OK.
  // Threads still running are kept until they end (see the file comment). Blocks
  // without limit in phase 1 if no stop is requested and a thread never ends.
  absl::Status Join(const std::vector<std::shared_ptr<ManagedThread>>& threads = {},
                    absl::Duration stop_grace_period = kDefaultStopGracePeriod,
                    bool ignore_live_threads = false);

  // Whether Join has completed since construction or the last ClearStop.
  bool joined() const;

  // The error Join would return for the stop request, or OK (TensorFlow's
  // raise_requested_exception).
  absl::Status RequestedError() const;

  Clock* clock() const { return clock_; }

 private:
  // Shared with the finish observers of held threads, which only lock and unlock `mu`
  // (so that waits re-check their conditions) and may outlive the coordinator.
  struct State {
    absl::Mutex mu;
    bool stop_requested ABSL_GUARDED_BY(mu) = false;
    absl::Status error ABSL_GUARDED_BY(mu);
    bool joined ABSL_GUARDED_BY(mu) = false;
    std::vector<std::shared_ptr<ManagedThread>> registered ABSL_GUARDED_BY(mu);
    // Threads a Join left running after its grace period.
    std::vector<std::shared_ptr<ManagedThread>> lingering ABSL_GUARDED_BY(mu);
  };

  bool IsCleanStop(const absl::Status& status) const;
  // Makes `thread`'s end wake waits on state_->mu. Call without state_->mu held.
  void Observe(const std::shared_ptr<ManagedThread>& thread);

  const std::vector<absl::StatusCode> clean_stop_codes_;
  Clock* const clock_;
  const std::shared_ptr<State> state_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_COORDINATOR_H_

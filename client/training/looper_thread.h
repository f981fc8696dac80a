#ifndef OVERSEER_CLIENT_TRAINING_LOOPER_THREAD_H_
#define OVERSEER_CLIENT_TRAINING_LOOPER_THREAD_H_

// LooperThread: TensorFlow's tf.train.LooperThread, a thread that calls a function on
// a timer until its Coordinator stops. The Supervisor's services (checkpoints,
// summaries, the steps-per-second counter) and Supervisor::Loop are LooperThreads.
//
//   std::shared_ptr<ManagedThread> t = LooperThread::Loop(
//       &coord, absl::Seconds(600), [&]() -> absl::Status { return SaveCheckpoint(); });
//   ...
//   coord.RequestStop();
//   RETURN_IF_ERROR(coord.Join());  // Joins `t`: it registered itself.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/training/coordinator.h"
#include "client/training/managed_thread.h"

namespace overseer {

struct LooperThreadOptions {
  // Time from the creation of the thread to the first call.
  absl::Duration initial_delay = absl::ZeroDuration();
  // The thread's name in the coordinator's errors and logs.
  std::string name = "LooperThread";
};

// The thread's loop, with time read and waited on the coordinator's clock:
//   - the first call is due at creation + initial_delay, each later one `interval` after
//     the previous one was due; before each call the thread waits for its due time or
//     the stop, whichever comes first, and ends on a stop;
//   - when a call returns after the next one was due (it overran), the next call is
//     made at once and the schedule continues from it: missed calls are not made up,
//     so slow calls never cause a burst of catch-up calls;
//   - an interval of zero calls the function back to back, checking ShouldStop()
//     before each call;
//   - an error returned by the function is reported with coord->RequestStop(error)
//     and ends the thread (a clean-stop code ends it as a clean stop).
class LooperThread {
 public:
  // A thread running the loop above, registered with `coord`, not started. `coord`
  // must outlive the thread's run (it does when the thread is joined through it).
  static std::shared_ptr<ManagedThread> Create(Coordinator* coord, absl::Duration interval,
                                               std::function<absl::Status()> fn,
                                               LooperThreadOptions options = {});
  // Create followed by Start (TensorFlow's LooperThread.loop).
  static std::shared_ptr<ManagedThread> Loop(Coordinator* coord, absl::Duration interval,
                                             std::function<absl::Status()> fn,
                                             LooperThreadOptions options = {});

 private:
  static void RunLoop(Coordinator* coord, absl::Duration interval,
                      const std::function<absl::Status()>& fn, absl::Time first_due);
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_LOOPER_THREAD_H_

#ifndef OVERSEER_EXAMPLES_WORKERS_DONE_HOOK_H_
#define OVERSEER_EXAMPLES_WORKERS_DONE_HOOK_H_

// TensorFlow's ps-shutdown idiom, with a deadline, for trainers whose chief ends the
// job: a queue on ps 0 where each non-chief leaves a token as it ends, and the chief
// takes one per non-chief before it ends (and tells the cluster the job is done).

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "client/training/session_run_hook.h"

namespace overseer {
namespace examples {

// Lets the chief end (and tell the cluster the job is done, which makes the ps and
// worker servers exit) only after every non-chief has ended: a non-chief enqueues a
// token into a queue on ps 0 in End, after its final evaluation; the chief dequeues one
// per non-chief in End, waiting at most `wait`. TensorFlow's ps-shutdown idiom, with a
// deadline. The queue's node must be created before the session (Create).
class WorkersDoneHook : public SessionRunHook {
 public:
  static WorkersDoneHook Create(const Scope& root, bool is_chief, int num_non_chiefs,
                                absl::Duration wait);

  absl::Status End(ClientSession* session) override;

 private:
  WorkersDoneHook(bool is_chief, int num_non_chiefs, absl::Duration wait)
      : is_chief_(is_chief), num_non_chiefs_(num_non_chiefs), wait_(wait) {}

  bool is_chief_;
  int num_non_chiefs_;
  absl::Duration wait_;
  Operation enqueue_;
  Output dequeue_;
};

}  // namespace examples
}  // namespace overseer

#endif  // OVERSEER_EXAMPLES_WORKERS_DONE_HOOK_H_

#ifndef OVERSEER_EXAMPLES_STOP_FILE_HOOK_H_
#define OVERSEER_EXAMPLES_STOP_FILE_HOOK_H_

// StopFileHook: the end of training decided by whoever runs the job, not fixed when the
// trainer starts. Once a file appears at `path` holding a global step (decimal, e.g.
// "600\n"), the hook requests stop when the global step reaches it, as StopAtStepHook
// does with a last step. A job that crashes servers on purpose (the demo, the chaos
// test) writes the file after its last crash, so that training never ends before it.
// Write the file whole and atomically (a temporary file renamed into place): the hook
// reads it once, the first time it sees it.
//
// Errors: FAILED_PRECONDITION without a global step (from Begin); INVALID_ARGUMENT from
// the run that finds a file that does not hold a step (naming the file). Not
// thread-safe (a hook runs on the session's thread).

#include <memory>
#include <string>

#include "client/graph/scope.h"
#include "client/training/basic_session_run_hooks.h"
#include "client/training/session_run_hook.h"

namespace overseer {
namespace examples {

class StopFileHook : public SessionRunHook {
 public:
  explicit StopFileHook(std::string path) : path_(std::move(path)) {}

  absl::Status Begin(const Scope& scope) override;
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;

  // The step read from the file; -1 while there is no file.
  int64_t last_step() const { return last_step_; }

 private:
  const std::string path_;
  std::unique_ptr<Scope> scope_;
  int64_t last_step_ = -1;
  // Once the file was read: the StopAtStepHook that does the rest.
  std::unique_ptr<StopAtStepHook> stop_;
};

}  // namespace examples
}  // namespace overseer

#endif  // OVERSEER_EXAMPLES_STOP_FILE_HOOK_H_

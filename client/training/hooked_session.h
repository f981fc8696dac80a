#ifndef OVERSEER_CLIENT_TRAINING_HOOKED_SESSION_H_
#define OVERSEER_CLIENT_TRAINING_HOOKED_SESSION_H_

// HookedSession: the innermost layer of a monitored session (TensorFlow's
// _HookedSession). Each Run calls every hook's BeforeRun, makes one session run with
// the caller's fetches, feeds and targets plus every hook's, then gives each hook its
// own results in AfterRun. A hook that requests stop makes ShouldStop() true.
//
//   HookedSession hooked(session.get(), {&stop_hook, &saver_hook});
//   while (!hooked.ShouldStop()) RETURN_IF_ERROR(hooked.Run({}, {}, {train_op}, nullptr));
//
// It calls neither Begin, AfterCreateSession nor End: the layers above do.

#include <vector>

#include "absl/status/status.h"
#include "client/graph/graph.h"
#include "client/session/client_session.h"
#include "client/training/session_run_hook.h"
#include "core/tensor.h"
#include "proto/config.pb.h"

namespace overseer {

// Not thread-safe: one Run at a time (hooks keep per-run state).
class HookedSession {
 public:
  // `session` and the hooks are borrowed and must outlive this object. Hooks are called
  // in the order given.
  HookedSession(ClientSession* session, std::vector<SessionRunHook*> hooks);

  HookedSession(const HookedSession&) = delete;
  HookedSession& operator=(const HookedSession&) = delete;

  // Runs one step with the hooks. `outputs` receives one tensor per caller fetch;
  // `metadata` (may be null) the run's metadata. Errors:
  // - a hook's BeforeRun or AfterRun error, returned as is (later hooks are not called;
  //   after a BeforeRun error the session is not run);
  // - INVALID_ARGUMENT "tensor 'x:0' is fed by two hooks" or "... fed by a hook and by
  //   the caller";
  // - NOT_FOUND / INVALID_ARGUMENT for a hook fetch that does not resolve (Fetch);
  // - any error of ClientSession::Run (then no AfterRun is called).
  // The run's options are the caller's merged with each hook's (largest trace_level,
  // timeout_in_ms and inter_op_thread_pool).
  absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                   const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata);
  absl::Status Run(const std::vector<FeedPair>& feeds, const std::vector<Output>& fetches,
                   const std::vector<Operation>& targets, std::vector<Tensor>* outputs) {
    return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
  }
  absl::Status Run(const std::vector<Output>& fetches, std::vector<Tensor>* outputs) {
    return Run({}, fetches, {}, outputs);
  }

  // Whether a hook requested stop in some run so far.
  bool ShouldStop() const { return should_stop_; }

  // Closes the underlying session.
  absl::Status Close() { return session_->Close(); }

  ClientSession* session() const { return session_; }
  const std::vector<SessionRunHook*>& hooks() const { return hooks_; }

 private:
  ClientSession* const session_;
  const std::vector<SessionRunHook*> hooks_;
  bool should_stop_ = false;
};

// Merges `incoming` into `options` by TensorFlow's rule: each numeric field takes the
// larger value.
void MergeRunOptions(const RunOptions& incoming, RunOptions* options);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_HOOKED_SESSION_H_

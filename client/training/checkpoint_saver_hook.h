#ifndef OVERSEER_CLIENT_TRAINING_CHECKPOINT_SAVER_HOOK_H_
#define OVERSEER_CLIENT_TRAINING_CHECKPOINT_SAVER_HOOK_H_

// CheckpointSaverHook (tf.train.CheckpointSaverHook): saves a checkpoint when the
// session is created, every save_secs or save_steps, and at the end, as
// "<checkpoint_location>/<checkpoint_basename>-<global step>". Listeners are told
// before and after each save and may stop training after one.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/summary/summary_writer.h"
#include "client/training/basic_session_run_hooks.h"
#include "client/training/saver.h"
#include "client/training/session_run_hook.h"
#include "core/clock.h"

namespace overseer {

// Callbacks around the saves of a CheckpointSaverHook; each does nothing by default.
// Called from the thread that runs the session.
class CheckpointSaverListener {
 public:
  virtual ~CheckpointSaverListener() = default;

  // From the hook's Begin; may add nodes to the graph.
  virtual absl::Status Begin(const Scope& /*scope*/) { return absl::OkStatus(); }
  virtual absl::Status BeforeSave(ClientSession* /*session*/, int64_t /*global_step*/) {
    return absl::OkStatus();
  }
  // Returns true to request that training stop (the chief should be the one to).
  virtual absl::StatusOr<bool> AfterSave(ClientSession* /*session*/, int64_t /*global_step*/) {
    return false;
  }
  // From the hook's End, after the last save.
  virtual absl::Status End(ClientSession* /*session*/, int64_t /*global_step*/) {
    return absl::OkStatus();
  }
};

// Where the hook's Saver comes from when it is not given directly (e.g. a Scaffold's
// saver, made when the scaffold is finalized). Called in Begin.
using SaverProvider = std::function<absl::StatusOr<Saver*>()>;

struct CheckpointSaverHookOptions {
  // A local directory or "grpc://host:port/<run>" (see saver.h).
  std::string checkpoint_location;
  // Exactly one of these.
  std::optional<absl::Duration> save_secs;
  std::optional<int64_t> save_steps;
  // At most one of these (not owned). With neither, Begin makes a Saver of every global
  // variable (sharded, as a Scaffold's default saver is).
  Saver* saver = nullptr;
  SaverProvider saver_provider;
  std::string checkpoint_basename = "model.ckpt";
  // Not owned; called in order.
  std::vector<CheckpointSaverListener*> listeners;
  // If set (not owned): the graph (and with save_graph_def the meta graph) at session
  // creation and a SessionLog CHECKPOINT per save are written to it.
  SummaryWriter* summary_writer = nullptr;
  // TensorFlow's save_graph_def: at session creation the graph is written as
  // "graph.pbtxt" in a local checkpoint location (a checkpoint store over gRPC keeps
  // checkpoints only), and every checkpoint gets its meta graph ("model.ckpt-N.meta").
  bool save_graph_def = true;
  // Global steps one run advances (several steps in one run); saves are decided on the
  // step a run will reach.
  int64_t steps_per_run = 1;
  // Paces save_secs and save_steps. Required; not owned.
  Clock* clock = nullptr;
};

class CheckpointSaverHook : public SessionRunHook {
 public:
  // INVALID_ARGUMENT: no location, not exactly one of save_secs / save_steps, both a
  // saver and a saver_provider, steps_per_run < 1.
  static absl::StatusOr<std::unique_ptr<CheckpointSaverHook>> Create(
      CheckpointSaverHookOptions options);

  // Finds the global step and the saver; calls the listeners' Begin.
  absl::Status Begin(const Scope& scope) override;
  // Writes the graph and saves a checkpoint of the state at the current step.
  absl::Status AfterCreateSession(ClientSession* session, Coordinator* coord) override;
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override;
  // Saves when the timer says so; a listener's true from AfterSave requests stop.
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override;
  // Saves unless the last save was at the current step; calls the listeners' End.
  absl::Status End(ClientSession* session) override;

  // The saver in use (after Begin).
  Saver* saver() const { return saver_; }

 private:
  CheckpointSaverHook(CheckpointSaverHookOptions options, SecondOrStepTimer timer);
  // Saves at `step`; returns whether a listener asked to stop.
  absl::StatusOr<bool> Save(ClientSession* session, int64_t step);

  const CheckpointSaverHookOptions options_;
  const std::string save_path_;
  SecondOrStepTimer timer_;
  Output global_step_;
  std::unique_ptr<Saver> owned_saver_;
  Saver* saver_ = nullptr;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_CHECKPOINT_SAVER_HOOK_H_

#ifndef OVERSEER_CLIENT_TRAINING_SESSION_CREATOR_H_
#define OVERSEER_CLIENT_TRAINING_SESSION_CREATOR_H_

// Session creators for a monitored session (TensorFlow's SessionCreator,
// ChiefSessionCreator and WorkerSessionCreator): each CreateSession finalizes the
// scaffold and hands out a ClientSession whose model is ready. The chief's restores
// the latest checkpoint or initialises the model (SessionManager::PrepareSession);
// on later calls (after a recoverable error) it first checks whether the model's state
// survived and keeps it if so. A worker's waits until the chief has made the model
// ready (SessionManager::WaitForSession).

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "client/session/readiness.h"
#include "client/training/scaffold.h"
#include "client/training/session_manager.h"
#include "client/training/trainer_metrics.h"
#include "core/clock.h"
#include "proto/config.pb.h"

namespace overseer {

class ResourceMgr;

// A factory of ready sessions. MonitoredSession calls CreateSession for its first
// session and after each recoverable error, from one thread.
class SessionCreator {
 public:
  virtual ~SessionCreator() = default;
  // A new session whose model is ready to use. ABORTED or UNAVAILABLE make a
  // monitored session try again; other errors end it.
  virtual absl::StatusOr<std::unique_ptr<ClientSession>> CreateSession() = 0;
};

// What both creators take.
struct SessionCreatorOptions {
  // "" (in-process) or "grpc://host:port".
  std::string master;
  ConfigProto config;
  // Where DirectSession keeps variables for master "" (null: the process-wide one).
  ResourceMgr* resource_mgr = nullptr;
  // Readiness record marked by the chief and waited on by workers.
  std::string readiness_key = "model";
  // Null: the master's channel (NewReadinessChannel). Not owned.
  ReadinessChannel* readiness_channel = nullptr;
  // Time for waits and sleeps. Required; not owned.
  Clock* clock = nullptr;
  // If set (not owned; outlives the creator), told how long a worker's creator waited
  // for the model to be ready (client/training/trainer_metrics.h).
  TrainerMetrics* metrics = nullptr;
};

struct ChiefSessionCreatorOptions : SessionCreatorOptions {
  // At most one: restore the latest checkpoint of this location (a local directory or
  // grpc://host:port/<run>), or this checkpoint.
  std::string checkpoint_dir;
  std::string checkpoint_filename_with_path;
  // On every creation after the first, keep a model whose state survived instead of
  // restoring the checkpoint (SessionManager's restore_only_if_not_ready): a master or
  // worker restart loses no steps. TensorFlow restores on every creation (false). The
  // first creation always restores or initialises, as TensorFlow's does.
  bool restore_only_if_not_ready = true;
};

// Not thread-safe.
class ChiefSessionCreator : public SessionCreator {
 public:
  // For `scope`'s graph. `scaffold` is borrowed and must outlive the creator; null: a
  // default Scaffold over `scope`, owned by the creator.
  ChiefSessionCreator(const Scope& scope, Scaffold* scaffold,
                      ChiefSessionCreatorOptions options = {});

  // Finalizes the scaffold, then prepares a session (restores, keeps or initialises
  // the model, runs local init, checks readiness, marks it ready). Errors of the
  // scaffold and of SessionManager::PrepareSession.
  absl::StatusOr<std::unique_ptr<ClientSession>> CreateSession() override;

  Scaffold* scaffold() const { return scaffold_; }
  // Sessions created so far, and how the last one became ready: the checkpoint it
  // restored (if any), or whether the surviving model was kept.
  int sessions_created() const { return sessions_created_; }
  const std::optional<std::string>& last_restored_checkpoint() const { return last_restored_; }
  bool last_kept_ready_model() const { return last_kept_; }

 private:
  const Scope scope_;
  std::unique_ptr<Scaffold> owned_scaffold_;
  Scaffold* const scaffold_;
  const ChiefSessionCreatorOptions options_;
  std::unique_ptr<SessionManager> manager_;
  int sessions_created_ = 0;
  std::optional<std::string> last_restored_;
  bool last_kept_ = false;
};

struct WorkerSessionCreatorOptions : SessionCreatorOptions {
  // How long to wait for the chief (TensorFlow's max_wait_secs, 30 minutes);
  // DEADLINE_EXCEEDED after it.
  absl::Duration max_wait = absl::Minutes(30);
};

// Not thread-safe.
class WorkerSessionCreator : public SessionCreator {
 public:
  // As ChiefSessionCreator's.
  WorkerSessionCreator(const Scope& scope, Scaffold* scaffold,
                       WorkerSessionCreatorOptions options = {});

  // Finalizes the scaffold, then waits for the model to be ready (running local init).
  // Errors of the scaffold and of SessionManager::WaitForSession.
  absl::StatusOr<std::unique_ptr<ClientSession>> CreateSession() override;

  Scaffold* scaffold() const { return scaffold_; }

 private:
  const Scope scope_;
  std::unique_ptr<Scaffold> owned_scaffold_;
  Scaffold* const scaffold_;
  const WorkerSessionCreatorOptions options_;
  std::unique_ptr<SessionManager> manager_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_SESSION_CREATOR_H_

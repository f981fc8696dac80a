#ifndef OVERSEER_CLIENT_TRAINING_SESSION_MANAGER_H_
#define OVERSEER_CLIENT_TRAINING_SESSION_MANAGER_H_

// SessionManager: TensorFlow's tf.train.SessionManager. It creates sessions for
// a Scope's graph whose model is ready to use: the chief restores the latest
// checkpoint or initialises the model (PrepareSession); other trainers wait
// until the chief has done so (WaitForSession). Readiness is pushed, not polled
// (docs/design.md section 5): PrepareSession marks the model ready through the
// master's ReadinessChannel, and WaitForSession long-polls that channel,
// confirming with the ready op; it falls back to polling the ready op with
// capped backoff when the master has no record.
//
//   SessionManagerOptions options;
//   options.ready_op = ReportUninitializedVariables(root);
//   ASSIGN_OR_RETURN(auto manager, SessionManager::Create(root, options));
//   PrepareSessionOptions prepare;
//   prepare.init_op = GlobalVariablesInitializer(root);
//   prepare.saver = saver.get();
//   prepare.checkpoint_dir = "/ckpt";
//   ASSIGN_OR_RETURN(auto session,
//   manager->PrepareSession("grpc://master:2222", prepare));
//   // On a non-chief:
//   ASSIGN_OR_RETURN(auto session,
//   manager->WaitForSession("grpc://master:2222"));

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "client/session/readiness.h"
#include "client/session/session.h"
#include "client/training/saver.h"
#include "core/clock.h"
#include "proto/config.pb.h"

namespace overseer {

struct SessionManagerOptions {
  // Run in every session the manager hands out, after the model is initialised
  // or restored (TensorFlow's local_init_op: local variables, table
  // initialisers), when ready_for_local_init_op reports ready. Null: nothing to
  // run.
  Operation local_init_op;
  std::vector<FeedPair> local_init_feeds;
  // The RunOptions of local_init_op's runs (TensorFlow's local_init_run_options),
  // e.g. a timeout_in_ms for a local init that may block.
  RunOptions local_init_run_options;
  // A DT_STRING vector naming the variables that are not initialised, such as
  // ReportUninitializedVariables: the model is ready when it is empty. A ready
  // op that fails FAILED_PRECONDITION mentioning "uninitialized" also means
  // "not ready". Null: the model is always ready.
  Output ready_op;
  // The same check for running local_init_op (usually over the global
  // variables). Null: local_init_op runs unconditionally. Requires
  // local_init_op.
  Output ready_for_local_init_op;
  // How long to sleep between checks for a checkpoint (wait_for_checkpoint),
  // and the cap on WaitForSession's poll interval (which is at most 5 s
  // regardless).
  absl::Duration recovery_wait = absl::Seconds(30);
  // The readiness record the chief marks and other trainers wait on.
  std::string readiness_key = "model";
  // Config and resource manager of the sessions; the target is each call's
  // `master`.
  SessionOptions session_options;
  // Time for every wait and sleep. Required; not owned.
  Clock *clock = nullptr;
  // Where readiness is marked and waited on; null: NewReadinessChannel(master,
  // session_options.resource_mgr) at each call (for "", the table that lives with the
  // variables). Not owned; must be thread-safe.
  ReadinessChannel *readiness_channel = nullptr;
};

// Where to restore from. At most one of checkpoint_dir and
// checkpoint_filename_with_path may be set; with neither, or without a saver,
// nothing is restored.
struct RecoverSessionOptions {
  Saver *saver = nullptr;  // Not owned.
  // A checkpoint location (local directory or grpc://host:port/<run>): the
  // latest checkpoint there is restored.
  std::string checkpoint_dir;
  // One checkpoint's path ("<location>/<name>").
  std::string checkpoint_filename_with_path;
  // Wait, sleeping recovery_wait between checks, until checkpoint_dir holds a
  // checkpoint or max_wait passes.
  bool wait_for_checkpoint = false;
  absl::Duration max_wait = absl::Seconds(7200);
  // Replaces SessionManagerOptions::session_options.config for this session.
  std::optional<ConfigProto> config;
};

// Runs extra initialisation in the session (e.g. assigns pre-trained values).
using SessionInitFn = std::function<absl::Status(ClientSession &session)>;

struct PrepareSessionOptions : RecoverSessionOptions {
  // Run (with init_feeds), then init_fn, when no checkpoint was restored.
  Operation init_op;
  std::vector<FeedPair> init_feeds;
  SessionInitFn init_fn;
  // Check the model first, and keep it if its state survived: when
  // ready_for_local_init_op (or, without one, ready_op) passes, e.g. because the ps
  // tasks kept their variables while the master or a worker restarted, nothing is
  // restored or initialised; local_init_op and the ready check run as usual and the
  // model is marked ready again. Otherwise PrepareSession goes on as without. A chief
  // that recreates its session after an error thus loses no steps unless a ps lost
  // its state. No effect without a ready_op.
  bool restore_only_if_not_ready = false;
};

// PrepareSessionWithResult's result: the session and how its model became ready.
struct PreparedSession {
  std::unique_ptr<ClientSession> session;
  // The checkpoint restored, if one was.
  std::optional<std::string> restored_checkpoint;
  // Whether the model was found ready and kept (restore_only_if_not_ready).
  bool kept_ready_model = false;
};

// RecoverSession's result: the session, and whether its model is ready.
struct RecoveredSession {
  std::unique_ptr<ClientSession> session;
  bool initialized = false;
};

// Thread-safe: calls may run concurrently; each creates its own session.
class SessionManager {
 public:
  // A manager for `scope`'s graph, which the option ops must belong to.
  // INVALID_ARGUMENT if ready_for_local_init_op is set without local_init_op,
  // if an op belongs to another graph, or if the clock is null.
  static absl::StatusOr<std::unique_ptr<SessionManager>> Create(const Scope &scope,
                                                                SessionManagerOptions options);

  SessionManager(const SessionManager &) = delete;
  SessionManager &operator=(const SessionManager &) = delete;

  // A session on `master` whose model is ready: restored from a checkpoint if
  // one is found (waiting for it when asked), else initialised by init_op and
  // init_fn; then local_init_op; then the ready check. Marks the model ready on
  // the readiness channel (a failure to mark is logged, not returned). Errors:
  // FAILED_PRECONDITION "Model is not initialized and no init_op or init_fn or
  // local_init_op was given" when nothing restored or initialised the model and
  // it is not ready; FAILED_PRECONDITION "Init operations did not make model
  // ready for local_init ..." / "Init operations did not make model ready ..."
  // naming the uninitialised variables and their tasks; errors of the store,
  // the restore, the init ops and init_fn. When the model turns out not ready,
  // a readiness mark left by an earlier chief is withdrawn. Blocks up to
  // max_wait when wait_for_checkpoint.
  absl::StatusOr<std::unique_ptr<ClientSession>> PrepareSession(
      const std::string &master, const PrepareSessionOptions &options = {});
  // PrepareSession, also saying whether a checkpoint was restored or the model kept.
  absl::StatusOr<PreparedSession> PrepareSessionWithResult(
      const std::string &master, const PrepareSessionOptions &options = {});

  // A session on `master` restored from a checkpoint if there is one;
  // local_init_op runs when ready_for_local_init_op allows. `initialized` is
  // whether a checkpoint was restored and the model is ready (then it is marked
  // ready as by PrepareSession). Errors of the store, the restore and the local
  // init op.
  absl::StatusOr<RecoveredSession> RecoverSession(const std::string &master,
                                                  const RecoverSessionOptions &options = {});

  // A session on `master` once another trainer has made the model ready: waits
  // on the readiness channel, confirms with the ready op (running local_init_op
  // when ready_for_local_init_op allows), all in one session. Polls the ready
  // op with capped backoff (100 ms doubling to 5 s) when the channel has no
  // record or cannot be reached. Logs what it waits for at most every 30 s.
  // DEADLINE_EXCEEDED after `max_wait`, naming the uninitialised variables and
  // the tasks they live on; errors of running the ops other than
  // "uninitialized".
  absl::StatusOr<std::unique_ptr<ClientSession>> WaitForSession(
      const std::string &master, absl::Duration max_wait = absl::InfiniteDuration(),
      const std::optional<ConfigProto> &config = std::nullopt);

  const SessionManagerOptions &options() const { return options_; }

 private:
  // Whether a check passed; otherwise why not.
  struct Readiness {
    bool ready = true;
    std::string reason;
  };

  SessionManager(const Scope &scope, SessionManagerOptions options);

  absl::StatusOr<std::unique_ptr<ClientSession>> NewClientSession(
      const std::string &master, const std::optional<ConfigProto> &config) const;
  // Restores into `session` if possible; returns the checkpoint restored, or
  // nullopt.
  absl::StatusOr<std::optional<std::string>> RestoreCheckpoint(
      ClientSession &session, const RecoverSessionOptions &options) const;
  absl::StatusOr<Readiness> Check(ClientSession &session, const Output &op) const;
  // Runs local_init_op if ready_for_local_init_op passes; otherwise says why
  // not.
  absl::StatusOr<Readiness> TryRunLocalInit(ClientSession &session) const;
  // Local init then the ready check (what a waiting trainer confirms).
  absl::StatusOr<Readiness> LocalInitAndCheck(ClientSession &session) const;
  // restore_only_if_not_ready: whether the model's state survived and is kept (local
  // init run, ready check passed).
  absl::StatusOr<bool> KeepReadyModel(ClientSession &session, const std::string &master) const;
  // Marks (or withdraws) the model's readiness on `master`; failures are
  // logged.
  // Over the tasks `config`'s device filters (or the session options') match.
  void MarkReady(const std::string &master, const std::optional<ConfigProto> &config) const;
  void WithdrawReady(const std::string &master) const;

  const Scope scope_;
  const SessionManagerOptions options_;
};

// "v, w on /job:ps/task:0; b on /job:ps/task:1": the variables `names` of
// `graph` grouped by the task their node requests ("the default device" when
// none).
std::string DescribeVariablesByTask(const ClientGraph &graph,
                                    const std::vector<std::string> &names);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_SESSION_MANAGER_H_

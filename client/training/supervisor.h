#ifndef OVERSEER_CLIENT_TRAINING_SUPERVISOR_H_
#define OVERSEER_CLIENT_TRAINING_SUPERVISOR_H_

// Supervisor: TensorFlow's tf.train.Supervisor. It resolves the model's default ops,
// creates a ready session through a SessionManager (the chief restores or
// initialises, other trainers wait for it), and runs the chief's services on its
// Coordinator: a checkpoint every save_model_secs, summaries every
// save_summaries_secs and the global_step/sec counter.
//
//   SupervisorOptions options;
//   options.is_chief = task == 0;
//   options.logdir = "/tmp/train";   // checkpoints and events
//   ASSIGN_OR_RETURN(auto sv, Supervisor::Create(root, options));
//   ASSIGN_OR_RETURN(auto managed, sv->ManagedSession("grpc://master:2222"));
//   absl::Status body;
//   while (body.ok() && !sv->ShouldStop()) body = managed->session().Run(...);
//   RETURN_IF_ERROR(managed->End(body));  // stops the services, closes the session
//
// Options that TensorFlow defaults with USE_DEFAULT are std::optional here: nullopt
// resolves the default, an explicit null value means "none".

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "client/session/readiness.h"
#include "client/session/session.h"
#include "client/summary/summary_writer.h"
#include "client/training/coordinator.h"
#include "client/training/managed_session.h"
#include "client/training/managed_thread.h"
#include "client/training/queue_runner.h"
#include "client/training/saver.h"
#include "client/training/session_manager.h"
#include "core/clock.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"

namespace overseer {

// The chief's background services, for SupervisorOptions::after_service_run.
enum class SupervisorService { kCheckpoint, kSummary, kStepCounter };

struct SupervisorOptions {
  bool is_chief = true;
  // A local directory for checkpoints and event files. Empty: none (no services).
  std::string logdir;
  // Where checkpoints are saved and restored from instead of logdir: a local directory
  // or a checkpoint_store run, grpc://host:port/<run>.
  std::string checkpoint_dir;
  // Where the chief's events go instead of logdir: a local directory or a
  // summary_writer run, grpc://host:port/<run>.
  std::string summary_dir;

  // The defaults (nullopt) are TensorFlow's: the graph's collection of the same name
  // (GraphKeys::kReadyOp, ...) if it holds one, else the op said below.
  // nullopt: ReportUninitializedVariables of every global and local variable. Null: no
  // check.
  std::optional<Output> ready_op;
  // nullopt: ReportUninitializedVariables of every global variable. Null: local_init_op
  // runs unconditionally.
  std::optional<Output> ready_for_local_init_op;
  // nullopt: GlobalVariablesInitializer. Null: none.
  std::optional<Operation> init_op;
  std::vector<FeedPair> init_feeds;
  // Run after init_op when the model is initialised rather than restored (e.g. to
  // load pre-trained values into some variables).
  SessionInitFn init_fn;
  // nullopt: LocalVariablesInitializer (a NoOp without local variables). Null: none.
  std::optional<Operation> local_init_op;
  // nullopt: a Saver of every global variable if there are any. nullptr: none. A
  // given Saver is not owned.
  std::optional<Saver*> saver;
  // nullopt: the kSummaryOp collection, else MergeAllSummaries if the graph has
  // summaries. Null: none.
  std::optional<Output> summary_op;
  // An int32 or int64 scalar counting steps, used for checkpoint names and summary
  // steps. nullopt: the graph's global step (GetGlobalStep, else an int node named
  // "global_step"). Null: none.
  std::optional<Output> global_step;
  // nullopt: the chief writes events to summary_dir (or logdir) if set. nullptr: no
  // events. A given writer is not owned and is flushed, not closed, by Stop.
  std::optional<SummaryWriter*> summary_writer;
  // A manager to use instead of one built from the options above. Not owned.
  SessionManager* session_manager = nullptr;

  // Zero disables the service.
  absl::Duration save_model_secs = absl::Seconds(600);
  absl::Duration save_summaries_secs = absl::Seconds(120);
  // Between checks for a checkpoint (and the cap on a non-chief's readiness polls).
  absl::Duration recovery_wait_secs = absl::Seconds(30);
  absl::Duration stop_grace_secs = absl::Seconds(120);
  std::string checkpoint_basename = "model.ckpt";

  // Config and resource manager of the sessions (the target is each call's master).
  SessionOptions session_options;
  // Time for services, waits and the coordinator. Required; not owned.
  Clock* clock = nullptr;
  // Readiness marks and waits; null: the master's (NewReadinessChannel). Not owned.
  ReadinessChannel* readiness_channel = nullptr;
  // Called after each run of a service with the run's result (for progress displays
  // and tests): the first run on the thread starting the services, the others on the
  // service's thread. Must be thread-safe and quick.
  std::function<void(SupervisorService, const absl::Status&)> after_service_run;
};

struct PrepareOrWaitOptions {
  std::optional<ConfigProto> config;
  // For the chief: wait up to max_wait for a checkpoint to restore.
  bool wait_for_checkpoint = false;
  // How long to wait for a checkpoint (chief) or for the model to be ready (others).
  absl::Duration max_wait = absl::Seconds(7200);
  // Start the chief's services and the graph's queue runners.
  bool start_standard_services = true;
};

// Thread-safe for ShouldStop, RequestStop, StopOnException, WaitForStop, Loop and
// SummaryComputed; PrepareOrWaitForSession, ManagedSession, StartStandardServices,
// StartQueueRunners and Stop are called by one thread at a time. A session handed out
// must outlive the services started on it (call Stop before destroying it;
// ManagedSession does).
class Supervisor {
 public:
  // Resolves the defaults (adding their ops to `scope`'s graph), creates the chief's
  // summary writer. INVALID_ARGUMENT for a non-chief whose variables lack a device
  // ("When using replicas, all Variables must have their device set: v"), a
  // global_step that is not an int32/int64 scalar, or ops of another graph; errors of
  // creating the Saver, the writer or the SessionManager.
  static absl::StatusOr<std::unique_ptr<Supervisor>> Create(const Scope& scope,
                                                            SupervisorOptions options);

  // Requests a stop and waits for the threads (see Coordinator's destructor).
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Clears a previous stop. The chief prepares a session (restoring from the
  // checkpoint location or initialising, see SessionManager::PrepareSession), writes
  // the graph to the event file, and starts the standard services; other trainers wait
  // for the model to be ready (SessionManager::WaitForSession). Then the queue runners
  // start. Errors of the session manager and of starting the services (which are
  // stopped again).
  absl::StatusOr<std::unique_ptr<ClientSession>> PrepareOrWaitForSession(
      const std::string& master = "", const PrepareOrWaitOptions& options = {});

  // PrepareOrWaitForSession in a ManagedSession. On an error the supervisor is
  // stopped before it is returned.
  absl::StatusOr<std::unique_ptr<overseer::ManagedSession>> ManagedSession(
      const std::string& master = "", const ManagedSessionOptions& options = {});

  // Starts the chief's services on `session`: a SessionLog START at the current global
  // step, then a checkpoint and the summaries at once and every save_model_secs /
  // save_summaries_secs, and the global_step/sec counter every save_summaries_secs.
  // Services whose location, writer, saver or op is missing are not started; without
  // checkpoint and summary locations nothing starts (logged). The first runs happen
  // before any thread starts: their errors are returned and leave nothing running;
  // later errors stop the coordinator. The threads are registered with coord().
  // FAILED_PRECONDITION for a non-chief ("Only chief supervisor can start standard
  // services").
  absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> StartStandardServices(
      ClientSession* session);

  // Starts the threads of the graph's queue runners (the kQueueRunners collection) on
  // `session`, registered with the coordinator (so Stop joins them, and a stop closes
  // their queues). Errors of QueueRunner's StartQueueRunners.
  absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> StartQueueRunners(
      ClientSession* session);
  // The same for the given runners (TensorFlow's queue_runners argument) instead of
  // the collection's; INVALID_ARGUMENT for a null runner.
  absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> StartQueueRunners(
      ClientSession* session, const std::vector<QueueRunner*>& queue_runners);

  // Calls `fn` every `interval` on a LooperThread of the coordinator until a stop
  // (interval zero: back to back). An error from `fn` stops the coordinator.
  std::shared_ptr<ManagedThread> Loop(absl::Duration interval, std::function<absl::Status()> fn);

  // Requests a stop and joins the coordinator's threads and `threads` within
  // stop_grace_secs; then, if `close_summary_writer`, writes a SessionLog STOP and
  // closes the writer (an owned one; a given one is flushed). Does not save a
  // checkpoint or close the session. Returns Coordinator::Join's result (the first
  // error reported, or DEADLINE_EXCEEDED naming threads still running unless
  // `ignore_live_threads`), else the writer's error.
  absl::Status Stop(const std::vector<std::shared_ptr<ManagedThread>>& threads = {},
                    bool close_summary_writer = true, bool ignore_live_threads = false);

  absl::Status RequestStop(absl::Status status = absl::OkStatus()) {
    return coord_.RequestStop(std::move(status));
  }
  bool ShouldStop() const { return coord_.ShouldStop(); }
  absl::Status StopOnException(const std::function<absl::Status()>& body) {
    return coord_.StopOnException(body);
  }
  // Blocks until a stop is requested.
  void WaitForStop() { coord_.WaitForStop(); }

  // Writes `summary` (a Summary or one serialized, e.g. a summary op's output) at
  // `global_step`, or at the current global step when nullopt (0 without one).
  // FAILED_PRECONDITION "Writing a summary requires a summary writer." when there is
  // none (non-chief, no logdir, or none asked for); INVALID_ARGUMENT for a serialized
  // summary that does not parse.
  absl::Status SummaryComputed(ClientSession& session, const Summary& summary,
                               std::optional<int64_t> global_step = std::nullopt);
  absl::Status SummaryComputed(ClientSession& session, const std::string& serialized_summary,
                               std::optional<int64_t> global_step = std::nullopt);

  // The current value of global_step in `session`. FAILED_PRECONDITION without one.
  absl::StatusOr<int64_t> GlobalStepValue(ClientSession& session) const;

  bool is_chief() const { return options_.is_chief; }
  Coordinator* coord() { return &coord_; }
  SessionManager* session_manager() const { return session_manager_; }
  Saver* saver() const { return saver_; }
  // The chief's writer, or null.
  SummaryWriter* summary_writer() const;
  const Output& ready_op() const { return ready_op_; }
  const Operation& init_op() const { return init_op_; }
  const Output& summary_op() const { return summary_op_; }
  const Output& global_step() const { return global_step_; }
  // "<checkpoint location>/<checkpoint_basename>" for the chief, or "".
  const std::string& save_path() const { return save_path_; }

 private:
  Supervisor(const Scope& scope, SupervisorOptions options);

  absl::Status ResolveDefaults();
  // Opens the chief's owned writer if it was closed by Stop.
  absl::Status ReopenSummaryWriter();
  absl::Status WriteGraph();
  absl::Status SaveCheckpoint(ClientSession* session);
  absl::Status ComputeSummaries(ClientSession* session);
  void ServiceRan(SupervisorService service, const absl::Status& status) const;
  // Calls `fn` every `interval` from now on a thread registered with the coordinator
  // until a stop; an error stops the coordinator.
  std::shared_ptr<ManagedThread> StartService(std::string name, absl::Duration interval,
                                              std::function<absl::Status()> fn);
  // The global_step/sec counter's state; used by its thread only.
  struct StepCounter {
    std::string tag;
    absl::Time last_time;
    int64_t last_step = 0;
    int logged = 0;
  };
  absl::Status CountSteps(ClientSession* session, StepCounter* counter);

  const Scope scope_;
  SupervisorOptions options_;
  Output ready_op_;
  Output ready_for_local_init_op_;
  Operation init_op_;
  Operation local_init_op_;
  Output summary_op_;
  Output global_step_;
  std::unique_ptr<Saver> owned_saver_;
  Saver* saver_ = nullptr;
  std::unique_ptr<SessionManager> owned_session_manager_;
  SessionManager* session_manager_ = nullptr;
  std::string checkpoint_dir_;
  std::string summary_dir_;
  std::string save_path_;
  absl::Mutex saver_mu_;  // One Save at a time.

  mutable absl::Mutex writer_mu_;
  std::unique_ptr<SummaryWriter> owned_writer_ ABSL_GUARDED_BY(writer_mu_);
  SummaryWriter* writer_ ABSL_GUARDED_BY(writer_mu_) = nullptr;
  bool graph_added_ ABSL_GUARDED_BY(writer_mu_) = false;
  // Last, so that it is destroyed first: its destructor waits for the service threads,
  // which use the members above.
  Coordinator coord_;
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_SUPERVISOR_H_

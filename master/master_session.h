#ifndef OVERSEER_MASTER_MASTER_SESSION_H_
#define OVERSEER_MASTER_MASTER_SESSION_H_

// One client session on the master: its graph (grown by Extend), the tasks and devices
// it spans, and per (feeds, fetches, targets) signature the pruned, placed and
// partitioned step registered on its tasks (cached until the session closes).

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/executor/partial_run.h"
#include "core/graph/feed_check.h"
#include "core/graph/update_gate.h"
#include "core/graph/validate.h"
#include "core/message_budget.h"
#include "master/step_runner.h"
#include "master/worker_cache.h"
#include "proto/master.pb.h"

namespace overseer {

// What a session knows about one of its tasks.
struct SessionTask {
  std::string name;  // "/job:ps/replica:0/task:0".
  uint64_t incarnation = 0;
  std::vector<DeviceAttributes> devices;
};

// Thread-safe: steps run concurrently; Extend and Close are serialised with them.
class MasterSession {
 public:
  // `tasks` have answered GetStatus; `client_task` is one of them. `workers`,
  // `next_step_id` and `gate` are not owned and outlive the session. A step whose
  // fetches add up to more than `max_message_tensor_bytes` fails INVALID_ARGUMENT naming
  // them. Steps that write variables pass `gate` shared and checkpoint snapshots pass it
  // alone (core/graph/update_gate.h); without a gate, steps are not held.
  MasterSession(std::string handle, ConfigProto config, std::vector<SessionTask> tasks,
                std::string client_task, MasterWorkerCacheInterface* workers,
                std::atomic<int64_t>* next_step_id,
                int64_t max_message_tensor_bytes = kMaxMessageTensorBytes,
                UpdateGate* gate = nullptr);
  ~MasterSession();

  // Validates `graph` and creates a worker session on every task.
  absl::Status Create(GraphDef graph);
  // Adds `graph`'s nodes if `current_version` is the session's version; returns the
  // new version. FAILED_PRECONDITION for a stale version, INVALID_ARGUMENT for a bad
  // or duplicate node (the graph is then unchanged).
  absl::StatusOr<int64_t> Extend(const GraphDef& graph, int64_t current_version);
  // The encoded size of the session's graph.
  int64_t graph_bytes() const;
  // How many step ids, and for how long, a DirectStep the session hands out is valid
  // (RunStepRequest.direct_ok).
  static constexpr int64_t kDirectStepIds = 1024;
  static constexpr int64_t kDirectValidMs = 1000;

  // Runs a step without blocking for long: `done` is called once with the step's
  // status (the fetches are in `response`), on the thread of its last RunGraph reply,
  // on a StepBlockingThreads() thread (a signature built for the first time, a failed
  // step), or on this thread for an error found before the step starts. `request`,
  // `response` and `cancellation` (optional: cancels the step, CANCELLED) must live
  // until `done`, and so must the session. With request->direct_ok, a successful step
  // of a signature with one partition on one task that writes no variable (and options
  // that ask for nothing but a timeout) answers with a DirectStep.
  void RunAsync(const RunStepRequest* request, RunStepResponse* response,
                CancellationManager* cancellation, std::function<void(absl::Status)> done);
  // Session::PartialRunSetup: prepares (and registers on the tasks) the partial run's
  // signature; returns its handle. The step starts on the tasks with its first call.
  absl::StatusOr<std::string> PartialRunSetup(const std::vector<std::string>& feeds,
                                              const std::vector<std::string>& fetches,
                                              const std::vector<std::string>& targets);
  // Prepares (and registers on the tasks) the signature of `options`; returns the
  // callable's handle (1, 2, ... within the session).
  absl::StatusOr<int64_t> MakeCallable(const CallableOptions& options);
  // RunAsync for a callable. INVALID_ARGUMENT for a released or never made handle or a
  // wrong number of feeds.
  void RunCallableAsync(const RunCallableRequest* request, RunCallableResponse* response,
                        CancellationManager* cancellation, std::function<void(absl::Status)> done);
  // OK for a released handle; INVALID_ARGUMENT for one never made.
  absl::Status ReleaseCallable(int64_t handle);
  // Ends the steps still running (CANCELLED, naming the session), deregisters the
  // graphs and deletes the worker sessions (errors ignored: a dead task forgets them
  // anyway). Idempotent.
  void Close();

  const std::string& handle() const { return handle_; }
  const std::vector<SessionTask>& tasks() const { return tasks_; }

 private:
  struct Signature {
    RegisteredStep step;
    std::vector<FeedCheck> feed_checks;
    // Partial runs: the feeds each fetch needs (FeedsNeededByFetches).
    std::vector<std::vector<int>> fetch_needs;
    // How its steps pass the update gate.
    GatePass gate;
    // What a client needs to run the signature itself (RunStepResponse.direct), without
    // step ids; null for a signature that must go through the master.
    std::shared_ptr<const DirectStep> direct;
  };
  struct PartialRun {
    PartialRun(std::shared_ptr<const Signature> sig, int64_t step_id,
               const std::vector<std::string>& feeds, const std::vector<std::string>& fetches)
        : sig(std::move(sig)), step_id(step_id), tracker(feeds, fetches, this->sig->fetch_needs) {}
    const std::shared_ptr<const Signature> sig;
    const int64_t step_id;
    absl::Mutex mu;
    PartialRunTracker tracker ABSL_GUARDED_BY(mu);
  };
  struct Callable {
    std::shared_ptr<const Signature> signature;
    RunOptions run_options;
    std::vector<std::string> fetches;
  };

  // One step's own data, from its arrival to its reply.
  struct PendingStep {
    std::vector<std::string> fetch_names;
    std::vector<const TensorProto*> feeds;
    std::vector<TensorProto> fetches;
    std::shared_ptr<StepCleaner> cleaner;
  };
  using SignatureCallback = std::function<void(absl::StatusOr<std::shared_ptr<const Signature>>)>;

  // The signature of (feeds, fetches, targets), built and registered on first use
  // (blocking). A partial run's signature is its own: its feeds may come after the
  // step starts.
  absl::StatusOr<std::shared_ptr<const Signature>> GetSignature(
      const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets, bool partial = false);
  // Calls `then` with the signature: on this thread if it is cached (or the session
  // is not usable), else on a StepBlockingThreads() thread once it is built.
  void WithSignature(std::vector<std::string> feeds, std::vector<std::string> fetches,
                     std::vector<std::string> targets, SignatureCallback then);
  absl::StatusOr<std::shared_ptr<Signature>> BuildSignature(const ValidatedGraph& graph,
                                                            const std::vector<std::string>& feeds,
                                                            const std::vector<std::string>& fetches,
                                                            const std::vector<std::string>& targets,
                                                            bool partial);
  // One call of a partial run (RunStepRequest.partial_run_handle), blocking: a RunGraph
  // to every task of its step, with the feeds and fetches each holds.
  absl::Status RunPartial(const RunStepRequest& request, RunStepResponse* response,
                          CancellationManager* cancellation);
  // Runs the step of `step`'s feeds into its fetches and calls `done` (as RunAsync);
  // its fetch_names name the fetches in errors (the reply's size is checked). Passes
  // the update gate first.
  void RunSignatureAsync(std::shared_ptr<const Signature> sig, std::shared_ptr<PendingStep> step,
                         const RunOptions& options, RunMetadata* metadata,
                         CancellationManager* cancellation, std::function<void(absl::Status)> done);
  // RunSignatureAsync once through the gate.
  void RunPassedAsync(std::shared_ptr<const Signature> sig, std::shared_ptr<PendingStep> step,
                      const RunOptions& options, RunMetadata* metadata,
                      CancellationManager* cancellation, std::function<void(absl::Status)> done);
  // After a step failed with `error`: if a task restarted, the session is aborted for
  // good and that is the error, its steps still running are cancelled and the tasks
  // still up forget it; otherwise `error`.
  absl::Status CheckTasks(const absl::Status& error);
  // Deletes this session's worker session on each of `workers` (which forget its
  // graphs; their variables stay), all at once; errors are ignored.
  void DeleteWorkerSessions(const std::vector<WorkerInterface*>& workers);
  // OK, or why the session's steps end: its abort, or its close (CANCELLED).
  absl::Status Ended() const;
  absl::Status Usable() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const std::string handle_;
  const ConfigProto config_;
  const std::vector<SessionTask> tasks_;
  const std::string client_task_;
  MasterWorkerCacheInterface* const workers_;
  std::atomic<int64_t>* const next_step_id_;
  const int64_t max_message_tensor_bytes_;
  UpdateGate* const gate_;
  std::vector<std::string> devices_;
  std::string default_device_;

  absl::Mutex build_mu_;  // Serialises signature builds (each registers graphs).
  mutable absl::Mutex mu_;
  GraphDef graph_def_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const ValidatedGraph> graph_ ABSL_GUARDED_BY(mu_);
  int64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<const Signature>> signatures_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, Callable> callables_ ABSL_GUARDED_BY(mu_);
  int64_t next_callable_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, std::shared_ptr<PartialRun>> partial_runs_ ABSL_GUARDED_BY(mu_);
  int64_t next_partial_run_ ABSL_GUARDED_BY(mu_) = 1;
  absl::Status aborted_ ABSL_GUARDED_BY(mu_);
  // Cancelled with aborted_ when it is set, or as the session closes: every step
  // running registered on it.
  CancellationManager ending_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Cleans up finished steps in the background. Steps hold a reference while they run;
  // Close drops the session's, and the last holder drains what is queued.
  std::shared_ptr<StepCleaner> cleaner_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_MASTER_SESSION_H_

#ifndef OVERSEER_WORKER_WORKER_H_
#define OVERSEER_WORKER_WORKER_H_

// The worker logic: a WorkerInterface in the same process. The gRPC service
// (worker/rpc/grpc_worker_service.h) forwards to it; tests and embedded clusters call
// it directly. One ResourceMgr per worker, shared by every worker session.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/clock.h"
#include "core/executor/partial_run.h"
#include "core/executor/step_timer.h"
#include "core/message_budget.h"
#include "core/rendezvous.h"
#include "core/resource_mgr.h"
#include "proto/cluster.pb.h"
#include "worker/graph_mgr.h"
#include "worker/rendezvous_mgr.h"
#include "worker/worker_cache.h"
#include "worker/worker_interface.h"

namespace overseer {

struct WorkerOptions {
  std::string job_name = "localhost";
  int task_index = 0;
  // 0: a random non-zero value chosen at construction.
  uint64_t incarnation = 0;
  // The cluster of sessions whose CreateWorkerSession names none.
  ClusterDef cluster;
  // The fetches of one RunGraph travel in its reply: when their encoded sizes add up
  // to more than this, RunGraph fails INVALID_ARGUMENT naming them (protobuf cannot
  // encode a message of 2 GiB or more).
  int64_t max_message_tensor_bytes = kMaxMessageTensorBytes;
  // A graph whose recent runs took this long or less on average (and that never waits)
  // is quick: the thread that read its RunGraph call runs it (IsQuick).
  absl::Duration quick_run_graph = absl::Microseconds(500);
  // A RecvTensor can come before its step's RunGraph (the master starts the tasks'
  // RunGraphs at once). One that waits this long while no RunGraph of its step came
  // fails DEADLINE_EXCEEDED, whatever its caller's deadline: the step's master is gone,
  // or the caller is no peer. Zero: no bound. Once the RunGraph came, the caller's
  // deadline and the step's cleanup bound the wait.
  absl::Duration recv_wait_for_step = absl::Seconds(60);
};

// What the worker talks to. Every field is optional.
struct WorkerEnv {
  // Builds each session's way to the other tasks; null: sessions cannot receive
  // tensors from other tasks (FAILED_PRECONDITION when a step tries).
  WorkerCacheFactory worker_cache_factory;
  // Measures step timeouts and receive deadlines; null means Clock::Real() (the worker
  // resolves it once and hands it to everything below). Not owned.
  Clock* clock = nullptr;
  // Called on the first JobDone with its reason (worker_server uses it to drain and
  // exit under --exit_when_job_done). Must not block; may be null.
  std::function<void(const std::string& reason)> on_job_done;
};

// Thread-safe.
class Worker : public WorkerInterface {
  struct Session;

 public:
  // The session and graph that a RunGraph request names, looked up once (FindGraph)
  // for both IsQuick and RunGraph.
  class FoundGraph {
   private:
    friend class Worker;
    std::shared_ptr<Session> session_;
    std::shared_ptr<RegisteredGraph> graph_;
  };

  Worker(WorkerOptions options, WorkerEnv env);
  ~Worker() override;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // "/job:J/replica:0/task:I".
  const std::string& task_name() const { return task_name_; }
  // "/job:J/replica:0/task:I/device:CPU:0".
  const std::string& device_name() const { return device_name_; }
  uint64_t incarnation() const { return incarnation_; }
  ResourceMgr* resource_mgr() { return &resources_; }
  int num_sessions() const;
  // Steps whose state is held (created by RunGraph or RecvTensor, not yet cleaned up).
  int num_steps() const { return rendezvous_.num_steps(); }

  absl::Status GetStatus(const GetStatusRequest& request, GetStatusResponse* response) override;
  absl::Status CreateWorkerSession(const CreateWorkerSessionRequest& request,
                                   CreateWorkerSessionResponse* response) override;
  absl::Status DeleteWorkerSession(const DeleteWorkerSessionRequest& request,
                                   DeleteWorkerSessionResponse* response) override;
  absl::Status RegisterGraph(const RegisterGraphRequest& request,
                             RegisterGraphResponse* response) override;
  absl::Status DeregisterGraph(const DeregisterGraphRequest& request,
                               DeregisterGraphResponse* response) override;
  // See WorkerInterface. With request.cleanup_on_return, a successful step's state is
  // freed before returning (a failed one waits for CleanupGraph, as always). The steps
  // of request.cleanup_step_id are cleaned up first, as CleanupGraph would.
  absl::Status RunGraph(const RunGraphRequest& request, RunGraphResponse* response) override;
  // RunGraph for a call that may be given up: when `call_cancellation` (may be null) is
  // cancelled, the step ends here as CleanupGraph would end it, also if that happened
  // before the step started (it then fails CANCELLED without running).
  absl::Status RunGraph(const RunGraphRequest& request, RunGraphResponse* response,
                        CancellationManager* call_cancellation);
  // The same with the request's graph already found.
  absl::Status RunGraph(const FoundGraph& graph, const RunGraphRequest& request,
                        RunGraphResponse* response, CancellationManager* call_cancellation);
  // The same without waiting for the step (Executor::RunAsync): `done` gets what
  // RunGraph would return, on the thread that ends the step (this one, if it ends at
  // once). This thread runs only the graph's nodes that run inline; of a graph whose
  // only waits are async kernels' (Executor::waits_only_async), it never waits. A
  // partial run's RunGraph (RunGraphRequest.is_partial) runs as RunGraph does, on this
  // thread. `request` and `response` must outlive `done`'s call.
  void RunFoundGraphAsync(const FoundGraph& graph, const RunGraphRequest& request,
                          RunGraphResponse* response, CancellationManager* call_cancellation,
                          std::function<void(absl::Status)> done);
  // Whether RunFoundGraphAsync of `graph` holds its thread only for the nodes that run
  // inline: its only kernels that wait are async ones.
  bool RunsWithoutWaiting(const FoundGraph& graph) const;
  // The graph `request` names: ABORTED for an unknown session, NOT_FOUND for an unknown
  // graph handle, as RunGraph reports them.
  absl::StatusOr<FoundGraph> FindGraph(const RunGraphRequest& request) const;
  // Whether running `graph` is quick and never waits for other work, so that the thread
  // that read the call may run it: it has no kernel that may wait (OpKernel::MayWait)
  // and its recent runs took WorkerOptions::quick_run_graph or less on average. False
  // for a graph that has not run yet.
  bool IsQuick(const FoundGraph& graph) const;
  // IsQuick of the graph `request` names; false for an unknown session or graph.
  bool RunGraphIsQuick(const RunGraphRequest& request) const;
  absl::Status CleanupGraph(const CleanupGraphRequest& request,
                            CleanupGraphResponse* response) override;
  absl::Status CleanupAll(const CleanupAllRequest& request, CleanupAllResponse* response) override;
  absl::Status RecvTensor(const RecvTensorRequest& request, CancellationManager* cancellation,
                          Tensor* tensor) override;
  // RecvTensor without waiting: true with `tensor` set if it was already produced,
  // false if RecvTensor would wait for it (nothing is taken); RecvTensor's errors that
  // need no wait (a bad key, another incarnation, a step cleaned up or aborted).
  absl::StatusOr<bool> TryRecvTensor(const RecvTensorRequest& request, Tensor* tensor);
  // RecvTensor without a thread (LocalRendezvous::RecvAsync): `done` gets the tensor
  // when it is produced (on the producer's thread, or this one if it already was), or
  // RecvTensor's error, or `cancellation`'s reason, as it is, once it is cancelled: the
  // caller bounds the wait by cancelling (request.timeout_in_ms is not measured here).
  // False, with `done` not called, when only RecvTensor may serve the request: a RunGraph
  // of its step has not come yet (RecvTensor bounds that wait by recv_wait_for_step).
  bool RecvTensorWhenProduced(const RecvTensorRequest& request, CancellationManager* cancellation,
                              std::function<void(absl::StatusOr<Tensor>)> done);
  // Logs the reason and, the first time, calls WorkerEnv::on_job_done.
  absl::Status JobDone(const JobDoneRequest& request, JobDoneResponse* response) override;
  // Whether JobDone was called.
  bool job_done() const { return job_done_.load(); }

  // Checks that `key` names a tensor produced by this incarnation of this task.
  // INVALID_ARGUMENT for a malformed key or another task; ABORTED naming the task for
  // another incarnation.
  absl::StatusOr<RendezvousKey> CheckProducerKey(const std::string& key) const;

 private:
  // A partial run's step of one graph, running between its RunGraph calls.
  struct PartialStep {
    // Cancels the step if it still runs; the run then ends before its members go.
    ~PartialStep();
    std::shared_ptr<RegisteredGraph> graph;
    StepState state;
    std::unique_ptr<StepRendezvous> rendezvous;
    std::unique_ptr<BackgroundRun> run;  // Last: waited for first.
  };
  using PartialStepKey = std::pair<int64_t, std::string>;  // Step id, graph handle.

  struct Session {
    Session(const std::string& task, uint64_t incarnation, ThreadPool* pool)
        : graphs(task, incarnation, pool) {}
    GraphMgr graphs;
    std::unique_ptr<WorkerCacheInterface> peers;  // May be null.
    // Partial runs in flight. Declared last: they use `peers` until they end.
    absl::Mutex partial_mu;
    std::map<PartialStepKey, std::shared_ptr<PartialStep>> partial_steps
        ABSL_GUARDED_BY(partial_mu);
  };

  absl::StatusOr<std::shared_ptr<Session>> FindSession(const std::string& handle) const;
  // Ends step `step_id` here: aborts its rendezvous, cancels it, and ends its partial
  // runs in `sessions` (waiting for them).
  void CleanupStep(int64_t step_id, const std::vector<std::shared_ptr<Session>>& sessions);
  struct GraphStep;
  // A RunGraph request's keys and tensors, parsed.
  struct RunGraphParts {
    // `send`, then `forwarded`: delivered to the step's rendezvous before it runs.
    std::vector<std::pair<RendezvousKey, Tensor>> sends;
    std::vector<RendezvousKey> recvs;     // recv_key: returned in `recv`.
    std::vector<RendezvousKey> forwards;  // forward_key: returned in `forwarded` if they fit.
  };
  // What RunGraph does first, whatever its kind: cleans up the steps the request names
  // and parses its tensors and keys. INVALID_ARGUMENT for a malformed one, or for
  // forwarding in a partial run.
  absl::Status StartRunGraph(const FoundGraph& found, const RunGraphRequest& request,
                             RunGraphParts* parts);
  // RunGraph of a partial run (RunGraphRequest.is_partial).
  absl::Status RunPartialGraph(const FoundGraph& found, const RunGraphRequest& request,
                               RunGraphParts parts, RunGraphResponse* response,
                               CancellationManager* call_cancellation);
  // What the executor of a RunGraph step gets: its ids, deadline, `rendezvous` and the
  // step's cancellation.
  ExecutorRunArgs StepRunArgs(const RunGraphRequest& request, Rendezvous* rendezvous,
                              const StepState& state);
  // The partial step of `key` in `session`, started if it is new.
  std::shared_ptr<PartialStep> FindOrStartPartialStep(const FoundGraph& found,
                                                      const RunGraphRequest& request);
  // Receives `recvs` from `state` into `response` (RunGraph's reply limits). A step
  // that ran (`partial` false) has sent them all, so none waits; a partial run's wait
  // until their producers run, and a failed wait returns the rendezvous's error.
  absl::Status ReplyWithRecvs(const RunGraphRequest& request, const StepState& state,
                              const std::vector<RendezvousKey>& recvs, bool partial,
                              RunGraphResponse* response) const;

  const WorkerOptions options_;
  const WorkerEnv env_;
  Clock* const clock_;    // env_.clock, or the real clock. Never null.
  StepTimer step_timer_;  // Cancels steps at their timeout, on clock_.
  const uint64_t incarnation_;
  const std::string task_name_;
  const std::string device_name_;
  ResourceMgr resources_;
  RendezvousMgr rendezvous_;
  // Runs the nodes of every graph of every session: one thread per core to start with.
  // Outlives the sessions.
  ThreadPool pool_{DefaultMinThreads()};
  std::atomic<bool> job_done_{false};

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
};

// A random non-zero 64-bit incarnation.
uint64_t NewIncarnation();

}  // namespace overseer

#endif  // OVERSEER_WORKER_WORKER_H_

#ifndef OVERSEER_CLIENT_SESSION_GRPC_SESSION_H_
#define OVERSEER_CLIENT_SESSION_GRPC_SESSION_H_

// GrpcSession: the Session interface over a master (grpc://host:port). Linking
// //client/session:grpc_session registers the "grpc://" target with NewSession.
//
// Every call to the master carries a deadline. Calls that are safe to repeat are
// retried when the master cannot be reached (UNAVAILABLE), with capped backoff on the
// injected clock: CreateSession, ExtendSession and RunStep carry a request id that the
// master deduplicates (a retried call applies once), CloseSession and ListDevices are
// idempotent; so are MakeCallable, RunCallable (request ids) and ReleaseCallable. Reset
// is never retried.
//
// Direct steps: a step whose signature runs on one task, writes no variable and has no
// kernel that may wait (a read of a variable, an evaluation) needs the master only to
// pass it on. After its first step through the master, the client runs such a
// signature on its task itself (RunStepResponse.direct: one RunGraph, two gRPC hops
// instead of four), for up to DirectStep.step_ids steps or DirectStep.valid_ms; then
// one step goes through the master again and renews it, so that the master still sees
// the session (idle collection, aborts) and counts the steps. A step goes through the
// master while the channel to the task is not connected yet, and for good if the
// task's address answers here as another task or incarnation than the master's (an
// address that means another process from where the client runs). Its errors are the task's
// (a restarted task: ABORTED, as through the master), named "task <task>: ", and
// after one the next step goes through the master. The master offers none with
// security on, for traced steps, partial runs and callables.
//
// Feeds, fetches and graphs travel whole in one message, which protobuf limits to
// 2 GiB: a step whose feeds (or fetches) add up to more, or a graph that large, fails
// INVALID_ARGUMENT naming the largest tensors and the limit, before anything is sent
// (fetches: once the step ran). Tensors between tasks have no such limit.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/session/session.h"
#include "core/clock.h"
#include "core/graph/feed_check.h"
#include "core/message_budget.h"
#include "core/rpc/retry.h"
#include "master/master_interface.h"
#include "master/rpc/grpc_master.h"
#include "worker/rpc/grpc_worker.h"

namespace overseer {

struct GrpcSessionOptions {
  // The deadline of each call to the master but a step's, and how long UNAVAILABLE is
  // retried. Must exceed how long CreateSession may wait for the cluster's tasks (the
  // master's --create_session_wait_seconds).
  absl::Duration rpc_timeout = absl::Minutes(5);
  // A step with RunOptions.timeout_in_ms (or the session's
  // config.operation_timeout_in_ms) waits for the master up to that timeout plus a
  // margin; without one (a blocking dequeue of a QueueRunner, a long computation), or
  // for a callable's run, up to this long.
  absl::Duration max_step_time = kDefaultMaxStepTime;
  // While a call is open the channel pings the master after this long without hearing
  // from it; an unanswered ping fails the call UNAVAILABLE (a master whose host died or
  // froze is found in about twice this, however long the step's deadline).
  absl::Duration keepalive = kDefaultKeepalive;
  RetryOptions retry;
  // A step's feeds (and a graph) travel whole in one message: when their encoded sizes
  // add up to more than this, the call fails INVALID_ARGUMENT before anything is sent
  // (protobuf cannot encode a message of 2 GiB or more).
  int64_t max_message_tensor_bytes = kMaxMessageTensorBytes;
  // Run the steps that allow it on their task directly (see above); false: every step
  // goes through the master.
  bool direct_steps = true;
};

// Thread-safe as Session says: Run is concurrent; Create, Extend and Close serialise.
class GrpcSession : public Session {
 public:
  // Connects to `options.target` ("grpc://host:port"). INVALID_ARGUMENT for another
  // form of target. Connecting is lazy: an unreachable master fails the first call.
  static absl::StatusOr<std::unique_ptr<GrpcSession>> Connect(const SessionOptions& options,
                                                              GrpcSessionOptions grpc_options = {});

  // Over any master (tests use one in-process). `clock` (not owned) paces retries and
  // times direct routes (which need a master that names tasks with addresses).
  GrpcSession(const SessionOptions& options, std::unique_ptr<MasterInterface> master, Clock* clock,
              GrpcSessionOptions grpc_options = {});
  // Closes the master session (errors ignored).
  ~GrpcSession() override;
  GrpcSession(const GrpcSession&) = delete;
  GrpcSession& operator=(const GrpcSession&) = delete;

  absl::Status Create(const GraphDef& graph) override;
  absl::Status Extend(const GraphDef& graph) override;
  absl::Status Run(const RunOptions& options,
                   const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override;
  using Session::Run;
  // See Session; over the master's MakeCallable / RunCallable / ReleaseCallable, each
  // retried on UNAVAILABLE (MakeCallable and RunCallable carry request ids, so a retry
  // applies once; ReleaseCallable is idempotent). A callable's run waits at most
  // GrpcSessionOptions::max_step_time for the master.
  absl::StatusOr<CallableHandle> MakeCallable(const CallableOptions& options) override;
  absl::Status RunCallable(CallableHandle handle, const std::vector<Tensor>& feeds,
                           std::vector<Tensor>* fetches, RunMetadata* metadata) override;
  absl::Status ReleaseCallable(CallableHandle handle) override;
  // See Session; over the master's PartialRunSetup and a RunStep per call (each with a
  // request id, so a retry on UNAVAILABLE applies once). A call waits at most
  // GrpcSessionOptions::max_step_time for the master.
  absl::StatusOr<std::string> PartialRunSetup(const std::vector<std::string>& feeds,
                                              const std::vector<std::string>& fetches,
                                              const std::vector<std::string>& targets) override;
  absl::Status PartialRun(const std::string& handle,
                          const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches,
                          std::vector<Tensor>* outputs) override;
  absl::Status Close() override;

  // The devices of this session's tasks; before Create/Extend, of the whole cluster.
  absl::StatusOr<std::vector<DeviceAttributes>> ListDevices() override;

  // Clears `containers` (all when empty) on every task matching config.device_filters;
  // the master closes every open session (this one too), as TensorFlow's does.
  absl::Status Reset(const std::vector<std::string>& containers) override;

  // The master's handle; empty before the first Create/Extend.
  std::string handle() const;

 private:
  // A task the client runs direct steps on.
  struct DirectTask {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<GrpcWorker> worker;
    // Guarded by the session's mu_: the identity ("task#incarnation") last checked
    // against what the address answers, and whether it answered so.
    std::string checked;
    bool answers = false;
  };
  // How to run one signature directly (from a DirectStep); immutable once made.
  struct DirectPlan {
    DirectStep step;
    std::string identity;  // "task#incarnation" (DirectTask::checked).
    std::vector<FeedCheck> feed_checks;
    // The fetch keys without repeats, and for each fetch its index among them.
    std::vector<std::string> recv_keys;
    std::vector<int> fetch_recv;
    std::shared_ptr<DirectTask> task;
  };
  // A signature's plan and what is left of its DirectStep.
  struct DirectRoute {
    std::shared_ptr<const DirectPlan> plan;
    int64_t next_step_id = 0;
    int64_t end_step_id = 0;
    absl::Time expires;
  };

  // A RunStep: a step, or with `partial_run` a call of that partial run.
  absl::Status RunStep(const RunOptions& options, const std::string& partial_run,
                       const std::vector<std::pair<std::string, Tensor>>& feeds,
                       const std::vector<std::string>& fetches,
                       const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                       RunMetadata* metadata);
  // Runs the step of `route_key` on its task if a route is valid and its channel is
  // connected; nullopt if it must go through the master.
  std::optional<absl::Status> RunDirect(const std::string& session_handle,
                                        const std::string& route_key, int64_t timeout_in_ms,
                                        const std::vector<std::pair<std::string, Tensor>>& feeds,
                                        const std::vector<std::string>& fetches,
                                        std::vector<Tensor>* outputs, RunMetadata* metadata);
  // Whether the plan's address answers GetStatus as its task, with the incarnation the
  // master gave (asked once per address and identity).
  bool TaskAnswers(const DirectPlan& plan);
  // Keeps the route the master offered for `route_key` (ignored if it does not fit the
  // step's numbers of feeds and fetches).
  void LearnRoute(const std::string& route_key, const DirectStep& step, size_t feeds,
                  size_t fetches);
  // Retries `call` (safe to repeat) on UNAVAILABLE until the rpc deadline.
  absl::Status Retry(const std::function<absl::Status()>& call);
  absl::Status CreateLocked(const GraphDef& graph) ABSL_EXCLUSIVE_LOCKS_REQUIRED(ops_mu_);
  // The session handle for Run; FAILED_PRECONDITION if closed or without a graph.
  absl::StatusOr<std::string> RunnableHandle() const;
  // The deadline of a call starting now, on clock_.
  absl::Time CallDeadline(int64_t timeout_in_ms) const;

  const SessionOptions options_;
  const GrpcSessionOptions grpc_options_;
  const std::unique_ptr<MasterInterface> master_;
  Clock* const clock_;

  // Serialises Create, Extend and Close (held across their calls to the master).
  absl::Mutex ops_mu_;
  // Guards the state below; never held across a call.
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(ops_mu_);
  std::string handle_ ABSL_GUARDED_BY(mu_);
  int64_t graph_version_ ABSL_GUARDED_BY(mu_) = 0;
  // Nodes of the graph created and extended (none: Run fails, as TensorFlow's).
  int64_t graph_nodes_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  const bool direct_;  // GrpcSessionOptions::direct_steps.
  // Signature ("feeds;fetches;targets") -> its route.
  std::map<std::string, DirectRoute> routes_ ABSL_GUARDED_BY(mu_);
  // Address -> task, dialled once.
  std::map<std::string, std::shared_ptr<DirectTask>> direct_tasks_ ABSL_GUARDED_BY(mu_);
  // Direct steps run since the master was last told (RunStepRequest.direct_steps_run).
  int64_t direct_steps_run_ ABSL_GUARDED_BY(mu_) = 0;
};

// A fresh request id (128 random bits in hex).
std::string NewRequestId();

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_GRPC_SESSION_H_

#ifndef OVERSEER_MASTER_MASTER_H_
#define OVERSEER_MASTER_MASTER_H_

// Master: the master service's logic (MasterInterface and MasterReadinessInterface)
// over the cluster's workers. Sessions live in a registry keyed by handle; a session
// idle for longer than MasterOptions::session_gc_idle is closed by CollectIdleSessions,
// which a background thread runs on the injected clock. A SessionListener hears of
// every change to the registry (the master's session metrics). Readiness records live
// in a ReadinessTracker (master/readiness_tracker.h).

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/graph/update_gate.h"
#include "core/message_budget.h"
#include "master/master_interface.h"
#include "master/master_session.h"
#include "master/readiness_interface.h"
#include "master/readiness_tracker.h"
#include "master/request_dedup.h"
#include "master/worker_cache.h"

namespace overseer {

struct MasterOptions {
  // Sessions unused for this long are closed; zero: never.
  absl::Duration session_gc_idle = absl::ZeroDuration();
  // Run CollectIdleSessions on a background thread (every session_gc_idle / 2).
  bool gc_thread = true;
  // How long CreateSession waits for the tasks, unless the request's
  // config.operation_timeout_in_ms says otherwise.
  absl::Duration create_session_wait = absl::Seconds(60);
  // Between GetStatus rounds while waiting (doubling up to the max).
  absl::Duration wait_backoff = absl::Milliseconds(20);
  absl::Duration wait_backoff_max = absl::Seconds(1);
  // Readiness records: check period, wait cap, waiter limit.
  ReadinessOptions readiness;
  // A step's fetches travel in one reply (RunStep's or RunCallable's): when their
  // encoded sizes add up to more than this, the step fails INVALID_ARGUMENT naming
  // them (protobuf cannot encode a message of 2 GiB or more).
  int64_t max_message_tensor_bytes = kMaxMessageTensorBytes;
  // A session's graph (CreateSession's, then with every ExtendSession's nodes) may hold
  // at most this many encoded bytes; beyond, RESOURCE_EXHAUSTED. Large data belongs in
  // variables, fed in parts, not in Const nodes.
  int64_t max_graph_bytes = int64_t{256} << 20;
  // CreateSession fails RESOURCE_EXHAUSTED while this many sessions are open.
  int max_sessions = 10000;
};

// Told of every change to the master's sessions, whatever made it (a call, the GC, a
// Reset, the master's end), e.g. to keep metrics. Called with the master's lock held:
// must be quick and thread-safe, and must not call the master.
class SessionListener {
 public:
  virtual ~SessionListener() = default;
  // A session was created.
  virtual void SessionCreated() = 0;
  // CollectIdleSessions closed `collected` (> 0) idle sessions.
  virtual void SessionsCollected(int collected) = 0;
  // After every creation and removal: `open` sessions are open now.
  virtual void SessionsOpen(int open) = 0;
  // A checkpoint's snapshot waited `waited` for the steps writing its variables, and
  // got in or gave up (core/graph/update_gate.h).
  virtual void SnapshotWaited(absl::Duration /*waited*/, bool /*entered*/) {}
};

// What the master depends on. Not owned; they outlive the Master.
struct MasterEnv {
  MasterWorkerCacheInterface* workers = nullptr;
  Clock* clock = nullptr;
  // Reaches the tasks for readiness checks and JobDone, whose calls should have short
  // deadlines (a few seconds); null: `workers`.
  MasterWorkerCacheInterface* probe_workers = nullptr;
  // Told about readiness marks, withdrawals and waiters (metrics); may be null.
  ReadinessListener* readiness_listener = nullptr;
  // Told about sessions created, collected and open (metrics); may be null.
  SessionListener* session_listener = nullptr;
};

// Thread-safe.
class Master : public MasterInterface, public MasterReadinessInterface {
 public:
  Master(MasterEnv env, MasterOptions options);
  // Stops the GC thread and closes every session.
  ~Master() override;
  Master(const Master&) = delete;
  Master& operator=(const Master&) = delete;

  absl::Status CreateSession(const CreateSessionRequest& request,
                             CreateSessionResponse* response) override;
  // Waits for the tasks no later than `deadline` either: a client that gave up does
  // not leave the master waiting.
  absl::Status CreateSessionWithDeadline(const CreateSessionRequest& request,
                                         CreateSessionResponse* response,
                                         absl::Time deadline) override;
  absl::Status ExtendSession(const ExtendSessionRequest& request,
                             ExtendSessionResponse* response) override;
  absl::Status RunStep(const RunStepRequest& request, RunStepResponse* response) override;
  absl::Status CloseSession(const CloseSessionRequest& request,
                            CloseSessionResponse* response) override;
  absl::Status ListDevices(const ListDevicesRequest& request,
                           ListDevicesResponse* response) override;
  absl::Status Reset(const ResetRequest& request, ResetResponse* response) override;
  absl::Status PartialRunSetup(const PartialRunSetupRequest& request,
                               PartialRunSetupResponse* response) override;
  absl::Status MakeCallable(const MakeCallableRequest& request,
                            MakeCallableResponse* response) override;
  absl::Status RunCallable(const RunCallableRequest& request,
                           RunCallableResponse* response) override;
  // RunStep and RunCallable without blocking for long (RunStep and RunCallable wait for
  // them): `done` is called once with the call's status, on the thread of the step's
  // last RunGraph reply (or of a duplicate's first call, a StepBlockingThreads()
  // thread, or this one for an early error). `request` and `cancellation` (optional:
  // ends the step's calls with CANCELLED, e.g. when the client gave up) must live until
  // `done`; the request dedup keeps `response` to answer a retry of the request id.
  void RunStepAsync(const RunStepRequest* request, std::shared_ptr<RunStepResponse> response,
                    CancellationManager* cancellation,
                    std::function<void(absl::Status)> done) override;
  void RunCallableAsync(const RunCallableRequest* request,
                        std::shared_ptr<RunCallableResponse> response,
                        CancellationManager* cancellation,
                        std::function<void(absl::Status)> done) override;
  absl::Status ReleaseCallable(const ReleaseCallableRequest& request,
                               ReleaseCallableResponse* response) override;

  absl::Status MarkReady(const MarkReadyRequest& request, MarkReadyResponse* response) override;
  absl::Status WithdrawReady(const WithdrawReadyRequest& request,
                             WithdrawReadyResponse* response) override;
  absl::Status WaitForReady(const WaitForReadyRequest& request,
                            WaitForReadyResponse* response) override;
  absl::Status WaitForReadyCancellable(const WaitForReadyRequest& request,
                                       WaitForReadyResponse* response,
                                       CancellationManager* cancellation) override;
  absl::Status JobDone(const JobDoneRequest& request, JobDoneResponse* response) override;

  // Answers every blocked WaitForReady (not ready: the master is shutting down) and
  // makes later ones answer at once, so that draining calls is not held up by long
  // polls. Call when termination starts.
  void StopReadinessWaits() { readiness_.Shutdown(); }
  ReadinessTracker* readiness() { return &readiness_; }

  // Closes the sessions idle for longer than session_gc_idle (by the clock); returns
  // how many. A no-op when session_gc_idle is zero.
  int CollectIdleSessions();
  int NumSessions() const;

 private:
  struct Entry {
    std::shared_ptr<MasterSession> session;
    absl::Time last_used;
    // Steps and callable runs started and not yet done: the session is in use, not
    // idle, however long they take.
    int running = 0;
  };

  // The session, marked used now; ABORTED naming the handle if unknown. With
  // `start_run`, also counted running until RunEnded(handle).
  absl::StatusOr<std::shared_ptr<MasterSession>> Find(const std::string& handle,
                                                      bool start_run = false);
  // A run counted by Find(handle, true) is done; the idle time counts from now.
  void RunEnded(const std::string& handle);
  // Waits for `tasks` to answer GetStatus until `deadline`.
  absl::StatusOr<std::vector<SessionTask>> WaitForTasks(const std::vector<std::string>& tasks,
                                                        absl::Time deadline);
  // The tasks of `tasks` matching any of `filters` (all without filters).
  // INVALID_ARGUMENT for a bad filter or when none matches.
  static absl::StatusOr<std::vector<std::string>> FilterTaskList(
      const std::vector<std::string>& tasks,
      const google::protobuf::RepeatedPtrField<std::string>& filters);
  absl::StatusOr<std::vector<std::string>> FilterTasks(
      const google::protobuf::RepeatedPtrField<std::string>& filters) const;
  absl::Status DoCreateSession(const CreateSessionRequest& request, CreateSessionResponse* response,
                               absl::Time deadline);
  // RESOURCE_EXHAUSTED if a graph of `bytes` is more than max_graph_bytes.
  absl::Status CheckGraphBytes(int64_t bytes) const;
  // RunStepAsync and RunCallableAsync: through the request-id dedup, finds the
  // request's session and calls run(session, ran), holding the session until `ran`.
  // `shared` (optional) owns `response`: the dedup then keeps it instead of a copy.
  using SessionRun = std::function<void(MasterSession*, std::function<void(absl::Status)> ran)>;
  void RunInSessionAsync(const std::string& request_id, const std::string& session_handle,
                         google::protobuf::Message* response,
                         std::shared_ptr<const google::protobuf::Message> shared, SessionRun run,
                         std::function<void(absl::Status)> done);
  // RunStepAsync and RunCallableAsync, with `shared` as RunInSessionAsync takes it.
  void RunStepIn(const RunStepRequest* request, RunStepResponse* response,
                 std::shared_ptr<const google::protobuf::Message> shared,
                 CancellationManager* cancellation, std::function<void(absl::Status)> done);
  void RunCallableIn(const RunCallableRequest* request, RunCallableResponse* response,
                     std::shared_ptr<const google::protobuf::Message> shared,
                     CancellationManager* cancellation, std::function<void(absl::Status)> done);
  void GcLoop();
  // Tells the session listener how many sessions are open.
  void SessionsChangedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MasterEnv env_;
  const MasterOptions options_;
  RequestDedup dedup_;
  ReadinessTracker readiness_;
  std::atomic<int64_t> next_step_id_;
  // Shared by every session: trainers sharing this master take consistent snapshots.
  UpdateGate update_gate_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> sessions_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread gc_thread_;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_MASTER_H_

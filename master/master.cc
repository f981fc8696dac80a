#include "master/master.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "core/cluster/device_name.h"
#include "core/graph/validate.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

std::string NewHandle() {
  absl::BitGen gen;
  return absl::StrCat(absl::Hex(absl::Uniform<uint64_t>(gen), absl::kZeroPad16));
}

// The default client task: chief:0, else worker:0, else the first.
std::string DefaultClientTask(const std::vector<SessionTask>& tasks) {
  for (const char* job : {"chief", "worker"}) {
    const std::string name = absl::StrCat("/job:", job, "/replica:0/task:0");
    for (const SessionTask& t : tasks) {
      if (t.name == name) return name;
    }
  }
  return tasks.front().name;
}

// Starts an asynchronous call with `start` and waits for its status.
absl::Status AwaitDone(const std::function<void(std::function<void(absl::Status)>)>& start) {
  absl::Notification finished;
  absl::Status status;
  start([&](absl::Status s) {
    status = std::move(s);
    finished.Notify();
  });
  finished.WaitForNotification();
  return status;
}

}  // namespace

Master::Master(MasterEnv env, MasterOptions options)
    : env_(env),
      options_(options),
      readiness_(env_.probe_workers != nullptr ? env_.probe_workers : env_.workers, env_.clock,
                 env_.readiness_listener, options_.readiness),
      next_step_id_([] {
        absl::BitGen gen;
        return absl::Uniform<int64_t>(gen, 1, int64_t{1} << 40);
      }()),
      update_gate_(absl::Seconds(30),
                   [listener = env_.session_listener](absl::Duration waited, bool entered) {
                     if (listener != nullptr) listener->SnapshotWaited(waited, entered);
                   }) {
  if (options_.gc_thread && options_.session_gc_idle > absl::ZeroDuration()) {
    gc_thread_ = std::thread([this] { GcLoop(); });
  }
}

Master::~Master() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (gc_thread_.joinable()) gc_thread_.join();
  std::map<std::string, Entry> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.swap(sessions_);
    SessionsChangedLocked();
  }
  for (auto& [handle, entry] : sessions) entry.session->Close();
}

void Master::GcLoop() {
  const absl::Duration period = options_.session_gc_idle / 2;
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (env_.clock->AwaitWithDeadline(&mu_, absl::Condition(&stopping_),
                                      env_.clock->Now() + period)) {
      break;
    }
    mu_.Unlock();
    CollectIdleSessions();
    mu_.Lock();
  }
}

int Master::CollectIdleSessions() {
  if (options_.session_gc_idle <= absl::ZeroDuration()) return 0;
  std::vector<std::shared_ptr<MasterSession>> idle;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = env_.clock->Now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second.running == 0 && now - it->second.last_used > options_.session_gc_idle) {
        idle.push_back(std::move(it->second.session));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
    if (!idle.empty() && env_.session_listener != nullptr) {
      env_.session_listener->SessionsCollected(static_cast<int>(idle.size()));
    }
    if (!idle.empty()) SessionsChangedLocked();
  }
  for (auto& s : idle) s->Close();
  return static_cast<int>(idle.size());
}

void Master::SessionsChangedLocked() {
  if (env_.session_listener != nullptr) {
    env_.session_listener->SessionsOpen(static_cast<int>(sessions_.size()));
  }
}

int Master::NumSessions() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(sessions_.size());
}

absl::StatusOr<std::shared_ptr<MasterSession>> Master::Find(const std::string& handle,
                                                            bool start_run) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    return absl::AbortedError(absl::StrCat(
        "session '", handle,
        "' is not known to the master (the master restarted, or the session was closed or "
        "collected after being idle); create a new session"));
  }
  it->second.last_used = env_.clock->Now();
  if (start_run) ++it->second.running;
  return it->second.session;
}

void Master::RunEnded(const std::string& handle) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) return;  // Closed meanwhile.
  --it->second.running;
  it->second.last_used = env_.clock->Now();
}

absl::StatusOr<std::vector<std::string>> Master::FilterTasks(
    const google::protobuf::RepeatedPtrField<std::string>& filters) const {
  return FilterTaskList(env_.workers->ListTasks(), filters);
}

absl::StatusOr<std::vector<std::string>> Master::FilterTaskList(
    const std::vector<std::string>& tasks,
    const google::protobuf::RepeatedPtrField<std::string>& filters) {
  std::vector<DeviceName> parsed;
  for (const std::string& f : filters) {
    auto d = DeviceName::Parse(f);
    if (!d.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("device filter: ", d.status().message()));
    }
    d->type.clear();
    d->has_id = false;
    parsed.push_back(*d);
  }
  std::vector<std::string> out;
  for (const std::string& task : tasks) {
    ASSIGN_OR_RETURN(DeviceName t, DeviceName::Parse(task));
    bool keep = parsed.empty();
    for (const DeviceName& f : parsed) keep = keep || f.Matches(t);
    if (keep) out.push_back(task);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the device filters [", absl::StrJoin(filters, ", "),
                     "] match no task of the cluster (", absl::StrJoin(tasks, ", "), ")"));
  }
  return out;
}

absl::StatusOr<std::vector<SessionTask>> Master::WaitForTasks(const std::vector<std::string>& tasks,
                                                              absl::Time deadline) {
  std::map<std::string, SessionTask> answered;
  std::map<std::string, absl::Status> last_error;
  absl::Duration backoff = options_.wait_backoff;
  while (true) {
    std::vector<std::string> pending;
    for (const std::string& t : tasks) {
      if (!answered.count(t)) pending.push_back(t);
    }
    std::vector<absl::Status> results(pending.size());
    std::vector<GetStatusResponse> responses(pending.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < pending.size(); ++i) {
      threads.emplace_back([&, i] {
        WorkerInterface* w = env_.workers->GetWorker(pending[i]);
        results[i] = w == nullptr ? absl::UnavailableError("not in the cluster")
                                  : w->GetStatus(GetStatusRequest(), &responses[i]);
      });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < pending.size(); ++i) {
      if (!results[i].ok()) {
        last_error[pending[i]] = results[i];
        continue;
      }
      SessionTask& t = answered[pending[i]];
      t.name = pending[i];
      t.incarnation = responses[i].incarnation();
      t.devices.assign(responses[i].device_attributes().begin(),
                       responses[i].device_attributes().end());
    }
    if (answered.size() == tasks.size()) break;
    if (env_.clock->Now() >= deadline) {
      std::vector<std::string> missing;
      for (const std::string& t : tasks) {
        if (!answered.count(t)) {
          missing.push_back(absl::StrCat(t, " (", last_error[t].message(), ")"));
        }
      }
      return absl::UnavailableError(
          absl::StrCat("CreateSession: these tasks did not answer before the deadline: ",
                       absl::StrJoin(missing, "; ")));
    }
    env_.clock->SleepFor(
        std::min(backoff, std::max(absl::ZeroDuration(), deadline - env_.clock->Now())));
    backoff = std::min(backoff * 2, options_.wait_backoff_max);
  }
  std::vector<SessionTask> out;
  for (const std::string& t : tasks) out.push_back(std::move(answered[t]));
  return out;
}

absl::Status Master::CheckGraphBytes(int64_t bytes) const {
  if (bytes <= options_.max_graph_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the session's graph would hold ", bytes, " bytes, more than the master's limit of ",
      options_.max_graph_bytes,
      " (--max_graph_mib); keep large data in variables fed in parts, not in Const nodes"));
}

absl::Status Master::DoCreateSession(const CreateSessionRequest& request,
                                     CreateSessionResponse* response, absl::Time deadline) {
  if (request.config().isolate_session_state()) {
    return absl::InvalidArgumentError(
        "isolate_session_state is for in-process sessions: the sessions of a cluster share "
        "the tasks' variables and queues (give each job its own container instead)");
  }
  RETURN_IF_ERROR(CheckGraphBytes(static_cast<int64_t>(request.graph_def().ByteSizeLong())));
  {
    absl::MutexLock lock(&mu_);
    if (static_cast<int64_t>(sessions_.size()) >= options_.max_sessions) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the master has ", sessions_.size(),
          " open sessions, its limit (--max_sessions); "
          "close the sessions you no longer use (idle ones close after --session_gc_seconds)"));
    }
  }
  RETURN_IF_ERROR(ValidateAndIndexGraph(request.graph_def()).status());
  ASSIGN_OR_RETURN(std::vector<std::string> task_names,
                   FilterTasks(request.config().device_filters()));
  const absl::Duration wait = request.config().operation_timeout_in_ms() > 0
                                  ? absl::Milliseconds(request.config().operation_timeout_in_ms())
                                  : options_.create_session_wait;
  ASSIGN_OR_RETURN(std::vector<SessionTask> tasks,
                   WaitForTasks(task_names, std::min(env_.clock->Now() + wait, deadline)));
  std::string client_task = request.client_task();
  if (client_task.empty()) {
    client_task = DefaultClientTask(tasks);
  } else if (std::none_of(tasks.begin(), tasks.end(),
                          [&](const SessionTask& t) { return t.name == client_task; })) {
    return absl::InvalidArgumentError(absl::StrCat("client_task '", client_task,
                                                   "' is not a task of the session (",
                                                   absl::StrJoin(task_names, ", "), ")"));
  }
  const std::string handle = NewHandle();
  auto session = std::make_shared<MasterSession>(handle, request.config(), std::move(tasks),
                                                 client_task, env_.workers, &next_step_id_,
                                                 options_.max_message_tensor_bytes, &update_gate_);
  RETURN_IF_ERROR(session->Create(request.graph_def()));
  {
    absl::MutexLock lock(&mu_);
    sessions_[handle] = Entry{session, env_.clock->Now()};
    if (env_.session_listener != nullptr) env_.session_listener->SessionCreated();
    SessionsChangedLocked();
  }
  response->set_session_handle(handle);
  response->set_graph_version(0);
  return absl::OkStatus();
}

absl::Status Master::CreateSession(const CreateSessionRequest& request,
                                   CreateSessionResponse* response) {
  return CreateSessionWithDeadline(request, response, absl::InfiniteFuture());
}

absl::Status Master::CreateSessionWithDeadline(const CreateSessionRequest& request,
                                               CreateSessionResponse* response,
                                               absl::Time deadline) {
  return dedup_.Run(request.request_id(), response,
                    [&] { return DoCreateSession(request, response, deadline); });
}

absl::Status Master::ExtendSession(const ExtendSessionRequest& request,
                                   ExtendSessionResponse* response) {
  return dedup_.Run(request.request_id(), response, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
    RETURN_IF_ERROR(CheckGraphBytes(session->graph_bytes() +
                                    static_cast<int64_t>(request.graph_def().ByteSizeLong())));
    ASSIGN_OR_RETURN(int64_t version,
                     session->Extend(request.graph_def(), request.current_graph_version()));
    response->set_new_graph_version(version);
    return absl::OkStatus();
  });
}

absl::Status Master::RunStep(const RunStepRequest& request, RunStepResponse* response) {
  return AwaitDone([&](std::function<void(absl::Status)> done) {
    RunStepIn(&request, response, /*shared=*/nullptr, /*cancellation=*/nullptr, std::move(done));
  });
}

void Master::RunInSessionAsync(const std::string& request_id, const std::string& session_handle,
                               google::protobuf::Message* response,
                               std::shared_ptr<const google::protobuf::Message> shared,
                               SessionRun run, std::function<void(absl::Status)> done) {
  dedup_.RunAsync(
      request_id, response,
      [this, &session_handle, run = std::move(run)](RequestDedup::Done ran) {
        absl::StatusOr<std::shared_ptr<MasterSession>> session =
            Find(session_handle, /*start_run=*/true);
        if (!session.ok()) {
          ran(session.status());
          return;
        }
        MasterSession* s = session->get();
        // The step holds the session until it is done (a Close meanwhile ends it).
        run(s, [this, handle = session_handle, session = *std::move(session),
                ran = std::move(ran)](absl::Status st) {
          RunEnded(handle);
          ran(std::move(st));
        });
      },
      std::move(done), std::move(shared));
}

void Master::RunStepAsync(const RunStepRequest* request, std::shared_ptr<RunStepResponse> response,
                          CancellationManager* cancellation,
                          std::function<void(absl::Status)> done) {
  RunStepIn(request, response.get(), response, cancellation, std::move(done));
}

void Master::RunStepIn(const RunStepRequest* request, RunStepResponse* response,
                       std::shared_ptr<const google::protobuf::Message> shared,
                       CancellationManager* cancellation, std::function<void(absl::Status)> done) {
  RunInSessionAsync(
      request->request_id(), request->session_handle(), response, std::move(shared),
      [request, response, cancellation](MasterSession* s, std::function<void(absl::Status)> ran) {
        s->RunAsync(request, response, cancellation, std::move(ran));
      },
      std::move(done));
}

absl::Status Master::CloseSession(const CloseSessionRequest& request,
                                  CloseSessionResponse* /*response*/) {
  std::shared_ptr<MasterSession> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(request.session_handle());
    if (it == sessions_.end()) return absl::OkStatus();
    session = std::move(it->second.session);
    sessions_.erase(it);
    SessionsChangedLocked();
  }
  session->Close();
  return absl::OkStatus();
}

absl::Status Master::ListDevices(const ListDevicesRequest& request, ListDevicesResponse* response) {
  if (!request.session_handle().empty()) {
    ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
    for (const SessionTask& t : session->tasks()) {
      for (const DeviceAttributes& d : t.devices) *response->add_remote_device() = d;
    }
    return absl::OkStatus();
  }
  for (const std::string& task : env_.workers->ListTasks()) {
    WorkerInterface* w = env_.workers->GetWorker(task);
    GetStatusResponse resp;
    RETURN_IF_ERROR(TaskError(task, w->GetStatus(GetStatusRequest(), &resp)));
    for (const DeviceAttributes& d : resp.device_attributes()) *response->add_remote_device() = d;
  }
  return absl::OkStatus();
}

absl::Status Master::Reset(const ResetRequest& request, ResetResponse* /*response*/) {
  ASSIGN_OR_RETURN(std::vector<std::string> tasks, FilterTasks(request.device_filters()));
  std::map<std::string, Entry> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.swap(sessions_);
    SessionsChangedLocked();
  }
  for (auto& [handle, entry] : sessions) entry.session->Close();
  CleanupAllRequest req;
  req.mutable_container()->CopyFrom(request.container());
  for (const std::string& task : tasks) {
    CleanupAllResponse resp;
    RETURN_IF_ERROR(TaskError(task, env_.workers->GetWorker(task)->CleanupAll(req, &resp)));
  }
  return absl::OkStatus();
}

absl::Status Master::PartialRunSetup(const PartialRunSetupRequest& request,
                                     PartialRunSetupResponse* response) {
  return dedup_.Run(request.request_id(), response, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
    ASSIGN_OR_RETURN(std::string handle,
                     session->PartialRunSetup({request.feed().begin(), request.feed().end()},
                                              {request.fetch().begin(), request.fetch().end()},
                                              {request.target().begin(), request.target().end()}));
    response->set_partial_run_handle(std::move(handle));
    return absl::OkStatus();
  });
}

absl::Status Master::MakeCallable(const MakeCallableRequest& request,
                                  MakeCallableResponse* response) {
  return dedup_.Run(request.request_id(), response, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
    ASSIGN_OR_RETURN(int64_t handle, session->MakeCallable(request.options()));
    response->set_handle(handle);
    return absl::OkStatus();
  });
}

absl::Status Master::RunCallable(const RunCallableRequest& request, RunCallableResponse* response) {
  return AwaitDone([&](std::function<void(absl::Status)> done) {
    RunCallableIn(&request, response, /*shared=*/nullptr, /*cancellation=*/nullptr,
                  std::move(done));
  });
}

void Master::RunCallableAsync(const RunCallableRequest* request,
                              std::shared_ptr<RunCallableResponse> response,
                              CancellationManager* cancellation,
                              std::function<void(absl::Status)> done) {
  RunCallableIn(request, response.get(), response, cancellation, std::move(done));
}

void Master::RunCallableIn(const RunCallableRequest* request, RunCallableResponse* response,
                           std::shared_ptr<const google::protobuf::Message> shared,
                           CancellationManager* cancellation,
                           std::function<void(absl::Status)> done) {
  RunInSessionAsync(
      request->request_id(), request->session_handle(), response, std::move(shared),
      [request, response, cancellation](MasterSession* s, std::function<void(absl::Status)> ran) {
        s->RunCallableAsync(request, response, cancellation, std::move(ran));
      },
      std::move(done));
}

absl::Status Master::ReleaseCallable(const ReleaseCallableRequest& request,
                                     ReleaseCallableResponse* /*response*/) {
  ASSIGN_OR_RETURN(auto session, Find(request.session_handle()));
  return session->ReleaseCallable(request.handle());
}

absl::Status Master::MarkReady(const MarkReadyRequest& request, MarkReadyResponse*) {
  ASSIGN_OR_RETURN(std::vector<std::string> tasks, FilterTasks(request.device_filters()));
  return readiness_.MarkReady(request.key(), tasks);
}

absl::Status Master::WithdrawReady(const WithdrawReadyRequest& request, WithdrawReadyResponse*) {
  readiness_.WithdrawReady(request.key());
  return absl::OkStatus();
}

absl::Status Master::WaitForReady(const WaitForReadyRequest& request,
                                  WaitForReadyResponse* response) {
  return WaitForReadyCancellable(request, response, nullptr);
}

absl::Status Master::WaitForReadyCancellable(const WaitForReadyRequest& request,
                                             WaitForReadyResponse* response,
                                             CancellationManager* cancellation) {
  return readiness_.WaitForReady(request.key(), absl::Milliseconds(request.timeout_ms()), response,
                                 cancellation);
}

absl::Status Master::JobDone(const JobDoneRequest& request, JobDoneResponse*) {
  MasterWorkerCacheInterface* workers =
      env_.probe_workers != nullptr ? env_.probe_workers : env_.workers;
  ASSIGN_OR_RETURN(const std::vector<std::string> tasks,
                   FilterTaskList(workers->ListTasks(), request.device_filters()));
  LOG(INFO) << "master: the job is done"
            << (request.reason().empty() ? std::string() : ": " + request.reason()) << "; telling "
            << tasks.size() << " tasks";
  std::vector<absl::Status> results(tasks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < tasks.size(); ++i) {
    threads.emplace_back([&, i] {
      WorkerInterface* w = workers->GetWorker(tasks[i]);
      JobDoneResponse ignored;
      results[i] = w == nullptr ? absl::NotFoundError("not a task of the cluster")
                                : w->JobDone(request, &ignored);
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> failed;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!results[i].ok()) {
      failed.push_back(absl::StrCat(tasks[i], " (", results[i].ToString(), ")"));
    }
  }
  if (!failed.empty()) {
    return absl::UnavailableError(absl::StrCat("JobDone: these tasks could not be told: ",
                                               absl::StrJoin(failed, "; "), "; the others were"));
  }
  return absl::OkStatus();
}

}  // namespace overseer

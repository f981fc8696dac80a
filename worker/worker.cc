#include "worker/worker.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/cluster/device_name.h"
#include "core/logging.h"
#include "core/message_budget.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// Whether `cluster` lists task `job`:`index`.
bool ClusterHasTask(const ClusterDef& cluster, const std::string& job, int index) {
  for (const JobDef& j : cluster.job()) {
    if (j.name() == job && j.tasks().count(index) > 0) return true;
  }
  return false;
}

// A feed's (or a forwarded) tensor; its errors (INVALID_ARGUMENT, or RESOURCE_EXHAUSTED
// beyond the memory budget) name the tensor as `kind` and the fourth field of the
// rendezvous key "src;incarnation;dst;name;frame".
absl::Status ParseTensor(const NamedTensorProto& named, absl::string_view kind, Tensor* out) {
  absl::StatusOr<Tensor> t = Tensor::FromProto(named.tensor());
  if (!t.ok()) {
    const std::vector<absl::string_view> key = absl::StrSplit(named.name(), ';');
    const std::string what = key.size() == 5 ? absl::StrCat(kind, " '", key[3], "'")
                                             : absl::StrCat("RunGraph send '", named.name(), "'");
    return absl::Status(t.status().code(), absl::StrCat(what, ": ", t.status().message()));
  }
  *out = std::move(*t);
  return absl::OkStatus();
}

}  // namespace

uint64_t NewIncarnation() {
  std::random_device device;
  std::mt19937_64 gen((static_cast<uint64_t>(device()) << 32) ^ device());
  uint64_t value = 0;
  while (value == 0) value = gen();
  return value;
}

Worker::Worker(WorkerOptions options, WorkerEnv env)
    : options_(std::move(options)),
      env_(std::move(env)),
      clock_(env_.clock != nullptr ? env_.clock : Clock::Real()),
      step_timer_(clock_),
      incarnation_(options_.incarnation != 0 ? options_.incarnation : NewIncarnation()),
      task_name_(absl::StrCat("/job:", options_.job_name, "/replica:0/task:", options_.task_index)),
      device_name_(FullDeviceName(options_.job_name, options_.task_index)) {}

Worker::~Worker() = default;

int Worker::num_sessions() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(sessions_.size());
}

absl::StatusOr<std::shared_ptr<Worker::Session>> Worker::FindSession(
    const std::string& handle) const {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    return absl::AbortedError(absl::StrCat("session handle '", handle, "' is unknown to task ",
                                           task_name_,
                                           " (it restarted or the session was closed); "
                                           "recreate the session"));
  }
  return it->second;
}

absl::Status Worker::GetStatus(const GetStatusRequest&, GetStatusResponse* response) {
  DeviceAttributes* device = response->add_device_attributes();
  device->set_name(device_name_);
  device->set_device_type("CPU");
  device->set_incarnation(incarnation_);
  response->set_incarnation(incarnation_);
  response->set_task_name(task_name_);
  return absl::OkStatus();
}

absl::Status Worker::JobDone(const JobDoneRequest& request, JobDoneResponse*) {
  const bool first = !job_done_.exchange(true);
  LOG(INFO) << "worker " << task_name_ << ": job done"
            << (request.reason().empty() ? std::string() : ": " + request.reason())
            << (first ? "" : " (again)");
  if (first && env_.on_job_done) env_.on_job_done(request.reason());
  return absl::OkStatus();
}

absl::Status Worker::CreateWorkerSession(const CreateWorkerSessionRequest& request,
                                         CreateWorkerSessionResponse*) {
  if (request.session_handle().empty()) {
    return absl::InvalidArgumentError("CreateWorkerSession: session_handle is empty");
  }
  const ClusterDef& cluster =
      request.cluster().job_size() > 0 ? request.cluster() : options_.cluster;
  if (cluster.job_size() > 0 && !ClusterHasTask(cluster, options_.job_name, options_.task_index)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CreateWorkerSession: the cluster of session '", request.session_handle(),
                     "' does not contain this task (", task_name_, ")"));
  }
  {
    absl::MutexLock lock(&mu_);
    if (sessions_.count(request.session_handle()) > 0) return absl::OkStatus();
  }
  auto session = std::make_shared<Session>(task_name_, incarnation_, &pool_);
  if (env_.worker_cache_factory != nullptr && cluster.job_size() > 0) {
    ASSIGN_OR_RETURN(session->peers, env_.worker_cache_factory(cluster));
  }
  absl::MutexLock lock(&mu_);
  sessions_.emplace(request.session_handle(), std::move(session));
  return absl::OkStatus();
}

absl::Status Worker::DeleteWorkerSession(const DeleteWorkerSessionRequest& request,
                                         DeleteWorkerSessionResponse*) {
  absl::MutexLock lock(&mu_);
  sessions_.erase(request.session_handle());
  return absl::OkStatus();
}

absl::Status Worker::RegisterGraph(const RegisterGraphRequest& request,
                                   RegisterGraphResponse* response) {
  ASSIGN_OR_RETURN(std::shared_ptr<Session> session, FindSession(request.session_handle()));
  ASSIGN_OR_RETURN(std::string handle, session->graphs.Register(request.graph_def()));
  ASSIGN_OR_RETURN(std::shared_ptr<RegisteredGraph> graph, session->graphs.Lookup(handle));
  response->set_may_wait(graph->executor->may_wait());
  response->set_graph_handle(std::move(handle));
  return absl::OkStatus();
}

absl::Status Worker::DeregisterGraph(const DeregisterGraphRequest& request,
                                     DeregisterGraphResponse*) {
  ASSIGN_OR_RETURN(std::shared_ptr<Session> session, FindSession(request.session_handle()));
  return session->graphs.Deregister(request.graph_handle());
}

absl::StatusOr<Worker::FoundGraph> Worker::FindGraph(const RunGraphRequest& request) const {
  FoundGraph found;
  ASSIGN_OR_RETURN(found.session_, FindSession(request.session_handle()));
  ASSIGN_OR_RETURN(found.graph_, found.session_->graphs.Lookup(request.graph_handle()));
  return found;
}

bool Worker::IsQuick(const FoundGraph& found) const {
  if (found.graph_->executor->may_wait()) return false;
  const int64_t recent_us = found.graph_->recent_run_us.load(std::memory_order_relaxed);
  return recent_us >= 0 && recent_us <= absl::ToInt64Microseconds(options_.quick_run_graph);
}

bool Worker::RunsWithoutWaiting(const FoundGraph& found) const {
  return found.graph_->executor->waits_only_async();
}

bool Worker::RunGraphIsQuick(const RunGraphRequest& request) const {
  absl::StatusOr<FoundGraph> found = FindGraph(request);
  return found.ok() && IsQuick(*found);
}

absl::Status Worker::RunGraph(const RunGraphRequest& request, RunGraphResponse* response) {
  return RunGraph(request, response, nullptr);
}

absl::Status Worker::RunGraph(const RunGraphRequest& request, RunGraphResponse* response,
                              CancellationManager* call_cancellation) {
  ASSIGN_OR_RETURN(FoundGraph found, FindGraph(request));
  return RunGraph(found, request, response, call_cancellation);
}

absl::Status Worker::StartRunGraph(const FoundGraph& found, const RunGraphRequest& request,
                                   RunGraphParts* parts) {
  // Earlier steps of this session that the master has done with (their partial runs,
  // if any, are this session's).
  if (!request.cleanup_step_id().empty()) {
    const std::vector<std::shared_ptr<Session>> own = {found.session_};
    for (const int64_t step_id : request.cleanup_step_id()) CleanupStep(step_id, own);
  }
  if (request.is_partial() && (request.forward_key_size() > 0 || request.forwarded_size() > 0)) {
    return absl::InvalidArgumentError(
        "RunGraph of a partial run cannot forward tensors (forward_key, forwarded)");
  }
  // Parse everything before the step exists, so that a bad request leaves no state.
  auto parse_key = [](const std::string& field, const std::string& key, RendezvousKey* out) {
    absl::StatusOr<RendezvousKey> parsed = RendezvousKey::Parse(key);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RunGraph ", field, ": ", parsed.status().message()));
    }
    *out = *std::move(parsed);
    return absl::OkStatus();
  };
  parts->sends.resize(request.send_size() + request.forwarded_size());
  for (int i = 0; i < request.send_size(); ++i) {
    RETURN_IF_ERROR(parse_key("send", request.send(i).name(), &parts->sends[i].first));
    RETURN_IF_ERROR(ParseTensor(request.send(i), "feed", &parts->sends[i].second));
  }
  for (int i = 0; i < request.forwarded_size(); ++i) {
    const NamedTensorProto& named = request.forwarded(i);
    auto& [key, value] = parts->sends[request.send_size() + i];
    RETURN_IF_ERROR(parse_key("forwarded", named.name(), &key));
    RETURN_IF_ERROR(ParseTensor(named, "RunGraph forwarded tensor", &value));
  }
  parts->recvs.resize(request.recv_key_size());
  for (int i = 0; i < request.recv_key_size(); ++i) {
    RETURN_IF_ERROR(parse_key("recv_key", request.recv_key(i), &parts->recvs[i]));
  }
  parts->forwards.resize(request.forward_key_size());
  for (int i = 0; i < request.forward_key_size(); ++i) {
    RETURN_IF_ERROR(parse_key("forward_key", request.forward_key(i), &parts->forwards[i]));
  }
  return absl::OkStatus();
}

// One RunGraph step (not a partial run's), from its start to its reply.
struct Worker::GraphStep {
  GraphStep(Worker* worker, const FoundGraph& found, const RunGraphRequest& request,
            RunGraphResponse* response, CancellationManager* call_cancellation)
      : worker(worker),
        found(found),
        request(request),
        response(response),
        call_cancellation(call_cancellation),
        state(worker->rendezvous_.FindOrCreate(request.step_id())),
        rendezvous(request.step_id(), worker->task_name_, state, found.session_->peers.get()) {}

  // Sends the request's tensors and sets `args` up. The call's cancellation ends the
  // step as CleanupGraph would (also if it came before).
  absl::Status Start(const std::vector<std::pair<RendezvousKey, Tensor>>& sends) {
    if (request.forwarded_size() > 0) {
      absl::flat_hash_set<std::string> keys;
      for (const NamedTensorProto& f : request.forwarded()) keys.insert(f.name());
      rendezvous.SetForwarded(std::move(keys));
    }
    if (call_cancellation != nullptr) {
      given_up = call_cancellation->RegisterCallback(
          [worker = worker, step_id = request.step_id()] { worker->rendezvous_.Cleanup(step_id); });
      if (given_up == CancellationManager::kInvalidToken) {
        worker->rendezvous_.Cleanup(request.step_id());
        return call_cancellation->status();
      }
    }
    for (const auto& [key, value] : sends) RETURN_IF_ERROR(state.rendezvous->Send(key, value));
    args = worker->StepRunArgs(request, &rendezvous, state);
    if (request.exec_opts().record_timeline() || request.exec_opts().record_costs()) {
      args.stats = response->mutable_step_stats();
      args.trace_outputs = request.exec_opts().record_outputs();
    }
    recorded = response->step_stats().dev_stats_size();
    start = absl::Now();
    return absl::OkStatus();
  }

  // After the executor's run (`status`; not run if Start failed): the reply.
  absl::Status End(absl::Status status) {
    if (start != absl::InfinitePast()) {
      found.graph_->RecordRun(absl::Now() - start);
      if (status.ok() && request.exec_opts().record_partition_graphs()) {
        *response->add_partition_graph() = found.graph_->executor->graph().def();
      }
      // The executor records under a generic device; these nodes ran on this task's.
      for (int i = recorded; i < response->step_stats().dev_stats_size(); ++i) {
        response->mutable_step_stats()->mutable_dev_stats(i)->set_device(worker->device_name_);
      }
    }
    if (status.ok()) {
      status = worker->ReplyWithRecvs(request, state, recvs, /*partial=*/false, response);
      const bool kept = status.ok() && !Forward();
      if (status.ok() && request.cleanup_on_return() && !kept) {
        worker->rendezvous_.Release(request.step_id());
      }
    } else {
      // Peers waiting for this step's tensors fail now instead of at their deadline.
      state.rendezvous->StartAbort(status);
    }
    if (given_up != CancellationManager::kInvalidToken) {
      call_cancellation->DeregisterCallback(given_up);
    }
    return status;
  }

  // Moves the sent tensors of `forwards` that fit forward_max_bytes into the reply's
  // `forwarded`; whether it moved them all (a tensor that does not fit, or was not
  // sent, stays for a RecvTensor).
  bool Forward() {
    RendezvousWait now;
    now.deadline = absl::InfinitePast();
    int64_t left = request.forward_max_bytes();
    bool all = true;
    for (const RendezvousKey& key : forwards) {
      absl::StatusOr<Tensor> value = state.rendezvous->Recv(key, now);
      if (!value.ok()) {
        all = false;
        continue;
      }
      const int64_t bytes = static_cast<int64_t>(EncodedTensorBytes(*value));
      if (bytes > left) {
        all = false;
        // Back where the consumer's RecvTensor finds it (if the step was aborted
        // meanwhile, that RecvTensor fails with the abort anyway).
        state.rendezvous->Send(key, *value).IgnoreError();
        continue;
      }
      left -= bytes;
      NamedTensorProto* out = response->add_forwarded();
      out->set_name(key.full);
      value->ToProto(out->mutable_tensor());
    }
    return all;
  }

  Worker* const worker;
  const FoundGraph found;
  const RunGraphRequest& request;
  RunGraphResponse* const response;
  CancellationManager* const call_cancellation;
  CancellationManager::Token given_up = CancellationManager::kInvalidToken;
  StepState state;
  StepRendezvous rendezvous;
  ExecutorRunArgs args;
  int recorded = 0;
  absl::Time start = absl::InfinitePast();  // Of the executor's run.
  std::vector<RendezvousKey> recvs;         // Sent back in the reply.
  std::vector<RendezvousKey> forwards;      // Sent back in the reply if they fit.
};

absl::Status Worker::RunGraph(const FoundGraph& found, const RunGraphRequest& request,
                              RunGraphResponse* response, CancellationManager* call_cancellation) {
  RunGraphParts parts;
  RETURN_IF_ERROR(StartRunGraph(found, request, &parts));
  if (request.is_partial()) {
    return RunPartialGraph(found, request, std::move(parts), response, call_cancellation);
  }
  GraphStep step(this, found, request, response, call_cancellation);
  step.recvs = std::move(parts.recvs);
  step.forwards = std::move(parts.forwards);
  absl::Status status = step.Start(parts.sends);
  if (status.ok()) status = found.graph_->executor->Run(step.args, nullptr);
  return step.End(std::move(status));
}

void Worker::RunFoundGraphAsync(const FoundGraph& found, const RunGraphRequest& request,
                                RunGraphResponse* response, CancellationManager* call_cancellation,
                                std::function<void(absl::Status)> done) {
  if (request.is_partial()) {
    done(RunGraph(found, request, response, call_cancellation));
    return;
  }
  RunGraphParts parts;
  if (absl::Status bad = StartRunGraph(found, request, &parts); !bad.ok()) {
    done(std::move(bad));
    return;
  }
  auto step = std::make_unique<GraphStep>(this, found, request, response, call_cancellation);
  step->recvs = std::move(parts.recvs);
  step->forwards = std::move(parts.forwards);
  if (absl::Status failed = step->Start(parts.sends); !failed.ok()) {
    done(step->End(std::move(failed)));
    return;
  }
  GraphStep* s = step.release();  // Until the step ends.
  // Alive until RunAsync returns, which may be after the step ended and `s` is gone.
  const std::shared_ptr<RegisteredGraph> graph = found.graph_;
  graph->executor->RunAsync(s->args, nullptr, [s, done = std::move(done)](absl::Status status) {
    status = s->End(std::move(status));
    delete s;
    done(std::move(status));
  });
}

ExecutorRunArgs Worker::StepRunArgs(const RunGraphRequest& request, Rendezvous* rendezvous,
                                    const StepState& state) {
  ExecutorRunArgs args;
  args.step_id = request.step_id();
  args.resource_mgr = &resources_;
  args.timeout_ms = request.timeout_in_ms();
  args.clock = clock_;
  args.timer = &step_timer_;
  args.rendezvous = rendezvous;
  // CleanupGraph (the step failed elsewhere, or its master gave up) ends the run,
  // waking kernels that wait on something else than a tensor (a queue's dequeue).
  args.cancellation = state.cancellation.get();
  return args;
}

absl::Status Worker::ReplyWithRecvs(const RunGraphRequest& request, const StepState& state,
                                    const std::vector<RendezvousKey>& recvs, bool partial,
                                    RunGraphResponse* response) const {
  RendezvousWait wait;
  if (partial) {
    wait.cancellation = state.cancellation.get();
  } else {
    wait.deadline = absl::InfinitePast();
  }
  std::vector<Tensor> values;
  values.reserve(recvs.size());
  MessageBudget budget(options_.max_message_tensor_bytes);
  for (const RendezvousKey& key : recvs) {
    absl::StatusOr<Tensor> value = state.rendezvous->Recv(key, wait);
    if (!value.ok()) {
      if (partial) return value.status();
      return absl::InvalidArgumentError(
          absl::StrCat("RunGraph recv_key '", key.full, "' was not sent by graph ",
                       request.graph_handle(), " (", value.status().message(), ")"));
    }
    budget.Add(EncodedTensorBytes(*value));
    values.push_back(*std::move(value));
  }
  // Checked before any proto is built: gRPC cannot send a reply of 2 GiB or more.
  if (!budget.fits()) {
    return budget.Error(
        absl::StrCat("the reply to RunGraph (the fetches computed on task ", task_name_, ")"),
        "fetch smaller tensors: slice or reduce them in the graph, or read them in parts",
        [&](size_t i) { return absl::StrCat("fetch '", recvs[i].parsed.tensor_name, "'"); });
  }
  for (size_t i = 0; i < recvs.size(); ++i) {
    NamedTensorProto* out = response->add_recv();
    out->set_name(recvs[i].full);
    values[i].ToProto(out->mutable_tensor());
  }
  return absl::OkStatus();
}

Worker::PartialStep::~PartialStep() {
  if (run != nullptr && !run->finished()) {
    state.cancellation->StartCancel(absl::CancelledError("the partial run was abandoned"));
    state.rendezvous->StartAbort(absl::CancelledError("the partial run was abandoned"));
  }
}

std::shared_ptr<Worker::PartialStep> Worker::FindOrStartPartialStep(
    const FoundGraph& found, const RunGraphRequest& request) {
  Session* session = found.session_.get();
  absl::MutexLock lock(&session->partial_mu);
  std::shared_ptr<PartialStep>& slot =
      session->partial_steps[PartialStepKey(request.step_id(), request.graph_handle())];
  if (slot != nullptr) return slot;
  auto step = std::make_shared<PartialStep>();
  step->graph = found.graph_;
  step->state = rendezvous_.FindOrCreate(request.step_id());
  step->rendezvous = std::make_unique<StepRendezvous>(request.step_id(), task_name_, step->state,
                                                      session->peers.get());
  const ExecutorRunArgs args = StepRunArgs(request, step->rendezvous.get(), step->state);
  // Peers and this task's waiting RunGraph calls fail at once with the step's error.
  step->run = std::make_unique<BackgroundRun>(
      step->graph->executor.get(), args,
      [rendezvous = step->state.rendezvous](const absl::Status& s) { rendezvous->StartAbort(s); });
  slot = step;
  return step;
}

absl::Status Worker::RunPartialGraph(const FoundGraph& found, const RunGraphRequest& request,
                                     RunGraphParts parts, RunGraphResponse* response,
                                     CancellationManager* call_cancellation) {
  std::shared_ptr<PartialStep> step = FindOrStartPartialStep(found, request);
  CancellationManager::Token given_up = CancellationManager::kInvalidToken;
  if (call_cancellation != nullptr) {
    given_up = call_cancellation->RegisterCallback(
        [this, step_id = request.step_id()] { rendezvous_.Cleanup(step_id); });
    if (given_up == CancellationManager::kInvalidToken) rendezvous_.Cleanup(request.step_id());
  }
  absl::Cleanup deregister = [&] {
    if (given_up != CancellationManager::kInvalidToken) {
      call_cancellation->DeregisterCallback(given_up);
    }
  };
  absl::Status status;
  for (auto& [key, value] : parts.sends) {
    status = step->state.rendezvous->Send(key, value);
    if (!status.ok()) break;
  }
  if (status.ok()) {
    status = ReplyWithRecvs(request, step->state, parts.recvs, /*partial=*/true, response);
  }
  const bool ends = !status.ok() || request.is_last_partial_run();
  if (!ends) return absl::OkStatus();
  // The step's own error says more than the aborted rendezvous that reported it.
  const absl::Status ran = step->run->Wait();
  if (!ran.ok()) status = ran;
  {
    Session* session = found.session_.get();
    absl::MutexLock lock(&session->partial_mu);
    session->partial_steps.erase(PartialStepKey(request.step_id(), request.graph_handle()));
  }
  if (!status.ok()) return status;
  if (request.cleanup_on_return()) rendezvous_.Release(request.step_id());
  return absl::OkStatus();
}

void Worker::CleanupStep(int64_t step_id, const std::vector<std::shared_ptr<Session>>& sessions) {
  rendezvous_.Cleanup(step_id);
  // A partial run's steps end with it (cancelled just now); they are waited for here.
  std::vector<std::shared_ptr<PartialStep>> ended;
  for (const std::shared_ptr<Session>& session : sessions) {
    absl::MutexLock lock(&session->partial_mu);
    auto& steps = session->partial_steps;
    for (auto it = steps.lower_bound(PartialStepKey(step_id, ""));
         it != steps.end() && it->first.first == step_id;) {
      ended.push_back(std::move(it->second));
      it = steps.erase(it);
    }
  }
  ended.clear();
}

absl::Status Worker::CleanupGraph(const CleanupGraphRequest& request, CleanupGraphResponse*) {
  std::vector<std::shared_ptr<Session>> sessions;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [handle, session] : sessions_) sessions.push_back(session);
  }
  CleanupStep(request.step_id(), sessions);
  return absl::OkStatus();
}

absl::Status Worker::CleanupAll(const CleanupAllRequest& request, CleanupAllResponse*) {
  if (request.container_size() == 0) {
    resources_.Clear();
  } else {
    for (const std::string& container : request.container()) resources_.Cleanup(container);
  }
  return absl::OkStatus();
}

absl::StatusOr<RendezvousKey> Worker::CheckProducerKey(const std::string& key_string) const {
  ASSIGN_OR_RETURN(RendezvousKey key, RendezvousKey::Parse(key_string));
  ASSIGN_OR_RETURN(std::string task, TaskOfDevice(key.parsed.src_device));
  if (task != task_name_) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous key '", key.full,
                                                   "' names producer task ", task,
                                                   ", but this is task ", task_name_));
  }
  if (key.parsed.src_incarnation != incarnation_) {
    return absl::AbortedError(absl::StrFormat(
        "task %s restarted: rendezvous key '%s' names incarnation %016x, the task now runs "
        "incarnation %016x; recreate the session",
        task_name_, key.full, key.parsed.src_incarnation, incarnation_));
  }
  return key;
}

absl::Status Worker::RecvTensor(const RecvTensorRequest& request, CancellationManager* cancellation,
                                Tensor* tensor) {
  ASSIGN_OR_RETURN(RendezvousKey key, CheckProducerKey(request.rendezvous_key()));
  ASSIGN_OR_RETURN(StepState state, rendezvous_.FindForRecv(request.step_id()));
  RendezvousWait wait;
  wait.cancellation = cancellation;
  wait.clock = clock_;
  const absl::Time caller_deadline =
      request.timeout_in_ms() > 0 ? clock_->Now() + absl::Milliseconds(request.timeout_in_ms())
                                  : absl::InfiniteFuture();
  absl::StatusOr<Tensor> value;
  while (true) {
    // Until a RunGraph of the step came, wait at most options_.recv_wait_for_step.
    bool step_bound = false;
    wait.deadline = caller_deadline;
    const absl::Duration step_wait = options_.recv_wait_for_step;
    if (step_wait > absl::ZeroDuration() && !rendezvous_.Ran(request.step_id(), state) &&
        clock_->Now() + step_wait < caller_deadline) {
      wait.deadline = clock_->Now() + step_wait;
      step_bound = true;
    }
    value = state.rendezvous->Recv(key, wait);
    if (!step_bound || value.status().code() != absl::StatusCode::kDeadlineExceeded) break;
    if (!rendezvous_.Ran(request.step_id(), state)) {
      value = absl::DeadlineExceededError(absl::StrCat(
          "no RunGraph of step ", request.step_id(), " came to ", task_name_, " within ",
          absl::FormatDuration(step_wait), " of the RecvTensor of '", key.parsed.tensor_name,
          "' (its master is gone, or the caller is not a peer in a step)"));
      break;
    }
  }
  rendezvous_.EndRecv(request.step_id(), state);
  if (!value.ok()) return value.status();
  *tensor = *std::move(value);
  return absl::OkStatus();
}

bool Worker::RecvTensorWhenProduced(const RecvTensorRequest& request,
                                    CancellationManager* cancellation,
                                    std::function<void(absl::StatusOr<Tensor>)> done) {
  absl::StatusOr<RendezvousKey> key = CheckProducerKey(request.rendezvous_key());
  if (!key.ok()) {
    done(key.status());
    return true;
  }
  const int64_t step_id = request.step_id();
  absl::StatusOr<StepState> state = rendezvous_.FindForRecv(step_id);
  if (!state.ok()) {
    done(state.status());
    return true;
  }
  if (options_.recv_wait_for_step > absl::ZeroDuration() && !rendezvous_.Ran(step_id, *state)) {
    rendezvous_.EndRecv(step_id, *state);
    return false;
  }
  std::shared_ptr<LocalRendezvous> rendezvous = state->rendezvous;
  rendezvous->RecvAsync(*key, cancellation,
                        [this, step_id, state = *std::move(state),
                         done = std::move(done)](absl::StatusOr<Tensor> value) {
                          rendezvous_.EndRecv(step_id, state);
                          done(std::move(value));
                        });
  return true;
}

absl::StatusOr<bool> Worker::TryRecvTensor(const RecvTensorRequest& request, Tensor* tensor) {
  ASSIGN_OR_RETURN(RendezvousKey key, CheckProducerKey(request.rendezvous_key()));
  ASSIGN_OR_RETURN(StepState state, rendezvous_.FindForRecv(request.step_id()));
  RendezvousWait now;  // No clock: a deadline in the past only looks.
  now.deadline = absl::InfinitePast();
  absl::StatusOr<Tensor> value = state.rendezvous->Recv(key, now);
  rendezvous_.EndRecv(request.step_id(), state);
  if (value.status().code() == absl::StatusCode::kDeadlineExceeded) return false;
  if (!value.ok()) return value.status();
  *tensor = *std::move(value);
  return true;
}

}  // namespace overseer

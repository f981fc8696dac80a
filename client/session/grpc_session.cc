#include "client/session/grpc_session.h"

#include <algorithm>
#include <cstdint>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/session/signature_key.h"
#include "core/logging.h"
#include "core/message_budget.h"
#include "core/rpc/grpc_target.h"
#include "core/status_macros.h"
#include "master/rpc/grpc_master.h"

namespace overseer {
namespace {

constexpr char kFeedHint[] =
    "feed smaller tensors (split the batch over several steps), or keep large data in the "
    "cluster (a variable or a queue filled in parts)";

// Graphs travel whole in CreateSession and ExtendSession.
absl::Status CheckGraphSize(const GraphDef& graph, int64_t limit) {
  const int64_t bytes = static_cast<int64_t>(graph.ByteSizeLong());
  if (bytes <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the graph is ", bytes, " bytes encoded, over the limit of ", limit,
      " bytes for one CreateSession or ExtendSession message (protobuf cannot encode a "
      "message of 2 GiB or more); keep large constants out of the graph: feed them or "
      "assign them to variables"));
}

absl::Status NoGraphError() {
  return absl::FailedPreconditionError(
      "the session has no graph yet; call Create (or Extend) first");
}

}  // namespace

std::string NewRequestId() {
  // One generator per thread: no lock on every step of concurrent trainers.
  thread_local absl::BitGen gen;
  return absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(gen), absl::Uniform<uint64_t>(gen));
}

absl::StatusOr<std::unique_ptr<GrpcSession>> GrpcSession::Connect(const SessionOptions& options,
                                                                  GrpcSessionOptions grpc_options) {
  ASSIGN_OR_RETURN(const std::string address, ParseGrpcAddress(options.target));
  auto master = std::make_unique<GrpcMaster>(NewMasterChannel(address, grpc_options.keepalive),
                                             grpc_options.rpc_timeout, grpc_options.max_step_time);
  return std::make_unique<GrpcSession>(options, std::move(master),
                                       options.clock != nullptr ? options.clock : Clock::Real(),
                                       grpc_options);
}

GrpcSession::GrpcSession(const SessionOptions& options, std::unique_ptr<MasterInterface> master,
                         Clock* clock, GrpcSessionOptions grpc_options)
    : options_(options),
      grpc_options_(grpc_options),
      master_(std::move(master)),
      clock_(clock),
      direct_(grpc_options.direct_steps) {}

GrpcSession::~GrpcSession() { Close().IgnoreError(); }

absl::Time GrpcSession::CallDeadline(int64_t timeout_in_ms) const {
  absl::Duration timeout = grpc_options_.rpc_timeout;
  if (timeout_in_ms > 0) timeout = std::max(timeout, absl::Milliseconds(timeout_in_ms));
  return clock_->Now() + timeout;
}

absl::Status GrpcSession::Retry(const std::function<absl::Status()>& call) {
  return RetryUnavailable(clock_, grpc_options_.retry, CallDeadline(0), call);
}

std::string GrpcSession::handle() const {
  absl::MutexLock lock(&mu_);
  return handle_;
}

absl::Status GrpcSession::CreateLocked(const GraphDef& graph) {
  RETURN_IF_ERROR(CheckGraphSize(graph, grpc_options_.max_message_tensor_bytes));
  CreateSessionRequest request;
  *request.mutable_graph_def() = graph;
  *request.mutable_config() = options_.config;
  request.set_request_id(NewRequestId());
  CreateSessionResponse response;
  RETURN_IF_ERROR(Retry([&] {
    response.Clear();
    return master_->CreateSession(request, &response);
  }));
  absl::MutexLock lock(&mu_);
  handle_ = response.session_handle();
  graph_version_ = response.graph_version();
  graph_nodes_ = graph.node_size();
  return absl::OkStatus();
}

absl::Status GrpcSession::Create(const GraphDef& graph) {
  absl::MutexLock ops(&ops_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return SessionClosedError();
    if (!handle_.empty()) {
      return absl::FailedPreconditionError(
          "the session already has a graph; use Extend to add nodes");
    }
  }
  return CreateLocked(graph);
}

absl::Status GrpcSession::Extend(const GraphDef& graph) {
  absl::MutexLock ops(&ops_mu_);
  ExtendSessionRequest request;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return SessionClosedError();
    request.set_session_handle(handle_);
    request.set_current_graph_version(graph_version_);
  }
  // Extending a session without a graph sets it, as DirectSession does.
  if (request.session_handle().empty()) return CreateLocked(graph);
  RETURN_IF_ERROR(CheckGraphSize(graph, grpc_options_.max_message_tensor_bytes));
  *request.mutable_graph_def() = graph;
  request.set_request_id(NewRequestId());
  ExtendSessionResponse response;
  RETURN_IF_ERROR(Retry([&] { return master_->ExtendSession(request, &response); }));
  absl::MutexLock lock(&mu_);
  graph_version_ = response.new_graph_version();
  graph_nodes_ += graph.node_size();
  return absl::OkStatus();
}

absl::StatusOr<std::string> GrpcSession::RunnableHandle() const {
  absl::MutexLock lock(&mu_);
  if (closed_) return SessionClosedError();
  if (handle_.empty()) return NoGraphError();
  if (graph_nodes_ == 0) return EmptyGraphError();
  return handle_;
}

absl::Status GrpcSession::Run(const RunOptions& options,
                              const std::vector<std::pair<std::string, Tensor>>& feeds,
                              const std::vector<std::string>& fetches,
                              const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                              RunMetadata* metadata) {
  return RunStep(options, "", feeds, fetches, targets, outputs, metadata);
}

absl::StatusOr<std::string> GrpcSession::PartialRunSetup(const std::vector<std::string>& feeds,
                                                         const std::vector<std::string>& fetches,
                                                         const std::vector<std::string>& targets) {
  ASSIGN_OR_RETURN(std::string handle, RunnableHandle());
  PartialRunSetupRequest request;
  request.set_session_handle(handle);
  for (const std::string& f : feeds) request.add_feed(f);
  for (const std::string& f : fetches) request.add_fetch(f);
  for (const std::string& t : targets) request.add_target(t);
  request.set_request_id(NewRequestId());
  PartialRunSetupResponse response;
  RETURN_IF_ERROR(Retry([&] { return master_->PartialRunSetup(request, &response); }));
  return response.partial_run_handle();
}

absl::Status GrpcSession::PartialRun(const std::string& handle,
                                     const std::vector<std::pair<std::string, Tensor>>& feeds,
                                     const std::vector<std::string>& fetches,
                                     std::vector<Tensor>* outputs) {
  if (handle.empty()) {
    return absl::InvalidArgumentError("no partial run with handle '': call PartialRunSetup first");
  }
  if (outputs == nullptr && !fetches.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("partial run '", handle, "' has ",
                                                   fetches.size(),
                                                   " fetches but no output vector was given"));
  }
  return RunStep(RunOptions(), handle, feeds, fetches, {}, outputs, nullptr);
}

absl::Status GrpcSession::RunStep(const RunOptions& options, const std::string& partial_run,
                                  const std::vector<std::pair<std::string, Tensor>>& feeds,
                                  const std::vector<std::string>& fetches,
                                  const std::vector<std::string>& targets,
                                  std::vector<Tensor>* outputs, RunMetadata* metadata) {
  ASSIGN_OR_RETURN(std::string handle, RunnableHandle());
  MessageBudget budget(grpc_options_.max_message_tensor_bytes);
  for (const auto& feed : feeds) budget.Add(EncodedTensorBytes(feed.second));
  if (!budget.fits()) {
    return budget.Error("the RunStep request (the step's feeds)", kFeedHint,
                        [&](size_t i) { return absl::StrCat("feed '", feeds[i].first, "'"); });
  }
  int64_t timeout_in_ms = options.timeout_in_ms();
  if (timeout_in_ms <= 0) timeout_in_ms = options_.config.operation_timeout_in_ms();
  const bool direct_ok = direct_ && partial_run.empty() && DirectStepOptions(options);
  std::string route_key;
  if (direct_ok) {
    SignatureKey(
        feeds, [](const auto& f) -> const std::string& { return f.first; }, fetches, targets,
        &route_key);
    std::optional<absl::Status> ran =
        RunDirect(handle, route_key, timeout_in_ms, feeds, fetches, outputs, metadata);
    if (ran.has_value()) return *std::move(ran);
  }
  RunStepRequest request;
  request.set_session_handle(handle);
  request.set_partial_run_handle(partial_run);
  for (const auto& [name, value] : feeds) {
    NamedTensorProto* feed = request.add_feed();
    feed->set_name(name);
    value.ToProto(feed->mutable_tensor());
  }
  for (const std::string& f : fetches) request.add_fetch(f);
  for (const std::string& t : targets) request.add_target(t);
  *request.mutable_options() = options;
  request.mutable_options()->set_timeout_in_ms(timeout_in_ms);
  request.set_direct_ok(direct_ok);
  {
    absl::MutexLock lock(&mu_);
    request.set_direct_steps_run(std::exchange(direct_steps_run_, 0));
  }
  request.set_request_id(NewRequestId());
  RunStepResponse response;
  absl::Status ran =
      RetryUnavailable(clock_, grpc_options_.retry, CallDeadline(timeout_in_ms), [&] {
        response.Clear();
        return master_->RunStep(request, &response);
      });
  if (!ran.ok()) {
    // Told next time (a call that failed may not have reached the master).
    absl::MutexLock lock(&mu_);
    direct_steps_run_ += request.direct_steps_run();
    return ran;
  }
  if (response.tensor_size() != static_cast<int>(fetches.size())) {
    return absl::InternalError(absl::StrCat("the master returned ", response.tensor_size(),
                                            " tensors for ", fetches.size(), " fetches"));
  }
  if (outputs != nullptr) {
    outputs->clear();
    outputs->reserve(fetches.size());
    for (const NamedTensorProto& t : response.tensor()) {
      absl::StatusOr<Tensor> value = Tensor::FromProto(t.tensor());
      if (!value.ok()) {
        return absl::InternalError(
            absl::StrCat("fetch '", t.name(), "' from the master: ", value.status().message()));
      }
      outputs->push_back(*std::move(value));
    }
  }
  if (metadata != nullptr) *metadata = response.metadata();
  if (direct_ok && response.has_direct()) {
    LearnRoute(route_key, response.direct(), feeds.size(), fetches.size());
  }
  return absl::OkStatus();
}

void GrpcSession::LearnRoute(const std::string& route_key, const DirectStep& step, size_t feeds,
                             size_t fetches) {
  if (static_cast<size_t>(step.feed_size()) != feeds ||
      static_cast<size_t>(step.fetch_key_size()) != fetches || step.step_ids() <= 0) {
    return;
  }
  auto plan = std::make_shared<DirectPlan>();
  plan->step = step;
  plan->identity = absl::StrCat(step.task(), "#", absl::Hex(step.incarnation()));
  for (const DirectFeed& feed : step.feed()) {
    FeedCheck check;
    check.name = feed.name();
    check.dtype = feed.dtype();
    check.placeholder = feed.placeholder();
    if (feed.placeholder()) check.shape = PartialShape::FromProto(feed.shape());
    plan->feed_checks.push_back(std::move(check));
  }
  std::map<std::string, int> recv_index;
  for (const std::string& key : step.fetch_key()) {
    auto [it, added] = recv_index.emplace(key, static_cast<int>(plan->recv_keys.size()));
    if (added) plan->recv_keys.push_back(key);
    plan->fetch_recv.push_back(it->second);
  }
  absl::MutexLock lock(&mu_);
  std::shared_ptr<DirectTask>& task = direct_tasks_[step.address()];
  if (task == nullptr) {
    task = std::make_shared<DirectTask>();
    task->channel = NewWorkerChannel(step.address(), grpc_options_.keepalive);
    GrpcWorkerOptions worker_options;
    worker_options.max_step_time = grpc_options_.max_step_time;
    worker_options.keepalive = grpc_options_.keepalive;
    worker_options.local_transfers = false;
    task->worker = std::make_unique<GrpcWorker>(task->channel, worker_options);
  }
  plan->task = task;
  DirectRoute& route = routes_[route_key];
  route.plan = std::move(plan);
  route.next_step_id = step.first_step_id();
  route.end_step_id = step.first_step_id() + step.step_ids();
  route.expires = clock_->Now() + absl::Milliseconds(step.valid_ms());
}

bool GrpcSession::TaskAnswers(const DirectPlan& plan) {
  const DirectStep& step = plan.step;
  {
    absl::MutexLock lock(&mu_);
    if (plan.task->checked == plan.identity) return plan.task->answers;
  }
  GetStatusResponse status;
  absl::Status asked = plan.task->worker->GetStatus(GetStatusRequest(), &status);
  if (!asked.ok()) return false;  // Asked again by the next step.
  const bool answers =
      status.task_name() == step.task() && status.incarnation() == step.incarnation();
  if (!answers) {
    LOG(WARNING) << absl::StrCat(
        "session ", handle(), ": ", step.address(), " answers as ", status.task_name(),
        " (incarnation ", absl::Hex(status.incarnation()), "), not as ", step.task(),
        " (incarnation ", absl::Hex(step.incarnation()), "): its steps go through the master");
  }
  absl::MutexLock lock(&mu_);
  plan.task->checked = plan.identity;
  plan.task->answers = answers;
  return answers;
}

std::optional<absl::Status> GrpcSession::RunDirect(
    const std::string& session_handle, const std::string& route_key, int64_t timeout_in_ms,
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches, std::vector<Tensor>* outputs, RunMetadata* metadata) {
  std::shared_ptr<const DirectPlan> plan;
  int64_t step_id = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = routes_.find(route_key);
    if (it == routes_.end()) return std::nullopt;
    DirectRoute& route = it->second;
    if (route.next_step_id >= route.end_step_id || clock_->Now() >= route.expires) {
      routes_.erase(it);  // Renewed by the step through the master.
      return std::nullopt;
    }
    plan = route.plan;
    step_id = route.next_step_id++;
  }
  // Connects if idle; until connected, the master runs the step.
  if (plan->task->channel->GetState(/*try_to_connect=*/true) != GRPC_CHANNEL_READY) {
    return std::nullopt;
  }
  if (!TaskAnswers(*plan)) return std::nullopt;
  std::vector<const Tensor*> values;
  values.reserve(feeds.size());
  for (const auto& feed : feeds) values.push_back(&feed.second);
  RETURN_IF_ERROR(CheckFeeds(plan->feed_checks, values));
  const DirectStep& direct = plan->step;
  RunGraphRequest request;
  request.set_session_handle(session_handle);
  request.set_graph_handle(direct.graph_handle());
  request.set_step_id(step_id);
  request.set_timeout_in_ms(timeout_in_ms);
  request.set_cleanup_on_return(true);
  for (size_t i = 0; i < feeds.size(); ++i) {
    NamedTensorProto* send = request.add_send();
    send->set_name(direct.feed(static_cast<int>(i)).key());
    feeds[i].second.ToProto(send->mutable_tensor());
  }
  for (const std::string& key : plan->recv_keys) request.add_recv_key(key);
  RunGraphResponse response;
  absl::Status ran = plan->task->worker->RunGraph(request, &response);
  if (ran.ok() && response.recv_size() != static_cast<int>(plan->recv_keys.size())) {
    ran = absl::InternalError(absl::StrCat("returned ", response.recv_size(), " tensors for ",
                                           plan->recv_keys.size(), " fetch keys"));
  }
  std::vector<Tensor> values_out;
  for (size_t i = 0; ran.ok() && i < fetches.size(); ++i) {
    absl::StatusOr<Tensor> value = Tensor::FromProto(response.recv(plan->fetch_recv[i]).tensor());
    if (!value.ok()) {
      ran =
          absl::InternalError(absl::StrCat("fetch '", fetches[i], "': ", value.status().message()));
    } else {
      values_out.push_back(*std::move(value));
    }
  }
  absl::MutexLock lock(&mu_);
  if (!ran.ok()) {
    // The next step goes through the master, which sees what happened to the task.
    auto it = routes_.find(route_key);
    if (it != routes_.end() && it->second.plan == plan) routes_.erase(it);
    // The task no longer knows the session: it restarted, or the master had it forget
    // the session when another task's restart aborted it. The master says which, or runs
    // the step (a direct step writes no variable, so running it again is harmless).
    if (ran.code() == absl::StatusCode::kAborted) return std::nullopt;
    return absl::Status(ran.code(), absl::StrCat("task ", direct.task(), ": ", ran.message()));
  }
  ++direct_steps_run_;
  if (outputs != nullptr) *outputs = std::move(values_out);
  if (metadata != nullptr) *metadata = RunMetadata();
  return absl::OkStatus();
}

absl::StatusOr<CallableHandle> GrpcSession::MakeCallable(const CallableOptions& options) {
  ASSIGN_OR_RETURN(std::string handle, RunnableHandle());
  MakeCallableRequest request;
  request.set_session_handle(handle);
  *request.mutable_options() = options;
  RunOptions* run_options = request.mutable_options()->mutable_run_options();
  if (run_options->timeout_in_ms() <= 0 && options_.config.operation_timeout_in_ms() > 0) {
    run_options->set_timeout_in_ms(options_.config.operation_timeout_in_ms());
  }
  request.set_request_id(NewRequestId());
  MakeCallableResponse response;
  RETURN_IF_ERROR(Retry([&] { return master_->MakeCallable(request, &response); }));
  return response.handle();
}

absl::Status GrpcSession::RunCallable(CallableHandle callable, const std::vector<Tensor>& feeds,
                                      std::vector<Tensor>* fetches, RunMetadata* metadata) {
  ASSIGN_OR_RETURN(std::string handle, RunnableHandle());
  MessageBudget budget(grpc_options_.max_message_tensor_bytes);
  for (const Tensor& feed : feeds) budget.Add(EncodedTensorBytes(feed));
  if (!budget.fits()) {
    return budget.Error(
        absl::StrCat("the RunCallable request (the feeds of callable ", callable, ")"), kFeedHint,
        [](size_t i) { return absl::StrCat("feed ", i); });
  }
  RunCallableRequest request;
  request.set_session_handle(handle);
  request.set_handle(callable);
  for (const Tensor& value : feeds) value.ToProto(request.add_feed());
  request.set_request_id(NewRequestId());
  RunCallableResponse response;
  RETURN_IF_ERROR(Retry([&] {
    response.Clear();
    return master_->RunCallable(request, &response);
  }));
  if (fetches != nullptr) {
    fetches->clear();
    fetches->reserve(response.fetch_size());
    for (int i = 0; i < response.fetch_size(); ++i) {
      absl::StatusOr<Tensor> value = Tensor::FromProto(response.fetch(i));
      if (!value.ok()) {
        return absl::InternalError(absl::StrCat("fetch ", i, " of callable ", callable,
                                                " from the master: ", value.status().message()));
      }
      fetches->push_back(*std::move(value));
    }
  } else if (response.fetch_size() > 0) {
    return absl::InvalidArgumentError(absl::StrCat("callable ", callable, " has ",
                                                   response.fetch_size(),
                                                   " fetches but no output vector was given"));
  }
  if (metadata != nullptr) *metadata = response.metadata();
  return absl::OkStatus();
}

absl::Status GrpcSession::ReleaseCallable(CallableHandle callable) {
  ASSIGN_OR_RETURN(std::string handle, RunnableHandle());
  ReleaseCallableRequest request;
  request.set_session_handle(handle);
  request.set_handle(callable);
  ReleaseCallableResponse response;
  return Retry([&] { return master_->ReleaseCallable(request, &response); });
}

absl::Status GrpcSession::Close() {
  absl::MutexLock ops(&ops_mu_);
  std::string handle;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::OkStatus();
    closed_ = true;
    handle = handle_;
  }
  if (handle.empty()) return absl::OkStatus();
  CloseSessionRequest request;
  request.set_session_handle(handle);
  CloseSessionResponse response;
  absl::Status closed = Retry([&] { return master_->CloseSession(request, &response); });
  // The master forgets the session anyway (restart, idle GC): an unknown handle is closed.
  if (closed.code() == absl::StatusCode::kAborted) return absl::OkStatus();
  return closed;
}

absl::StatusOr<std::vector<DeviceAttributes>> GrpcSession::ListDevices() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return SessionClosedError();
  }
  ListDevicesRequest request;
  request.set_session_handle(handle());
  ListDevicesResponse response;
  RETURN_IF_ERROR(Retry([&] {
    response.Clear();
    return master_->ListDevices(request, &response);
  }));
  return std::vector<DeviceAttributes>(response.remote_device().begin(),
                                       response.remote_device().end());
}

absl::Status GrpcSession::Reset(const std::vector<std::string>& containers) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return SessionClosedError();
  }
  ResetRequest request;
  for (const std::string& c : containers) request.add_container(c);
  for (const std::string& f : options_.config.device_filters()) request.add_device_filters(f);
  ResetResponse response;
  RETURN_IF_ERROR(master_->Reset(request, &response));
  // The master closed every session, this one too.
  absl::MutexLock lock(&mu_);
  closed_ = true;
  return absl::OkStatus();
}

namespace {

const bool kRegistered = [] {
  RegisterSessionFactory(
      std::string(kGrpcScheme),
      [](const SessionOptions& options) -> absl::StatusOr<std::unique_ptr<Session>> {
        ASSIGN_OR_RETURN(std::unique_ptr<GrpcSession> session, GrpcSession::Connect(options));
        return std::unique_ptr<Session>(std::move(session));
      });
  return true;
}();

}  // namespace
}  // namespace overseer

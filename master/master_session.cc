#include "master/master_session.h"

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/prune.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"
#include "core/types.h"
#include "master/partitioner.h"
#include "master/placer.h"

namespace overseer {

MasterSession::MasterSession(std::string handle, ConfigProto config,
                             std::vector<SessionTask> tasks, std::string client_task,
                             MasterWorkerCacheInterface* workers,
                             std::atomic<int64_t>* next_step_id,
                             int64_t max_message_tensor_bytes)
    : handle_(std::move(handle)),
      config_(std::move(config)),
      tasks_(std::move(tasks)),
      client_task_(std::move(client_task)),
      workers_(workers),
      next_step_id_(next_step_id),
      max_message_tensor_bytes_(max_message_tensor_bytes),
      cleaner_(std::make_shared<StepCleaner>(workers)) {
  for (const SessionTask& t : tasks_) {
    for (const DeviceAttributes& d : t.devices) {
      devices_.push_back(d.name());
      if (default_device_.empty() && t.name == client_task_) default_device_ = d.name();
    }
  }
}

MasterSession::~MasterSession() { Close(); }

absl::Status MasterSession::Create(GraphDef graph) {
  ASSIGN_OR_RETURN(ValidatedGraph validated, ValidateAndIndexGraph(graph));
  CreateWorkerSessionRequest req;
  req.set_session_handle(handle_);
  *req.mutable_cluster() = workers_->cluster_def();
  for (const SessionTask& t : tasks_) {
    CreateWorkerSessionResponse resp;
    WorkerInterface* w = workers_->GetWorker(t.name);
    if (w == nullptr) return absl::UnavailableError(absl::StrCat("no task ", t.name));
    RETURN_IF_ERROR(TaskError(t.name, w->CreateWorkerSession(req, &resp)));
  }
  absl::MutexLock lock(&mu_);
  graph_def_ = std::move(graph);
  graph_ = std::make_shared<ValidatedGraph>(std::move(validated));
  return absl::OkStatus();
}

absl::Status MasterSession::Usable() const {
  if (closed_) return absl::AbortedError(absl::StrCat("session ", handle_, " is closed"));
  return aborted_;
}

absl::StatusOr<int64_t> MasterSession::Extend(const GraphDef& graph, int64_t current_version) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Usable());
  if (current_version != version_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ExtendSession on graph version ", current_version, " but the session's graph is at ",
        version_, " (another extension came first)"));
  }
  const Graph& old = *graph_->graph;
  for (const NodeDef& node : graph.node()) {
    if (old.FindNode(node.name()) >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name(), "': Extend adds a node whose name is already in the graph"));
    }
  }
  GraphDef merged = graph_def_;
  for (const NodeDef& node : graph.node()) *merged.add_node() = node;
  ASSIGN_OR_RETURN(ValidatedGraph validated, ValidateAndIndexGraph(merged));
  graph_def_ = std::move(merged);
  graph_ = std::make_shared<ValidatedGraph>(std::move(validated));
  return ++version_;
}

absl::StatusOr<std::shared_ptr<MasterSession::Signature>> MasterSession::BuildSignature(
    const ValidatedGraph& graph, const std::vector<std::string>& feeds,
    const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
  auto sig = std::make_shared<Signature>();
  ASSIGN_OR_RETURN(PrunedGraph pruned, PruneGraph(*graph.graph, feeds, fetches, targets));
  for (const std::string& name : feeds) {
    ASSIGN_OR_RETURN(Endpoint e, ResolveTensor(*graph.graph, name, "feed"));
    const GraphNode& node = graph.graph->node(e.node);
    FeedCheck check;
    check.name = absl::StrCat(node.name(), ":", e.index);
    check.dtype = RemoveRefType(node.output_types[e.index]);
    check.placeholder = node.def->op() == "Placeholder";
    if (check.placeholder) {
      check.shape = GetNodeAttrOr(*node.def, "shape", PartialShape::Unknown());
    }
    sig->feed_checks.push_back(std::move(check));
  }
  const Graph& step = *pruned.graph;
  for (int id = 0; id < step.num_nodes(); ++id) {
    const NodeDef& def = *step.node(id).def;
    if (def.op() != "Placeholder") continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "You must feed a value for placeholder tensor '", def.name(), "' with dtype ",
        DataTypeString(GetNodeAttrOr(def, "dtype", DT_INVALID)), " and shape ",
        GetNodeAttrOr(def, "shape", PartialShape::Unknown()).DebugString()));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> devices,
                   PlaceGraph(step, devices_, default_device_));
  absl::flat_hash_map<std::string, uint64_t> incarnations;
  for (const SessionTask& t : tasks_) {
    for (const DeviceAttributes& d : t.devices) incarnations[d.name()] = t.incarnation;
  }
  PartitionOptions options;
  options.incarnation = [&](const std::string& device) { return incarnations[device]; };
  options.feed_names = feeds;
  options.fetch_names = fetches;
  ASSIGN_OR_RETURN(PartitionedGraph parts, PartitionGraph(pruned, devices, options));
  sig->step.feeds = std::move(parts.feeds);
  sig->step.fetches = std::move(parts.fetches);
  for (auto& [task, def] : parts.partitions) {
    for (const NodeDef& node : def.node()) {
      if (node.op() == kSendOp && !GetNodeAttrOr(node, "client_terminated", false)) {
        sig->step.peer_senders.insert(task);
        break;
      }
    }
    WorkerInterface* w = workers_->GetWorker(task);
    if (w == nullptr) return absl::UnavailableError(absl::StrCat("no task ", task));
    RegisterGraphRequest req;
    req.set_session_handle(handle_);
    *req.mutable_graph_def() = std::move(def);
    RegisterGraphResponse resp;
    RETURN_IF_ERROR(TaskError(task, w->RegisterGraph(req, &resp)));
    sig->step.graph_handles[task] = resp.graph_handle();
  }
  return sig;
}

absl::StatusOr<std::shared_ptr<const MasterSession::Signature>> MasterSession::GetSignature(
    const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  const std::string key = absl::StrCat(absl::StrJoin(feeds, ","), ";", absl::StrJoin(fetches, ","),
                                       ";", absl::StrJoin(targets, ","));
  std::shared_ptr<const ValidatedGraph> graph;
  {
    absl::ReaderMutexLock lock(&mu_);
    RETURN_IF_ERROR(Usable());
    auto it = signatures_.find(key);
    if (it != signatures_.end()) return it->second;
    graph = graph_;
  }
  absl::MutexLock build(&build_mu_);
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = signatures_.find(key);
    if (it != signatures_.end()) return it->second;
  }
  absl::StatusOr<std::shared_ptr<Signature>> sig = BuildSignature(*graph, feeds, fetches, targets);
  if (!sig.ok()) return CheckTasks(sig.status());
  absl::MutexLock lock(&mu_);
  signatures_[key] = *sig;
  return std::shared_ptr<const Signature>(*sig);
}

absl::Status MasterSession::RunSignature(const Signature& sig,
                                         const std::vector<const TensorProto*>& feeds,
                                         const RunOptions& options,
                                         const std::vector<std::string>& fetch_names,
                                         std::vector<TensorProto>* fetches,
                                         RunMetadata* metadata) {
  for (size_t i = 0; i < feeds.size(); ++i) {
    const FeedCheck& check = sig.feed_checks[i];
    const TensorProto& value = *feeds[i];
    if (value.dtype() != check.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feed for '", check.name, "' has dtype ", DataTypeString(value.dtype()), " but ",
          check.placeholder ? "the placeholder wants " : "the tensor has dtype ",
          DataTypeString(check.dtype)));
    }
    if (check.placeholder) {
      auto shape = TensorShape::FromProto(value.tensor_shape());
      if (!shape.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("feed for '", check.name, "': ", shape.status().message()));
      }
      if (!check.shape.IsCompatibleWith(*shape)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "feed for '", check.name, "' has shape ", shape->DebugString(),
            " but the placeholder wants ", check.shape.DebugString()));
      }
    }
  }
  StepArgs args;
  args.session_handle = handle_;
  args.step_id = next_step_id_->fetch_add(1);
  args.feeds = feeds;
  args.timeout_in_ms = options.timeout_in_ms() > 0 ? options.timeout_in_ms()
                                                   : config_.operation_timeout_in_ms();
  args.trace = options.trace_level() != RunOptions::NO_TRACE && metadata != nullptr;
  StepStats* stats = args.trace ? metadata->mutable_step_stats() : nullptr;
  std::shared_ptr<StepCleaner> cleaner;
  {
    absl::ReaderMutexLock lock(&mu_);
    cleaner = cleaner_;
  }
  absl::Status s = RunRegisteredStep(workers_, sig.step, args, fetches, stats, cleaner.get());
  if (!s.ok()) return CheckTasks(s);
  // Each task's fetches fit in its RunGraph reply; all of them must fit in this one.
  MessageBudget budget(max_message_tensor_bytes_);
  for (const TensorProto& t : *fetches) budget.Add(EncodedTensorBytes(t));
  if (budget.fits()) return absl::OkStatus();
  return budget.Error(
      "the step's reply (its fetches from every task)",
      "fetch smaller tensors: slice or reduce them in the graph, or fetch them in separate "
      "steps",
      [&](size_t i) {
        return absl::StrCat("fetch '", i < fetch_names.size() ? fetch_names[i] : "?", "'");
      });
}

absl::Status MasterSession::CheckTasks(const absl::Status& error) {
  if (error.code() != absl::StatusCode::kAborted &&
      error.code() != absl::StatusCode::kUnavailable) {
    return error;
  }
  // Every restarted task is named (one restarted earlier may not be the one that
  // failed this step), with the step's own error, which names the task it came from.
  std::vector<std::string> restarted;
  for (const SessionTask& t : tasks_) {
    WorkerInterface* w = workers_->GetWorker(t.name);
    GetStatusResponse resp;
    if (w == nullptr || !w->GetStatus(GetStatusRequest(), &resp).ok()) continue;
    if (resp.incarnation() != t.incarnation) {
      restarted.push_back(absl::StrCat(t.name, " (incarnation ", absl::Hex(t.incarnation),
                                       " -> ", absl::Hex(resp.incarnation()), ")"));
    }
  }
  if (restarted.empty()) return error;
  absl::MutexLock lock(&mu_);
  if (aborted_.ok()) {
    aborted_ = absl::AbortedError(absl::StrCat(
        restarted.size() == 1 ? "task " : "tasks ", absl::StrJoin(restarted, ", "),
        restarted.size() == 1 ? " restarted and lost its state" : " restarted and lost their state",
        "; recreate the session (the step failed with: ", error.ToString(), ")"));
  }
  return aborted_;
}

absl::Status MasterSession::Run(const RunStepRequest& request, RunStepResponse* response) {
  std::vector<std::string> feeds, fetches(request.fetch().begin(), request.fetch().end()),
      targets(request.target().begin(), request.target().end());
  std::vector<const TensorProto*> values;
  for (const NamedTensorProto& f : request.feed()) {
    feeds.push_back(f.name());
    values.push_back(&f.tensor());
  }
  ASSIGN_OR_RETURN(auto sig, GetSignature(feeds, fetches, targets));
  std::vector<TensorProto> out;
  RETURN_IF_ERROR(RunSignature(*sig, values, request.options(), fetches, &out,
                               response->mutable_metadata()));
  for (size_t i = 0; i < out.size(); ++i) {
    NamedTensorProto* t = response->add_tensor();
    t->set_name(fetches[i]);
    t->mutable_tensor()->Swap(&out[i]);
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> MasterSession::MakeCallable(const CallableOptions& options) {
  std::vector<std::string> feeds(options.feed().begin(), options.feed().end());
  std::vector<std::string> fetches(options.fetch().begin(), options.fetch().end());
  std::vector<std::string> targets(options.target().begin(), options.target().end());
  ASSIGN_OR_RETURN(auto sig, GetSignature(feeds, fetches, targets));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Usable());
  const int64_t handle = next_callable_++;
  callables_[handle] = Callable{std::move(sig), options.run_options(), std::move(fetches)};
  return handle;
}

absl::Status MasterSession::RunCallable(const RunCallableRequest& request,
                                        RunCallableResponse* response) {
  Callable callable;
  {
    absl::ReaderMutexLock lock(&mu_);
    RETURN_IF_ERROR(Usable());
    auto it = callables_.find(request.handle());
    if (it == callables_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("no callable with handle ", request.handle(),
                                                     " in session ", handle_,
                                                     " (released or never made)"));
    }
    callable = it->second;
  }
  const size_t num_feeds = callable.signature->feed_checks.size();
  if (static_cast<size_t>(request.feed_size()) != num_feeds) {
    return absl::InvalidArgumentError(absl::StrCat("callable ", request.handle(), " takes ",
                                                   num_feeds, " feeds, got ",
                                                   request.feed_size()));
  }
  std::vector<const TensorProto*> values;
  values.reserve(num_feeds);
  for (const TensorProto& t : request.feed()) values.push_back(&t);
  std::vector<TensorProto> out;
  RETURN_IF_ERROR(RunSignature(*callable.signature, values, callable.run_options,
                               callable.fetches, &out, response->mutable_metadata()));
  for (TensorProto& t : out) response->add_fetch()->Swap(&t);
  return absl::OkStatus();
}

absl::Status MasterSession::ReleaseCallable(int64_t handle) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Usable());
  if (handle <= 0 || handle >= next_callable_) {
    return absl::InvalidArgumentError(absl::StrCat("no callable with handle ", handle,
                                                   " was made in session ", handle_));
  }
  callables_.erase(handle);
  return absl::OkStatus();
}

void MasterSession::Close() {
  std::shared_ptr<StepCleaner> cleaner;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    signatures_.clear();
    callables_.clear();
    cleaner = std::move(cleaner_);
  }
  // Sends what is queued (unless a running step still holds the cleaner).
  cleaner.reset();
  // Deleting a worker session also forgets its registered graphs. In parallel, so that
  // a dead task costs one deadline, not one per task.
  std::vector<std::thread> threads;
  for (const SessionTask& t : tasks_) {
    WorkerInterface* w = workers_->GetWorker(t.name);
    if (w == nullptr) continue;
    threads.emplace_back([this, w] {
      DeleteWorkerSessionRequest req;
      req.set_session_handle(handle_);
      DeleteWorkerSessionResponse resp;
      w->DeleteWorkerSession(req, &resp).IgnoreError();
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace overseer

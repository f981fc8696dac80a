#include "master/master_session.h"

#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/blocking_counter.h"
#include "core/cluster/device_name.h"
#include "core/graph/feed_check.h"
#include "core/graph/prune.h"
#include "core/logging.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"
#include "core/types.h"
#include "master/master_interface.h"
#include "master/partitioner.h"
#include "master/placer.h"

namespace overseer {
namespace {

std::string SignatureKey(const std::vector<std::string>& feeds,
                         const std::vector<std::string>& fetches,
                         const std::vector<std::string>& targets) {
  return absl::StrCat(absl::StrJoin(feeds, ","), ";", absl::StrJoin(fetches, ","), ";",
                      absl::StrJoin(targets, ","));
}

// A client may run `step` itself when it is one partition on one task that depends on no
// other task, writes no variable (so that it never needs the update gate) and has no
// kernel that may wait (a step that blocks must end when its session is aborted, which
// only the master knows): the RunGraph the master would send, as a DirectStep without
// step ids, with the task's incarnation from `tasks`. Null otherwise, and for a task
// without an address in `cluster`.
std::shared_ptr<const DirectStep> DirectStepOf(const RegisteredStep& step,
                                               const std::vector<FeedCheck>& feed_checks,
                                               const GatePass& gate, const ClusterDef& cluster,
                                               const std::vector<SessionTask>& tasks) {
  if (step.graph_handles.size() != 1 || !step.peer_senders.empty() || !step.forwarders.empty() ||
      !step.may_wait.empty() || !gate.free()) {
    return nullptr;
  }
  const auto& [task, graph_handle] = *step.graph_handles.begin();
  absl::StatusOr<DeviceName> name = DeviceName::Parse(task);
  if (!name.ok() || !name->has_task) return nullptr;
  auto direct = std::make_shared<DirectStep>();
  for (const JobDef& job : cluster.job()) {
    if (job.name() != name->job) continue;
    auto it = job.tasks().find(name->task);
    if (it != job.tasks().end()) direct->set_address(it->second);
  }
  if (direct->address().empty()) return nullptr;
  for (const SessionTask& t : tasks) {
    if (t.name == task) direct->set_incarnation(t.incarnation);
  }
  direct->set_task(task);
  direct->set_graph_handle(graph_handle);
  for (size_t i = 0; i < step.feeds.size(); ++i) {
    const FeedCheck& check = feed_checks[i];
    DirectFeed* feed = direct->add_feed();
    feed->set_key(step.feeds[i].key);
    feed->set_name(check.name);
    feed->set_dtype(check.dtype);
    feed->set_placeholder(check.placeholder);
    if (check.placeholder) check.shape.ToProto(feed->mutable_shape());
  }
  for (const PartitionEndpoint& fetch : step.fetches) direct->add_fetch_key(fetch.key);
  return direct;
}

// Errors after which CheckTasks asks the tasks whether one restarted.
bool MayHaveRestarted(const absl::Status& error) {
  return error.code() == absl::StatusCode::kAborted ||
         error.code() == absl::StatusCode::kUnavailable;
}

}  // namespace

MasterSession::MasterSession(std::string handle, ConfigProto config, std::vector<SessionTask> tasks,
                             std::string client_task, MasterWorkerCacheInterface* workers,
                             std::atomic<int64_t>* next_step_id, int64_t max_message_tensor_bytes,
                             UpdateGate* gate)
    : handle_(std::move(handle)),
      config_(std::move(config)),
      tasks_(std::move(tasks)),
      client_task_(std::move(client_task)),
      workers_(workers),
      next_step_id_(next_step_id),
      max_message_tensor_bytes_(max_message_tensor_bytes),
      gate_(gate),
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

int64_t MasterSession::graph_bytes() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(graph_def_.ByteSizeLong());
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
    const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
    bool partial) {
  auto sig = std::make_shared<Signature>();
  if (partial) RETURN_IF_ERROR(CheckPartialRunFetches(fetches));
  ASSIGN_OR_RETURN(PrunedGraph pruned, PruneGraph(*graph.graph, feeds, fetches, targets));
  if (partial) sig->fetch_needs = FeedsNeededByFetches(pruned);
  const Graph& step = *pruned.graph;
  ASSIGN_OR_RETURN(sig->feed_checks, MakeFeedChecks(*graph.graph, feeds, step));
  ASSIGN_OR_RETURN(std::vector<std::string> devices,
                   PlaceGraph(step, devices_, default_device_, config_.allow_soft_placement()));
  if (config_.log_device_placement()) {
    for (int id = 0; id < step.num_nodes(); ++id) {
      LOG(INFO) << "session " << handle_ << ": " << step.node(id).name() << ": ("
                << step.node(id).def->op() << "): " << devices[id];
    }
  }
  sig->gate = StepGatePass(step, devices);
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
  // Tasks that send to others keep their step state until a cleanup; those that also
  // receive from none forward what they send (RegisteredStep::forwarders).
  std::set<std::string> receivers;
  for (const PeerEdge& e : parts.peer_edges) {
    sig->step.peer_senders.insert(e.from_task);
    receivers.insert(e.to_task);
  }
  for (const PeerEdge& e : parts.peer_edges) {
    if (!partial && receivers.count(e.from_task) == 0) {
      sig->step.forwarders[e.from_task][e.key] = e.to_task;
    }
  }
  for (auto& [task, def] : parts.partitions) {
    if (partial) {
      // A partial run's feeds arrive while the step runs: their _Recv nodes may wait
      // (OpKernel::MayWait) and must not hold up their thread.
      for (NodeDef& node : *def.mutable_node()) {
        if (node.op() == kRecvOp && GetNodeAttrOr(node, "client_terminated", false)) {
          SetNodeAttr(&node, "client_terminated", false);
        }
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
    if (resp.may_wait()) sig->step.may_wait.insert(task);
  }
  if (!partial) {
    sig->direct =
        DirectStepOf(sig->step, sig->feed_checks, sig->gate, workers_->cluster_def(), tasks_);
  }
  return sig;
}

absl::StatusOr<std::shared_ptr<const MasterSession::Signature>> MasterSession::GetSignature(
    const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets, bool partial) {
  const std::string key = (partial ? "\x01partial;" : "") + SignatureKey(feeds, fetches, targets);
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
  absl::StatusOr<std::shared_ptr<Signature>> sig =
      BuildSignature(*graph, feeds, fetches, targets, partial);
  if (!sig.ok()) return CheckTasks(sig.status());
  absl::MutexLock lock(&mu_);
  signatures_[key] = *sig;
  return std::shared_ptr<const Signature>(*sig);
}

void MasterSession::WithSignature(std::vector<std::string> feeds, std::vector<std::string> fetches,
                                  std::vector<std::string> targets, SignatureCallback then) {
  absl::Status usable;
  std::shared_ptr<const Signature> cached;
  {
    absl::ReaderMutexLock lock(&mu_);
    usable = Usable();
    auto it = signatures_.find(SignatureKey(feeds, fetches, targets));
    if (it != signatures_.end()) cached = it->second;
  }
  if (!usable.ok()) {
    then(usable);
    return;
  }
  if (cached != nullptr) {
    then(std::move(cached));
    return;
  }
  // Pruning, placing, partitioning and registering block: not on the caller's thread.
  StepBlockingThreads()->Schedule(
      [this, feeds = std::move(feeds), fetches = std::move(fetches), targets = std::move(targets),
       then = std::move(then)] { then(GetSignature(feeds, fetches, targets)); });
}

void MasterSession::RunSignatureAsync(std::shared_ptr<const Signature> sig,
                                      std::shared_ptr<PendingStep> step, const RunOptions& options,
                                      RunMetadata* metadata, CancellationManager* cancellation,
                                      std::function<void(absl::Status)> done) {
  if (gate_ == nullptr || sig->gate.free()) {
    RunPassedAsync(std::move(sig), std::move(step), options, metadata, cancellation,
                   std::move(done));
    return;
  }
  UpdateGate* gate = gate_;
  std::shared_ptr<const std::vector<std::string>> keys = sig->gate.keys;
  if (sig->gate.snapshot) {
    // Waiting for the steps in flight blocks: not on the caller's thread.
    StepBlockingThreads()->Schedule([this, sig = std::move(sig), step = std::move(step), options,
                                     metadata, cancellation, done = std::move(done), gate,
                                     keys]() mutable {
      absl::Status entered = gate->EnterSnapshot(keys);
      if (!entered.ok()) {
        done(std::move(entered));
        return;
      }
      RunPassedAsync(std::move(sig), std::move(step), options, metadata, cancellation,
                     [gate, done = std::move(done)](absl::Status s) {
                       gate->ExitSnapshot();
                       done(std::move(s));
                     });
    });
    return;
  }
  gate->EnterWriter(keys, [this, sig = std::move(sig), step = std::move(step), options, metadata,
                           cancellation, done = std::move(done), gate, keys]() mutable {
    RunPassedAsync(std::move(sig), std::move(step), options, metadata, cancellation,
                   [gate, keys, done = std::move(done)](absl::Status s) {
                     gate->ExitWriter(keys);
                     done(std::move(s));
                   });
  });
}

void MasterSession::RunPassedAsync(std::shared_ptr<const Signature> sig,
                                   std::shared_ptr<PendingStep> step, const RunOptions& options,
                                   RunMetadata* metadata, CancellationManager* cancellation,
                                   std::function<void(absl::Status)> done) {
  absl::Status feeds_ok = CheckFeeds(sig->feed_checks, step->feeds);
  if (!feeds_ok.ok()) {
    done(std::move(feeds_ok));
    return;
  }
  StepArgs args;
  args.session_handle = handle_;
  args.step_id = next_step_id_->fetch_add(1);
  args.feeds = step->feeds;
  args.timeout_in_ms =
      options.timeout_in_ms() > 0 ? options.timeout_in_ms() : config_.operation_timeout_in_ms();
  args.trace = options.trace_level() != RunOptions::NO_TRACE && metadata != nullptr;
  args.trace_outputs = options.trace_level() == RunOptions::FULL_TRACE;
  args.partition_graphs = options.output_partition_graphs() && metadata != nullptr;
  args.session_cancellation = &ending_;
  {
    absl::ReaderMutexLock lock(&mu_);
    step->cleaner = cleaner_;
  }
  const RegisteredStep& registered = sig->step;
  RunRegisteredStepAsync(
      workers_, registered, args, &step->fetches, metadata, step->cleaner.get(), cancellation,
      [this, sig = std::move(sig), step, done = std::move(done)](absl::Status s) {
        // The last holder of a closed session's cleaner sends what it queued as it goes
        // (blocking): not on this thread.
        if (step->cleaner.use_count() == 1) {
          StepBlockingThreads()->Schedule([cleaner = std::move(step->cleaner)] {});
        }
        step->cleaner.reset();
        if (!s.ok()) {
          // Ended by the session's abort or close (or failed after it): that is the cause.
          if (absl::Status ended = Ended(); !ended.ok()) {
            done(std::move(ended));
            return;
          }
          if (!MayHaveRestarted(s)) {
            done(s);
            return;
          }
          // Asking the tasks for their incarnations blocks.
          StepBlockingThreads()->Schedule([this, s, done] { done(CheckTasks(s)); });
          return;
        }
        // Each task's fetches fit in its RunGraph reply; all of them must fit in this one.
        MessageBudget budget(max_message_tensor_bytes_);
        for (const TensorProto& t : step->fetches) budget.Add(EncodedTensorBytes(t));
        if (budget.fits()) {
          done(absl::OkStatus());
          return;
        }
        done(budget.Error(
            "the step's reply (its fetches from every task)",
            "fetch smaller tensors: slice or reduce them in the graph, or fetch them in "
            "separate steps",
            [&](size_t i) {
              return absl::StrCat("fetch '",
                                  i < step->fetch_names.size() ? step->fetch_names[i] : "?", "'");
            }));
      });
}

absl::Status MasterSession::CheckTasks(const absl::Status& error) {
  if (!MayHaveRestarted(error)) return error;
  // Every restarted task is named (one restarted earlier may not be the one that
  // failed this step), with the step's own error, which names the task it came from.
  std::vector<std::string> restarted;
  std::vector<WorkerInterface*> still_up;
  for (const SessionTask& t : tasks_) {
    WorkerInterface* w = workers_->GetWorker(t.name);
    GetStatusResponse resp;
    if (w == nullptr || !w->GetStatus(GetStatusRequest(), &resp).ok()) continue;
    if (resp.incarnation() != t.incarnation) {
      restarted.push_back(absl::StrCat(t.name, " (incarnation ", absl::Hex(t.incarnation), " -> ",
                                       absl::Hex(resp.incarnation()), ")"));
    } else {
      still_up.push_back(w);
    }
  }
  if (restarted.empty()) return error;
  absl::Status aborted;
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    if (aborted_.ok()) {
      aborted_ = absl::AbortedError(
          absl::StrCat(restarted.size() == 1 ? "task " : "tasks ", absl::StrJoin(restarted, ", "),
                       restarted.size() == 1 ? " restarted and lost its state"
                                             : " restarted and lost their state",
                       "; recreate the session (the step failed with: ", error.ToString(), ")"));
      first = true;
    }
    aborted = aborted_;
  }
  // The session's other steps end too: one waiting on a task that is still up (a
  // dequeue from a queue whose enqueuer's step just failed) would wait for good, as no
  // step of this session can run again to close its queue.
  if (first) {
    ending_.StartCancel(aborted);
    // The tasks still up forget the session: a client's direct step there (whose route
    // lasts up to kDirectValidMs) ends with ABORTED at once, as a step through here does.
    DeleteWorkerSessions(still_up);
  }
  return aborted;
}

void MasterSession::DeleteWorkerSessions(const std::vector<WorkerInterface*>& workers) {
  // In parallel, so that a dead task costs one deadline, not one per task.
  std::vector<std::thread> threads;
  for (WorkerInterface* w : workers) {
    threads.emplace_back([this, w] {
      DeleteWorkerSessionRequest req;
      req.set_session_handle(handle_);
      DeleteWorkerSessionResponse resp;
      w->DeleteWorkerSession(req, &resp).IgnoreError();
    });
  }
  for (auto& t : threads) t.join();
}

absl::Status MasterSession::Ended() const {
  {
    absl::ReaderMutexLock lock(&mu_);
    if (!aborted_.ok()) return aborted_;
  }
  return ending_.status();
}

void MasterSession::RunAsync(const RunStepRequest* request, RunStepResponse* response,
                             CancellationManager* cancellation,
                             std::function<void(absl::Status)> done) {
  if (!request->partial_run_handle().empty()) {
    // A partial run's call waits for its fetches' producers, which may wait for feeds.
    StepBlockingThreads()->Schedule([this, request, response, cancellation, done] {
      done(RunPartial(*request, response, cancellation));
    });
    return;
  }
  auto step = std::make_shared<PendingStep>();
  step->fetch_names.assign(request->fetch().begin(), request->fetch().end());
  std::vector<std::string> feeds, targets(request->target().begin(), request->target().end());
  for (const NamedTensorProto& f : request->feed()) {
    feeds.push_back(f.name());
    step->feeds.push_back(&f.tensor());
  }
  std::vector<std::string> fetches = step->fetch_names;
  WithSignature(std::move(feeds), std::move(fetches), std::move(targets),
                [this, request, response, cancellation, step,
                 done = std::move(done)](absl::StatusOr<std::shared_ptr<const Signature>> sig) {
                  if (!sig.ok()) {
                    done(sig.status());
                    return;
                  }
                  std::shared_ptr<const DirectStep> direct;
                  if (request->direct_ok() && DirectStepOptions(request->options())) {
                    direct = (*sig)->direct;
                  }
                  RunSignatureAsync(
                      std::move(*sig), step, request->options(), response->mutable_metadata(),
                      cancellation,
                      [this, response, step, direct = std::move(direct), done](absl::Status s) {
                        if (!s.ok()) {
                          done(s);
                          return;
                        }
                        for (size_t i = 0; i < step->fetches.size(); ++i) {
                          NamedTensorProto* t = response->add_tensor();
                          t->set_name(step->fetch_names[i]);
                          t->mutable_tensor()->Swap(&step->fetches[i]);
                        }
                        if (direct != nullptr) {
                          DirectStep* reply = response->mutable_direct();
                          *reply = *direct;
                          reply->set_first_step_id(next_step_id_->fetch_add(kDirectStepIds));
                          reply->set_step_ids(kDirectStepIds);
                          reply->set_valid_ms(kDirectValidMs);
                        }
                        done(s);
                      });
                });
}

absl::StatusOr<std::string> MasterSession::PartialRunSetup(
    const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  ASSIGN_OR_RETURN(auto sig, GetSignature(feeds, fetches, targets, /*partial=*/true));
  auto run =
      std::make_shared<PartialRun>(std::move(sig), next_step_id_->fetch_add(1), feeds, fetches);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Usable());
  std::string handle = absl::StrCat(next_partial_run_++);
  partial_runs_.emplace(handle, std::move(run));
  return handle;
}

absl::Status MasterSession::RunPartial(const RunStepRequest& request, RunStepResponse* response,
                                       CancellationManager* cancellation) {
  const std::string& handle = request.partial_run_handle();
  if (request.target_size() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partial run '", handle, "': targets are given to PartialRunSetup, not to its calls"));
  }
  std::shared_ptr<PartialRun> run;
  {
    absl::ReaderMutexLock lock(&mu_);
    RETURN_IF_ERROR(Usable());
    auto it = partial_runs_.find(handle);
    if (it == partial_runs_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "no partial run with handle '", handle, "' in session ", handle_,
          ": call PartialRunSetup first (a partial run ends with its last feed and fetch, or "
          "its first error)"));
    }
    run = it->second;
  }
  std::vector<std::string> feed_names, fetch_names(request.fetch().begin(), request.fetch().end());
  std::vector<const TensorProto*> values;
  for (const NamedTensorProto& f : request.feed()) {
    feed_names.push_back(f.name());
    values.push_back(&f.tensor());
  }
  const Signature& sig = *run->sig;
  PartialRunTracker::Call call;
  {
    absl::MutexLock lock(&run->mu);
    // The values are checked before anything is recorded, so a bad one loses nothing.
    PartialRunTracker trial = run->tracker;
    ASSIGN_OR_RETURN(call, trial.Take(feed_names, fetch_names));
    for (size_t k = 0; k < values.size(); ++k) {
      RETURN_IF_ERROR(CheckFeeds(absl::MakeConstSpan(&sig.feed_checks[call.feeds[k]], 1),
                                 absl::MakeConstSpan(&values[k], 1)));
    }
    run->tracker = std::move(trial);
  }

  // Every task of the step gets a RunGraph: the first starts its partition.
  const RegisteredStep& step = sig.step;
  struct TaskCall {
    std::string task;
    RunGraphRequest request;
    RunGraphResponse response;
    absl::Status status;
  };
  std::vector<TaskCall> calls(step.graph_handles.size());
  std::map<std::string, TaskCall*> by_task;
  size_t n = 0;
  for (const auto& [task, graph_handle] : step.graph_handles) {
    TaskCall& c = calls[n++];
    c.task = task;
    c.request.set_session_handle(handle_);
    c.request.set_graph_handle(graph_handle);
    c.request.set_step_id(run->step_id);
    c.request.set_timeout_in_ms(config_.operation_timeout_in_ms());
    c.request.set_is_partial(true);
    c.request.set_is_last_partial_run(call.last);
    c.request.set_cleanup_on_return(call.last && step.peer_senders.count(task) == 0);
    by_task[task] = &c;
  }
  for (size_t k = 0; k < call.feeds.size(); ++k) {
    const PartitionEndpoint& e = step.feeds[call.feeds[k]];
    NamedTensorProto* send = by_task[e.task]->request.add_send();
    send->set_name(e.key);
    *send->mutable_tensor() = *values[k];
  }
  for (int i : call.fetches) {
    const PartitionEndpoint& e = step.fetches[i];
    by_task[e.task]->request.add_recv_key(e.key);
  }
  absl::BlockingCounter pending(static_cast<int>(calls.size()));
  for (TaskCall& c : calls) {
    WorkerInterface* w = workers_->GetWorker(c.task);
    if (w == nullptr) {
      c.status = absl::UnavailableError(absl::StrCat("no task ", c.task));
      pending.DecrementCount();
      continue;
    }
    w->RunGraphAsync(&c.request, &c.response, cancellation, [&c, &pending](absl::Status s) {
      c.status = std::move(s);
      pending.DecrementCount();
    });
  }
  pending.Wait();

  // The first error that is not the cancellation another task's error caused.
  absl::Status error;
  for (const TaskCall& c : calls) {
    if (c.status.ok() || (!error.ok() && absl::IsCancelled(c.status))) continue;
    if (error.ok() || absl::IsCancelled(error)) error = TaskError(c.task, c.status);
  }
  if (!error.ok() || call.last) {
    absl::MutexLock lock(&mu_);
    partial_runs_.erase(handle);
  }
  if (!error.ok()) {
    // Ends the step on every task (a partition blocked on a feed that will not come).
    for (const TaskCall& c : calls) {
      WorkerInterface* w = workers_->GetWorker(c.task);
      CleanupGraphRequest req;
      req.set_step_id(run->step_id);
      CleanupGraphResponse resp;
      if (w != nullptr) w->CleanupGraph(req, &resp).IgnoreError();
    }
    return CheckTasks(error);
  }
  if (call.last) {
    std::vector<std::string> senders(step.peer_senders.begin(), step.peer_senders.end());
    std::shared_ptr<StepCleaner> cleaner;
    {
      absl::ReaderMutexLock lock(&mu_);
      cleaner = cleaner_;
    }
    if (!senders.empty() && cleaner != nullptr) cleaner->Enqueue(std::move(senders), run->step_id);
  }
  MessageBudget budget(max_message_tensor_bytes_);
  for (size_t k = 0; k < call.fetches.size(); ++k) {
    const PartitionEndpoint& e = step.fetches[call.fetches[k]];
    const RunGraphResponse& from = by_task[e.task]->response;
    const NamedTensorProto* found = nullptr;
    for (const NamedTensorProto& t : from.recv()) {
      if (t.name() == e.key) found = &t;
    }
    if (found == nullptr) {
      return absl::InternalError(
          absl::StrCat("task ", e.task, " did not return fetch '", fetch_names[k], "'"));
    }
    budget.Add(EncodedTensorBytes(found->tensor()));
    NamedTensorProto* out = response->add_tensor();
    out->set_name(fetch_names[k]);
    *out->mutable_tensor() = found->tensor();
  }
  if (!budget.fits()) {
    response->clear_tensor();
    return budget.Error("the partial run's reply (its fetches from every task)",
                        "fetch smaller tensors, or fewer in each call",
                        [&](size_t i) { return absl::StrCat("fetch '", fetch_names[i], "'"); });
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

void MasterSession::RunCallableAsync(const RunCallableRequest* request,
                                     RunCallableResponse* response,
                                     CancellationManager* cancellation,
                                     std::function<void(absl::Status)> done) {
  Callable callable;
  absl::Status usable;
  {
    absl::ReaderMutexLock lock(&mu_);
    usable = Usable();
    auto it = callables_.find(request->handle());
    if (usable.ok() && it == callables_.end()) {
      usable = absl::InvalidArgumentError(absl::StrCat("no callable with handle ",
                                                       request->handle(), " in session ", handle_,
                                                       " (released or never made)"));
    }
    if (usable.ok()) callable = it->second;
  }
  if (!usable.ok()) {
    done(usable);
    return;
  }
  const size_t num_feeds = callable.signature->feed_checks.size();
  if (static_cast<size_t>(request->feed_size()) != num_feeds) {
    done(absl::InvalidArgumentError(absl::StrCat("callable ", request->handle(), " takes ",
                                                 num_feeds, " feeds, got ", request->feed_size())));
    return;
  }
  auto step = std::make_shared<PendingStep>();
  step->fetch_names = std::move(callable.fetches);
  step->feeds.reserve(num_feeds);
  for (const TensorProto& t : request->feed()) step->feeds.push_back(&t);
  RunSignatureAsync(std::move(callable.signature), step, callable.run_options,
                    response->mutable_metadata(), cancellation,
                    [response, step, done = std::move(done)](absl::Status s) {
                      if (s.ok()) {
                        for (TensorProto& t : step->fetches) response->add_fetch()->Swap(&t);
                      }
                      done(s);
                    });
}

absl::Status MasterSession::ReleaseCallable(int64_t handle) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Usable());
  if (handle <= 0 || handle >= next_callable_) {
    return absl::InvalidArgumentError(
        absl::StrCat("no callable with handle ", handle, " was made in session ", handle_));
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
    // Their steps end on the tasks with the worker sessions deleted below.
    partial_runs_.clear();
    cleaner = std::move(cleaner_);
  }
  // Its steps still running end, as TensorFlow's MasterSession::Close cancels them: one
  // waiting on a task (a dequeue from an empty queue) would otherwise outlive the
  // session, and its caller wait until its timeout.
  ending_.StartCancel(
      absl::CancelledError(absl::StrCat("session ", handle_, " was closed while the step ran")));
  // Sends what is queued (unless a running step still holds the cleaner).
  cleaner.reset();
  // Deleting a worker session also forgets its registered graphs.
  std::vector<WorkerInterface*> workers;
  for (const SessionTask& t : tasks_) {
    if (WorkerInterface* w = workers_->GetWorker(t.name)) workers.push_back(w);
  }
  DeleteWorkerSessions(workers);
}

}  // namespace overseer

#include "client/training/supervisor.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/graph/variables.h"
#include "client/summary/summary_ops.h"
#include "client/training/looper_thread.h"
#include "client/training/queue_runner.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"

namespace overseer {
namespace {

// The default global step: the graph's global-step variable, else an int node called
// "global_step" (TensorFlow reads the tensor "global_step:0"). Null when there is none.
Output DefaultGlobalStep(const ClientGraph& graph) {
  absl::StatusOr<Variable> step = GetGlobalStep(graph);
  if (step.ok()) return step->value;
  absl::StatusOr<Variable> named = LookupVariable(graph, "global_step");
  if (named.ok()) return named->value;
  Node* node = graph.FindNode("global_step");
  if (node != nullptr && node->num_outputs() > 0) return Output(node, 0);
  return Output();
}

// "global_step" for the tensor "global_step/read:0" of the variable global_step.
std::string CounterName(const Output& step) {
  std::string name = step.node()->name();
  if (absl::EndsWith(name, "/read")) name.resize(name.size() - 5);
  return name;
}

absl::Status CheckGraph(const ClientGraph* graph, Node* node, const char* what) {
  if (node == nullptr || node->graph() == graph) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " '", node->name(), "' belongs to a different graph than the supervisor's scope"));
}

}  // namespace

// ---- Supervisor ----

absl::StatusOr<std::unique_ptr<Supervisor>> Supervisor::Create(const Scope& scope,
                                                               SupervisorOptions options) {
  if (options.clock == nullptr) return absl::InvalidArgumentError("the clock is null");
  std::unique_ptr<Supervisor> sv(new Supervisor(scope, std::move(options)));
  RETURN_IF_ERROR(sv->ResolveDefaults());
  return sv;
}

Supervisor::Supervisor(const Scope& scope, SupervisorOptions options)
    : scope_(scope),
      options_(std::move(options)),
      coord_(CoordinatorOptions{{absl::StatusCode::kOutOfRange}, options_.clock}) {}

Supervisor::~Supervisor() {
  if (coord_.joined()) return;  // Stopped already.
  coord_.RequestStop().IgnoreError();
  absl::Status s = coord_.Join({}, options_.stop_grace_secs, /*ignore_live_threads=*/true);
  if (!s.ok()) LOG(WARNING) << "Supervisor threads ended with an error: " << s;
}

absl::Status Supervisor::ResolveDefaults() {
  ClientGraph* graph = scope_.graph();
  const SupervisorOptions& o = options_;
  for (const auto* op : {&o.ready_op, &o.ready_for_local_init_op, &o.summary_op, &o.global_step}) {
    if (op->has_value()) RETURN_IF_ERROR(CheckGraph(graph, (*op)->node(), "op"));
  }
  for (const auto* op : {&o.init_op, &o.local_init_op}) {
    if (op->has_value()) RETURN_IF_ERROR(CheckGraph(graph, (*op)->node(), "op"));
  }
  // Defaults as TensorFlow's Supervisor: the graph's collection (the model, a Scaffold
  // or an earlier Supervisor put it there), else the standard op, which then joins the
  // collection (as TensorFlow's Supervisor adds it).
  auto from_collection = [&](const char* key) -> std::optional<std::string> {
    std::vector<std::string> items = graph->GetCollection(key);
    if (items.empty()) return std::nullopt;
    return items[0];
  };
  auto output = [&](const std::optional<Output>& given, const char* key,
                    const std::function<Output()>& make) -> absl::StatusOr<Output> {
    if (given.has_value()) return *given;
    if (std::optional<std::string> name = from_collection(key)) return graph->FindOutput(*name);
    Output made = make();
    if (made.valid()) graph->AddToCollection(key, made.name());
    return made;
  };
  auto operation = [&](const std::optional<Operation>& given, const char* key,
                       const std::function<Operation()>& make) -> absl::StatusOr<Operation> {
    if (given.has_value()) return *given;
    if (std::optional<std::string> name = from_collection(key)) {
      Node* node = graph->FindNode(*name);
      if (node == nullptr) {
        return absl::NotFoundError(absl::StrCat("the collection \"", key, "\" names node '", *name,
                                                "', which is not in the graph"));
      }
      return Operation(node);
    }
    Operation made = make();
    if (made.valid()) graph->AddToCollection(key, made.name());
    return made;
  };
  ASSIGN_OR_RETURN(ready_op_, output(o.ready_op, GraphKeys::kReadyOp,
                                     [&] { return ReportUninitializedVariables(scope_); }));
  ASSIGN_OR_RETURN(ready_for_local_init_op_,
                   output(o.ready_for_local_init_op, GraphKeys::kReadyForLocalInitOp, [&] {
                     return ReportUninitializedVariables(scope_, GlobalVariables(*graph));
                   }));
  ASSIGN_OR_RETURN(init_op_, operation(o.init_op, GraphKeys::kInitOp,
                                       [&] { return GlobalVariablesInitializer(scope_); }));
  ASSIGN_OR_RETURN(local_init_op_, operation(o.local_init_op, GraphKeys::kLocalInitOp, [&] {
                     return LocalVariablesInitializer(scope_.WithOpName("local_init"));
                   }));
  if (o.saver.has_value()) {
    saver_ = *o.saver;
  } else if (!GlobalVariables(*graph).empty()) {
    ASSIGN_OR_RETURN(owned_saver_, Saver::Create(scope_, SaverOptions()));
    saver_ = owned_saver_.get();
  }
  ASSIGN_OR_RETURN(summary_op_, output(o.summary_op, GraphKeys::kSummaryOp,
                                       [&] { return ops::MergeAllSummaries(scope_); }));
  global_step_ = o.global_step.has_value() ? *o.global_step : DefaultGlobalStep(*graph);
  RETURN_IF_ERROR(scope_.status());
  if (global_step_.valid()) {
    const DataType dtype = global_step_.dtype();
    if (dtype != DT_INT32 && dtype != DT_INT64) {
      return absl::InvalidArgumentError(absl::StrCat("global_step '", global_step_.name(),
                                                     "' must be an int32 or int64 scalar, not ",
                                                     DataTypeString(dtype)));
    }
  }

  if (!o.is_chief) {
    // Replicas share variables through the ps tasks: each must say where it lives.
    for (const VariableRecord& v : graph->VariableRecords()) {
      Node* node = graph->FindNode(v.var_node);
      if (node != nullptr && node->def().device().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "When using replicas, all Variables must have their device set: ", v.var_node));
      }
    }
  } else {
    checkpoint_dir_ = o.checkpoint_dir.empty() ? o.logdir : o.checkpoint_dir;
    summary_dir_ = o.summary_dir.empty() ? o.logdir : o.summary_dir;
    if (!checkpoint_dir_.empty()) {
      save_path_ = absl::StrCat(checkpoint_dir_, "/", o.checkpoint_basename);
    }
    absl::MutexLock lock(&writer_mu_);
    if (o.summary_writer.has_value()) {
      writer_ = *o.summary_writer;
    } else if (!summary_dir_.empty()) {
      SummaryWriterOptions writer_options;
      writer_options.clock = o.clock;
      ASSIGN_OR_RETURN(owned_writer_, SummaryWriter::Create(summary_dir_, writer_options));
      writer_ = owned_writer_.get();
    }
  }

  if (o.session_manager != nullptr) {
    session_manager_ = o.session_manager;
  } else {
    SessionManagerOptions manager;
    manager.local_init_op = local_init_op_;
    manager.ready_op = ready_op_;
    manager.ready_for_local_init_op = ready_for_local_init_op_;
    manager.recovery_wait = o.recovery_wait_secs;
    manager.session_options = o.session_options;
    manager.clock = o.clock;
    manager.readiness_channel = o.readiness_channel;
    ASSIGN_OR_RETURN(owned_session_manager_, SessionManager::Create(scope_, manager));
    session_manager_ = owned_session_manager_.get();
  }
  return absl::OkStatus();
}

SummaryWriter* Supervisor::summary_writer() const {
  absl::MutexLock lock(&writer_mu_);
  return writer_;
}

absl::Status Supervisor::ReopenSummaryWriter() {
  absl::MutexLock lock(&writer_mu_);
  if (owned_writer_ == nullptr || writer_ != nullptr) return absl::OkStatus();
  SummaryWriterOptions writer_options;
  writer_options.clock = options_.clock;
  ASSIGN_OR_RETURN(owned_writer_, SummaryWriter::Create(summary_dir_, writer_options));
  writer_ = owned_writer_.get();
  return absl::OkStatus();
}

absl::Status Supervisor::WriteGraph() {
  absl::MutexLock lock(&writer_mu_);
  if (writer_ == nullptr || graph_added_) return absl::OkStatus();
  GraphDef graph;
  RETURN_IF_ERROR(scope_.ToGraphDef(&graph));
  RETURN_IF_ERROR(writer_->AddGraph(graph));
  graph_added_ = true;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Supervisor::GlobalStepValue(ClientSession& session) const {
  if (!global_step_.valid()) {
    return absl::FailedPreconditionError("the supervisor has no global_step");
  }
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session.Run({global_step_}, &out));
  return StepValue(out[0]);
}

absl::StatusOr<std::unique_ptr<ClientSession>> Supervisor::PrepareOrWaitForSession(
    const std::string& master, const PrepareOrWaitOptions& options) {
  // A supervisor may create a session again after Stop: its threads may run again.
  coord_.ClearStop();
  std::unique_ptr<ClientSession> session;
  if (options_.is_chief) {
    RETURN_IF_ERROR(ReopenSummaryWriter());
    PrepareSessionOptions prepare;
    prepare.saver = saver_;
    prepare.checkpoint_dir = checkpoint_dir_;
    prepare.wait_for_checkpoint = options.wait_for_checkpoint;
    prepare.max_wait = options.max_wait;
    prepare.config = options.config;
    prepare.init_op = init_op_;
    prepare.init_feeds = options_.init_feeds;
    prepare.init_fn = options_.init_fn;
    ASSIGN_OR_RETURN(session, session_manager_->PrepareSession(master, prepare));
    RETURN_IF_ERROR(WriteGraph());
    if (options.start_standard_services) {
      LOG(INFO) << "Starting standard services.";
      RETURN_IF_ERROR(StartStandardServices(session.get()).status());
    }
  } else {
    ASSIGN_OR_RETURN(session,
                     session_manager_->WaitForSession(master, options.max_wait, options.config));
  }
  if (options.start_standard_services) {
    absl::Status started = StartQueueRunners(session.get()).status();
    if (!started.ok()) {
      // Nothing may keep using the session once it is dropped.
      coord_.RequestStop(started).IgnoreError();
      coord_.Join({}, options_.stop_grace_secs, /*ignore_live_threads=*/true).IgnoreError();
      return started;
    }
  }
  return session;
}

absl::StatusOr<std::unique_ptr<ManagedSession>> Supervisor::ManagedSession(
    const std::string& master, const ManagedSessionOptions& options) {
  PrepareOrWaitOptions prepare;
  prepare.config = options.config;
  prepare.start_standard_services = options.start_standard_services;
  absl::StatusOr<std::unique_ptr<ClientSession>> session = PrepareOrWaitForSession(master, prepare);
  if (!session.ok()) {
    RequestStop(session.status()).IgnoreError();
    Stop({}, options.close_summary_writer).IgnoreError();
    return session.status();
  }
  return std::unique_ptr<overseer::ManagedSession>(
      new overseer::ManagedSession(this, std::move(*session), options.close_summary_writer));
}

void Supervisor::ServiceRan(SupervisorService service, const absl::Status& status) const {
  if (options_.after_service_run) options_.after_service_run(service, status);
}

absl::Status Supervisor::SaveCheckpoint(ClientSession* session) {
  absl::MutexLock lock(&saver_mu_);
  RETURN_IF_ERROR(session->ExtendIfNeeded());
  LOG(INFO) << "Saving checkpoint to path " << save_path_;
  int64_t step = -1;
  std::string path;
  if (global_step_.valid() && saver_->consistent()) {
    // Named by the step its snapshot holds.
    ASSIGN_OR_RETURN(path, saver_->Save(session->session(), save_path_, global_step_,
                                        /*write_meta_graph=*/true, &step));
  } else {
    if (global_step_.valid()) {
      ASSIGN_OR_RETURN(step, GlobalStepValue(*session));
    }
    ASSIGN_OR_RETURN(path, saver_->Save(session->session(), save_path_, step));
  }
  absl::MutexLock writer_lock(&writer_mu_);
  if (writer_ != nullptr && global_step_.valid()) {
    RETURN_IF_ERROR(writer_->AddSessionLog(SessionLog::CHECKPOINT, step, path));
  }
  return absl::OkStatus();
}

absl::Status Supervisor::ComputeSummaries(ClientSession* session) {
  std::vector<Output> fetches = {summary_op_};
  if (global_step_.valid()) fetches.push_back(global_step_);
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run(fetches, &out));
  int64_t step = 0;
  if (global_step_.valid()) {
    step = out[1].dtype() == DT_INT32 ? out[1].flat<int32_t>()(0) : out[1].flat<int64_t>()(0);
  }
  absl::MutexLock lock(&writer_mu_);
  if (writer_ == nullptr) return absl::OkStatus();
  return writer_->AddSummary(out[0].flat<std::string>()(0), step);
}

absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> Supervisor::StartStandardServices(
    ClientSession* session) {
  if (!options_.is_chief) {
    return absl::FailedPreconditionError(
        "Only chief supervisor can start standard services. Because only chief supervisors "
        "can write events.");
  }
  std::vector<std::shared_ptr<ManagedThread>> threads;
  if (checkpoint_dir_.empty() && summary_dir_.empty()) {
    LOG(WARNING) << "Standard services need a logdir, checkpoint_dir or summary_dir";
    return threads;
  }
  const bool has_writer = summary_writer() != nullptr;
  const absl::Duration summaries = options_.save_summaries_secs;
  const absl::Duration checkpoints = options_.save_model_secs;
  const bool run_summaries = has_writer && summaries > absl::ZeroDuration() && summary_op_.valid();
  const bool count_steps = has_writer && summaries > absl::ZeroDuration() && global_step_.valid();
  const bool save_checkpoints =
      saver_ != nullptr && !save_path_.empty() && checkpoints > absl::ZeroDuration();

  // The first run of each service happens here, so that its errors are returned and
  // nothing is left running when one fails.
  if (has_writer && global_step_.valid()) {
    // TensorBoard drops events a previous run wrote at steps after this one.
    ASSIGN_OR_RETURN(int64_t step, GlobalStepValue(*session));
    absl::MutexLock lock(&writer_mu_);
    RETURN_IF_ERROR(writer_->AddSessionLog(SessionLog::START, step));
  }
  if (run_summaries) {
    absl::Status first = ComputeSummaries(session);
    ServiceRan(SupervisorService::kSummary, first);
    RETURN_IF_ERROR(first);
  }
  auto counter = std::make_shared<StepCounter>();
  if (count_steps) {
    ASSIGN_OR_RETURN(counter->last_step, GlobalStepValue(*session));
    counter->last_time = options_.clock->Now();
    counter->tag = absl::StrCat(CounterName(global_step_), "/sec");
    // As TensorFlow's counter thread, whose first sample (0 steps/sec) comes at the
    // start, so that a run shorter than save_summaries_secs still has one.
    absl::Status first = CountSteps(session, counter.get());
    ServiceRan(SupervisorService::kStepCounter, first);
    RETURN_IF_ERROR(first);
  }
  if (save_checkpoints) {
    absl::Status first = SaveCheckpoint(session);
    ServiceRan(SupervisorService::kCheckpoint, first);
    RETURN_IF_ERROR(first);
  }

  if (run_summaries) {
    threads.push_back(StartService("SVSummaryThread", summaries, [this, session] {
      absl::Status s = ComputeSummaries(session);
      ServiceRan(SupervisorService::kSummary, s);
      return s;
    }));
  }
  if (count_steps) {
    threads.push_back(StartService("SVStepCounterThread", summaries, [this, session, counter] {
      absl::Status s = CountSteps(session, counter.get());
      ServiceRan(SupervisorService::kStepCounter, s);
      return s;
    }));
  }
  if (save_checkpoints) {
    threads.push_back(StartService("SVTimerCheckpointThread", checkpoints, [this, session] {
      absl::Status s = SaveCheckpoint(session);
      ServiceRan(SupervisorService::kCheckpoint, s);
      return s;
    }));
  }
  return threads;
}

absl::Status Supervisor::CountSteps(ClientSession* session, StepCounter* counter) {
  ASSIGN_OR_RETURN(int64_t step, GlobalStepValue(*session));
  const absl::Time now = options_.clock->Now();
  const double elapsed = absl::ToDoubleSeconds(now - counter->last_time);
  const int64_t steps = step - counter->last_step;
  const double rate = steps == 0    ? 0.0
                      : elapsed > 0 ? steps / elapsed
                                    : std::numeric_limits<double>::infinity();
  counter->last_step = step;
  counter->last_time = now;
  Summary summary;
  Summary::Value* value = summary.add_value();
  value->set_tag(counter->tag);
  value->set_simple_value(static_cast<float>(rate));
  if (counter->logged < 10) {
    ++counter->logged;
    LOG(INFO) << counter->tag << ": " << rate;
  }
  absl::MutexLock lock(&writer_mu_);
  if (writer_ == nullptr) return absl::OkStatus();
  return writer_->AddSummary(summary, step);
}

absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> Supervisor::StartQueueRunners(
    ClientSession* session) {
  ASSIGN_OR_RETURN(StartedQueueRunners started, overseer::StartQueueRunners(session, &coord_));
  if (!started.threads.empty()) {
    LOG(INFO) << "Started " << started.runners.size() << " queue runners ("
              << started.threads.size() << " threads)";
  }
  return std::move(started.threads);
}

absl::StatusOr<std::vector<std::shared_ptr<ManagedThread>>> Supervisor::StartQueueRunners(
    ClientSession* session, const std::vector<QueueRunner*>& queue_runners) {
  std::vector<std::shared_ptr<ManagedThread>> threads;
  for (QueueRunner* runner : queue_runners) {
    if (runner == nullptr) return absl::InvalidArgumentError("StartQueueRunners: a null runner");
    ASSIGN_OR_RETURN(std::vector<std::shared_ptr<ManagedThread>> started,
                     runner->CreateThreads(session, &coord_));
    threads.insert(threads.end(), started.begin(), started.end());
  }
  if (!threads.empty()) {
    LOG(INFO) << "Started " << queue_runners.size() << " queue runners (" << threads.size()
              << " threads)";
  }
  return threads;
}

std::shared_ptr<ManagedThread> Supervisor::StartService(std::string name, absl::Duration interval,
                                                        std::function<absl::Status()> fn) {
  // Calls at now + k * interval on the injected clock (absolute deadlines, so that a
  // manual clock moved before the thread first waits still wakes it), none made up.
  return LooperThread::Loop(&coord_, interval, std::move(fn), {interval, std::move(name)});
}

std::shared_ptr<ManagedThread> Supervisor::Loop(absl::Duration interval,
                                                std::function<absl::Status()> fn) {
  return LooperThread::Loop(&coord_, interval, std::move(fn), {absl::ZeroDuration(), "Loop"});
}

absl::Status Supervisor::Stop(const std::vector<std::shared_ptr<ManagedThread>>& threads,
                              bool close_summary_writer, bool ignore_live_threads) {
  coord_.RequestStop().IgnoreError();
  absl::Status joined = coord_.Join(threads, options_.stop_grace_secs, ignore_live_threads);
  absl::Status closed;
  if (close_summary_writer) {
    // Last, in case a thread was still writing.
    absl::MutexLock lock(&writer_mu_);
    if (writer_ != nullptr) {
      closed = writer_->AddSessionLog(SessionLog::STOP, 0);
      if (writer_ == owned_writer_.get()) {
        closed.Update(writer_->Close());
        writer_ = nullptr;  // Reopened by the next PrepareOrWaitForSession.
      } else {
        closed.Update(writer_->Flush());
      }
      graph_added_ = false;
    }
  }
  return joined.ok() ? closed : joined;
}

absl::Status Supervisor::SummaryComputed(ClientSession& session, const Summary& summary,
                                         std::optional<int64_t> global_step) {
  if (summary_writer() == nullptr) {
    return absl::FailedPreconditionError("Writing a summary requires a summary writer.");
  }
  if (!global_step.has_value() && global_step_.valid()) {
    ASSIGN_OR_RETURN(global_step, GlobalStepValue(session));
  }
  absl::MutexLock lock(&writer_mu_);
  if (writer_ == nullptr) {
    return absl::FailedPreconditionError("Writing a summary requires a summary writer.");
  }
  return writer_->AddSummary(summary, global_step.value_or(0));
}

absl::Status Supervisor::SummaryComputed(ClientSession& session,
                                         const std::string& serialized_summary,
                                         std::optional<int64_t> global_step) {
  Summary summary;
  if (!summary.ParseFromString(serialized_summary)) {
    return absl::InvalidArgumentError("the serialized summary does not parse as a Summary");
  }
  return SummaryComputed(session, summary, global_step);
}

}  // namespace overseer

#include "client/training/monitored_training_session.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/graph/variables.h"
#include "client/training/checkpoint_saver_hook.h"
#include "client/training/hook_util.h"
#include "client/training/summary_hooks.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "proto/event.pb.h"

namespace overseer {
namespace {

// Writes SessionLog START at the restored global step when a session creation restored
// a checkpoint, so that TensorBoard drops what was written at later steps before the
// failure. The first creation's START comes from the SummarySaverHook's first run
// when there is one.
class RestartLogHook : public SessionRunHook {
 public:
  RestartLogHook(const ChiefSessionCreator* creator, SummaryWriter* writer,
                 bool summary_hook_logs_first_start)
      : creator_(creator),
        writer_(writer),
        summary_hook_logs_first_start_(summary_hook_logs_first_start) {}

  absl::Status Begin(const Scope& scope) override {
    absl::StatusOr<Variable> step = GetGlobalStep(*scope.graph());
    if (step.ok()) global_step_ = step->value;
    return absl::OkStatus();
  }

  absl::Status AfterCreateSession(ClientSession* session, Coordinator* /*coord*/) override {
    ++creations_;
    const std::optional<std::string>& restored = creator_->last_restored_checkpoint();
    if (!restored.has_value() || (creations_ == 1 && summary_hook_logs_first_start_)) {
      return absl::OkStatus();
    }
    int64_t step = 0;
    if (global_step_.valid()) {
      std::vector<Tensor> out;
      RETURN_IF_ERROR(session->Run({global_step_}, &out));
      step = out[0].dtype() == DT_INT32 ? out[0].scalar<int32_t>() : out[0].scalar<int64_t>();
    }
    LOG(INFO) << "Session " << creations_ << " restored " << *restored << " at global step " << step
              << ": SessionLog START at " << step;
    return writer_->AddSessionLog(SessionLog::START, step);
  }

 private:
  const ChiefSessionCreator* const creator_;
  SummaryWriter* const writer_;
  const bool summary_hook_logs_first_start_;
  Output global_step_;
  int creations_ = 0;
};

// Counts every run in TrainerMetrics, with the global step it read.
class TrainerMetricsHook : public SessionRunHook {
 public:
  explicit TrainerMetricsHook(TrainerMetrics* metrics) : metrics_(metrics) {}

  absl::Status Begin(const Scope& scope) override {
    absl::StatusOr<Variable> step = GetGlobalStep(*scope.graph());
    if (step.ok()) global_step_ = step->value;
    return absl::OkStatus();
  }
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext*) override {
    SessionRunArgs args;
    if (global_step_.valid()) args.fetches = {global_step_};
    return args;
  }
  absl::Status AfterRun(SessionRunContext*, const SessionRunValues& values) override {
    int64_t step = -1;
    if (global_step_.valid() && !values.results.empty()) {
      absl::StatusOr<int64_t> read = StepValue(values.results[0]);
      if (read.ok()) step = *read;
    }
    metrics_->StepDone(step);
    return absl::OkStatus();
  }

 private:
  TrainerMetrics* const metrics_;
  Output global_step_;
};

// Tells TrainerMetrics of every checkpoint the chief saved.
class CheckpointMetricsListener : public CheckpointSaverListener {
 public:
  CheckpointMetricsListener(TrainerMetrics* metrics, Clock* clock)
      : metrics_(metrics), clock_(clock) {}

  absl::StatusOr<bool> AfterSave(ClientSession*, int64_t global_step) override {
    metrics_->CheckpointSaved(global_step, clock_->Now());
    return false;
  }

 private:
  TrainerMetrics* const metrics_;
  Clock* const clock_;
};

template <typename T>
bool Positive(const std::optional<T>& v, T zero) {
  return v.has_value() && *v > zero;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MonitoredSession>> MonitoredTrainingSession(
    const Scope& scope, const MonitoredTrainingSessionOptions& options) {
  if (options.clock == nullptr) {
    return absl::InvalidArgumentError("MonitoredTrainingSession: null clock");
  }
  MonitoredSessionOptions monitored;
  monitored.stop_grace_period = options.stop_grace_period;
  monitored.recovery = options.recovery;
  monitored.clock = options.clock;
  monitored.metrics = options.metrics;
  SessionCreatorOptions common;
  common.master = options.master;
  common.config = options.config;
  common.resource_mgr = options.resource_mgr;
  common.readiness_key = options.readiness_key;
  common.readiness_channel = options.readiness_channel;
  common.clock = options.clock;
  common.metrics = options.metrics;

  if (!options.is_chief) {
    WorkerSessionCreatorOptions worker;
    static_cast<SessionCreatorOptions&>(worker) = common;
    worker.max_wait = options.max_wait;
    std::vector<SessionRunHook*> hooks = options.hooks;
    std::unique_ptr<SessionRunHook> metrics_hook;
    if (options.metrics != nullptr) {
      metrics_hook = std::make_unique<TrainerMetricsHook>(options.metrics);
      hooks.push_back(metrics_hook.get());
    }
    std::unique_ptr<MonitoredSession> session(new MonitoredSession(
        scope, std::make_unique<WorkerSessionCreator>(scope, options.scaffold, worker),
        std::move(hooks), monitored));
    if (metrics_hook != nullptr) session->owned_hooks_.push_back(std::move(metrics_hook));
    RETURN_IF_ERROR(session->Init(/*should_recover=*/true));
    return session;
  }

  ChiefSessionCreatorOptions chief;
  static_cast<SessionCreatorOptions&>(chief) = common;
  chief.checkpoint_dir = options.checkpoint_dir;
  chief.restore_only_if_not_ready = options.restore_only_if_not_ready;
  auto creator = std::make_unique<ChiefSessionCreator>(scope, options.scaffold, chief);
  const ChiefSessionCreator* chief_creator = creator.get();
  Scaffold* scaffold = creator->scaffold();

  // The intervals: steps replace the default seconds for checkpoints, seconds replace
  // the default steps for summaries.
  std::optional<int64_t> checkpoint_steps;
  std::optional<absl::Duration> checkpoint_secs;
  if (options.save_checkpoint_steps.has_value()) {
    if (Positive(options.save_checkpoint_steps, int64_t{0})) {
      checkpoint_steps = options.save_checkpoint_steps;
    }
  } else if (Positive(options.save_checkpoint_secs, absl::ZeroDuration())) {
    checkpoint_secs = options.save_checkpoint_secs;
  }
  std::optional<int64_t> summary_steps;
  std::optional<absl::Duration> summary_secs;
  if (options.save_summaries_secs.has_value()) {
    if (Positive(options.save_summaries_secs, absl::ZeroDuration())) {
      summary_secs = options.save_summaries_secs;
    }
  } else if (Positive(options.save_summaries_steps, int64_t{0})) {
    summary_steps = options.save_summaries_steps;
  }
  const bool save_summaries = summary_steps.has_value() || summary_secs.has_value();
  const bool count_steps = options.log_step_count_steps > 0;
  const bool save_checkpoints = !options.checkpoint_dir.empty() &&
                                (checkpoint_steps.has_value() || checkpoint_secs.has_value());
  const std::string summary_dir =
      options.summary_dir.empty() ? options.checkpoint_dir : options.summary_dir;

  std::unique_ptr<SummaryWriter> writer;
  if (!summary_dir.empty() && (save_summaries || count_steps)) {
    SummaryWriterOptions writer_options = options.summary_writer_options;
    writer_options.clock = options.clock;
    absl::StatusOr<std::unique_ptr<SummaryWriter>> made =
        SummaryWriter::Create(summary_dir, writer_options);
    if (!made.ok() && options.summary_dir.empty()) {
      return Annotate(made.status(), "summary_dir is unset, so summaries go to checkpoint_dir: ");
    }
    if (!made.ok()) return made.status();
    writer = *std::move(made);
  }

  std::vector<std::unique_ptr<SessionRunHook>> owned;
  std::vector<std::unique_ptr<CheckpointSaverListener>> session_owned_listeners;
  std::vector<SessionRunHook*> hooks;
  auto add = [&](std::unique_ptr<SessionRunHook> hook) {
    hooks.push_back(hook.get());
    owned.push_back(std::move(hook));
  };
  if (writer != nullptr) {
    add(std::make_unique<RestartLogHook>(chief_creator, writer.get(), save_summaries));
  }
  hooks.insert(hooks.end(), options.chief_only_hooks.begin(), options.chief_only_hooks.end());
  if (writer != nullptr && count_steps) {
    StepCounterHookOptions counter;
    counter.every_n_steps = options.log_step_count_steps;
    counter.summary_writer = writer.get();
    counter.clock = options.clock;
    ASSIGN_OR_RETURN(std::unique_ptr<StepCounterHook> hook, StepCounterHook::Create(counter));
    add(std::move(hook));
  }
  if (writer != nullptr && save_summaries) {
    SummarySaverHookOptions summaries;
    summaries.save_steps = summary_steps;
    summaries.save_secs = summary_secs;
    summaries.summary_writer = writer.get();
    summaries.summary_op_provider = [scaffold]() -> absl::StatusOr<std::vector<Output>> {
      ASSIGN_OR_RETURN(Output op, scaffold->ResolveSummaryOp());
      if (!op.valid()) return std::vector<Output>();
      return std::vector<Output>{op};
    };
    summaries.clock = options.clock;
    ASSIGN_OR_RETURN(std::unique_ptr<SummarySaverHook> hook,
                     SummarySaverHook::Create(std::move(summaries)));
    add(std::move(hook));
  }
  if (save_checkpoints) {
    CheckpointSaverHookOptions saver;
    saver.checkpoint_location = options.checkpoint_dir;
    saver.save_steps = checkpoint_steps;
    saver.save_secs = checkpoint_secs;
    saver.saver_provider = [scaffold]() { return scaffold->ResolveSaver(); };
    saver.summary_writer = writer.get();
    saver.clock = options.clock;
    if (options.metrics != nullptr) {
      auto listener = std::make_unique<CheckpointMetricsListener>(options.metrics, options.clock);
      saver.listeners.push_back(listener.get());
      session_owned_listeners.push_back(std::move(listener));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<CheckpointSaverHook> hook,
                     CheckpointSaverHook::Create(std::move(saver)));
    add(std::move(hook));
  }
  hooks.insert(hooks.end(), options.hooks.begin(), options.hooks.end());
  if (options.metrics != nullptr) add(std::make_unique<TrainerMetricsHook>(options.metrics));

  std::unique_ptr<MonitoredSession> session(
      new MonitoredSession(scope, std::move(creator), std::move(hooks), monitored));
  session->owned_hooks_ = std::move(owned);
  session->owned_listeners_ = std::move(session_owned_listeners);
  session->summary_writer_ = std::move(writer);
  if (options.signal_job_done_on_end && !options.master.empty()) {
    const std::string master = options.master;
    JobDoneSignal signal = options.job_done_signal;
    if (!signal) {
      const std::vector<std::string> filters(options.config.device_filters().begin(),
                                             options.config.device_filters().end());
      signal = [filters](const std::string& target, const std::string& reason) {
        return SignalJobDone(target, reason, filters);
      };
    }
    session->after_clean_close_ = [master, signal] {
      absl::Status s = signal(master, "the chief's MonitoredTrainingSession ended cleanly");
      if (s.ok()) {
        LOG(INFO) << "Told the cluster behind " << master << " that the job is done";
      } else {
        LOG(WARNING) << "Could not tell the cluster behind " << master
                     << " that the job is done: " << s;
      }
    };
  }
  RETURN_IF_ERROR(session->Init(/*should_recover=*/true));
  return session;
}

}  // namespace overseer

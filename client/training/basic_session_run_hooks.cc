#include "client/training/basic_session_run_hooks.h"

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/graph/variables.h"
#include "client/training/hook_util.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {

using hook_internal::GlobalStepTensor;
using hook_internal::ReadGlobalStep;

// ---- SecondOrStepTimer ----

absl::StatusOr<SecondOrStepTimer> SecondOrStepTimer::Create(
    std::optional<absl::Duration> every_secs, std::optional<int64_t> every_steps, Clock* clock) {
  if (!every_secs.has_value() && !every_steps.has_value()) {
    return absl::InvalidArgumentError("either every_secs or every_steps should be provided");
  }
  if (every_secs.has_value() && every_steps.has_value()) {
    return absl::InvalidArgumentError("can not provide both every_secs and every_steps");
  }
  if (every_secs.has_value() && *every_secs < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("every_secs must not be negative, got ", absl::FormatDuration(*every_secs)));
  }
  if (every_steps.has_value() && *every_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("every_steps must not be negative, got ", *every_steps));
  }
  if (clock == nullptr) return absl::InvalidArgumentError("the timer's clock is null");
  return SecondOrStepTimer(every_secs, every_steps, clock);
}

void SecondOrStepTimer::Reset() { last_step_.reset(); }

bool SecondOrStepTimer::ShouldTriggerForStep(int64_t step) const {
  if (!last_step_.has_value()) return true;
  if (*last_step_ == step) return false;
  if (every_secs_.has_value() && clock_->Now() >= last_time_ + *every_secs_) return true;
  if (every_steps_.has_value() && step >= *last_step_ + *every_steps_) return true;
  return false;
}

SecondOrStepTimer::Elapsed SecondOrStepTimer::UpdateLastTriggeredStep(int64_t step) {
  const absl::Time now = clock_->Now();
  Elapsed elapsed;
  if (last_step_.has_value()) {
    elapsed.time = now - last_time_;
    elapsed.steps = step - *last_step_;
  }
  last_time_ = now;
  last_step_ = step;
  return elapsed;
}

// ---- StopAtStepHook ----

absl::StatusOr<std::unique_ptr<StopAtStepHook>> StopAtStepHook::Create(
    const StopAtStepHookOptions& options) {
  if (!options.num_steps.has_value() && !options.last_step.has_value()) {
    return absl::InvalidArgumentError("StopAtStepHook: one of num_steps or last_step must be set");
  }
  if (options.num_steps.has_value() && options.last_step.has_value()) {
    return absl::InvalidArgumentError(
        "StopAtStepHook: only one of num_steps or last_step can be set");
  }
  return std::unique_ptr<StopAtStepHook>(new StopAtStepHook(options));
}

absl::Status StopAtStepHook::Begin(const Scope& scope) {
  ASSIGN_OR_RETURN(global_step_, GlobalStepTensor(scope, "StopAtStepHook"));
  if (options_.last_step.has_value()) last_step_ = options_.last_step;
  return absl::OkStatus();
}

absl::Status StopAtStepHook::AfterCreateSession(ClientSession* session, Coordinator*) {
  // num_steps count from the first session's step; a recreated session keeps the goal.
  if (!last_step_.has_value()) {
    ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(session, global_step_));
    last_step_ = step + *options_.num_steps;
  }
  return absl::OkStatus();
}

absl::StatusOr<SessionRunArgs> StopAtStepHook::BeforeRun(SessionRunContext*) {
  SessionRunArgs args;
  args.fetches = {global_step_};
  return args;
}

absl::Status StopAtStepHook::AfterRun(SessionRunContext* context, const SessionRunValues& values) {
  if (!last_step_.has_value()) {
    return absl::FailedPreconditionError(
        "StopAtStepHook with num_steps ran before AfterCreateSession set its last step");
  }
  ASSIGN_OR_RETURN(int64_t stale_step, StepValue(values.results[0]));
  if (stale_step + 1 >= *last_step_) {
    // The value read may predate this run's increment: check the step now.
    ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(context->session(), global_step_));
    if (step >= *last_step_) context->RequestStop();
  }
  return absl::OkStatus();
}

// ---- LoggingTensorHook ----

absl::StatusOr<std::unique_ptr<LoggingTensorHook>> LoggingTensorHook::Create(
    LoggingTensorHookOptions options) {
  const bool only_at_end =
      options.at_end && !options.every_n_iter.has_value() && !options.every_n_secs.has_value();
  if (!only_at_end && options.every_n_iter.has_value() == options.every_n_secs.has_value()) {
    return absl::InvalidArgumentError(
        "LoggingTensorHook: either at_end and/or exactly one of every_n_iter and "
        "every_n_secs must be provided");
  }
  if (options.every_n_iter.has_value() && *options.every_n_iter <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LoggingTensorHook: invalid every_n_iter=", *options.every_n_iter));
  }
  if (options.tensors.empty() && options.tagged_tensors.empty()) {
    return absl::InvalidArgumentError("LoggingTensorHook: no tensors to log");
  }
  std::optional<SecondOrStepTimer> timer;
  if (!only_at_end) {
    ASSIGN_OR_RETURN(timer, SecondOrStepTimer::Create(options.every_n_secs, options.every_n_iter,
                                                      options.clock));
  }
  return std::unique_ptr<LoggingTensorHook>(
      new LoggingTensorHook(std::move(options), std::move(timer)));
}

LoggingTensorHook::LoggingTensorHook(LoggingTensorHookOptions options,
                                     std::optional<SecondOrStepTimer> timer)
    : options_(std::move(options)), timer_(std::move(timer)) {}

absl::Status LoggingTensorHook::Begin(const Scope& scope) {
  if (timer_.has_value()) timer_->Reset();
  iter_count_ = 0;
  tags_.clear();
  outputs_.clear();
  std::set<std::string> seen;
  auto add = [&](const std::string& tag, const Fetch& fetch) -> absl::Status {
    if (!seen.insert(tag).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("LoggingTensorHook: tag '", tag, "' is given twice"));
    }
    ASSIGN_OR_RETURN(Output t, fetch.Resolve(*scope.graph()));
    tags_.push_back(tag);
    outputs_.push_back(t);
    return absl::OkStatus();
  };
  for (const Fetch& f : options_.tensors) RETURN_IF_ERROR(add(f.DebugName(), f));
  for (const auto& [tag, f] : options_.tagged_tensors) RETURN_IF_ERROR(add(tag, f));
  return absl::OkStatus();
}

absl::StatusOr<SessionRunArgs> LoggingTensorHook::BeforeRun(SessionRunContext*) {
  should_trigger_ = timer_.has_value() && timer_->ShouldTriggerForStep(iter_count_);
  SessionRunArgs args;
  if (should_trigger_) args.fetches.assign(outputs_.begin(), outputs_.end());
  return args;
}

void LoggingTensorHook::Log(const std::vector<Tensor>& values) {
  std::optional<absl::Duration> elapsed;
  if (timer_.has_value()) elapsed = timer_->UpdateLastTriggeredStep(iter_count_).time;
  if (options_.formatter) {
    std::map<std::string, Tensor> by_tag;
    for (size_t i = 0; i < tags_.size(); ++i) by_tag.emplace(tags_[i], values[i]);
    LOG(INFO) << options_.formatter(by_tag);
    return;
  }
  std::vector<std::string> stats;
  for (size_t i = 0; i < tags_.size(); ++i) {
    stats.push_back(absl::StrCat(tags_[i], " = ", hook_internal::FormatTensorValue(values[i])));
  }
  std::string line = absl::StrJoin(stats, ", ");
  if (elapsed.has_value()) {
    absl::StrAppend(&line, absl::StrFormat(" (%.3f sec)", absl::ToDoubleSeconds(*elapsed)));
  }
  LOG(INFO) << line;
}

absl::Status LoggingTensorHook::AfterRun(SessionRunContext*, const SessionRunValues& values) {
  if (should_trigger_) Log(values.results);
  ++iter_count_;
  return absl::OkStatus();
}

absl::Status LoggingTensorHook::End(ClientSession* session) {
  if (!options_.at_end) return absl::OkStatus();
  std::vector<Tensor> values;
  RETURN_IF_ERROR(session->Run(outputs_, &values));
  Log(values);
  return absl::OkStatus();
}

// ---- NanTensorHook ----

absl::Status NanTensorHook::Begin(const Scope& scope) {
  ASSIGN_OR_RETURN(loss_, loss_tensor_.Resolve(*scope.graph()));
  if (loss_.dtype() != DT_FLOAT && loss_.dtype() != DT_DOUBLE) {
    return absl::InvalidArgumentError(absl::StrCat("NanTensorHook: loss tensor '", loss_.name(),
                                                   "' is ", DataTypeString(loss_.dtype()),
                                                   "; it must be float or double"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SessionRunArgs> NanTensorHook::BeforeRun(SessionRunContext*) {
  SessionRunArgs args;
  args.fetches = {loss_};
  return args;
}

absl::Status NanTensorHook::AfterRun(SessionRunContext* context, const SessionRunValues& values) {
  const Tensor& loss = values.results[0];
  bool nan = false;
  for (int64_t i = 0; i < loss.NumElements() && !nan; ++i) {
    nan = loss.dtype() == DT_FLOAT ? std::isnan(loss.data<float>()[i])
                                   : std::isnan(loss.data<double>()[i]);
  }
  if (!nan) return absl::OkStatus();
  const std::string message =
      absl::StrCat("Model diverged with loss = NaN (tensor '", loss_.name(), "')");
  if (fail_on_nan_loss_) {
    LOG(ERROR) << message;
    return absl::InternalError(absl::StrCat("NaN loss during training: ", message));
  }
  LOG(WARNING) << message << "; requesting stop";
  context->RequestStop();
  return absl::OkStatus();
}

// ---- GlobalStepWaiterHook ----

absl::StatusOr<std::unique_ptr<GlobalStepWaiterHook>> GlobalStepWaiterHook::Create(
    const GlobalStepWaiterHookOptions& options) {
  if (options.poll_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("GlobalStepWaiterHook: poll_interval must be positive");
  }
  if (options.clock == nullptr) {
    return absl::InvalidArgumentError("GlobalStepWaiterHook: the clock is null");
  }
  return std::unique_ptr<GlobalStepWaiterHook>(new GlobalStepWaiterHook(options));
}

absl::Status GlobalStepWaiterHook::Begin(const Scope& scope) {
  worker_is_started_ = false;
  ASSIGN_OR_RETURN(global_step_, GlobalStepTensor(scope, "GlobalStepWaiterHook"));
  return absl::OkStatus();
}

absl::StatusOr<SessionRunArgs> GlobalStepWaiterHook::BeforeRun(SessionRunContext* context) {
  if (worker_is_started_) return SessionRunArgs();
  if (options_.wait_until_step <= 0) {
    worker_is_started_ = true;
    return SessionRunArgs();
  }
  LOG(INFO) << "Waiting for global step " << options_.wait_until_step
            << " before starting training.";
  Clock* clock = options_.clock;
  const absl::Time deadline = clock->Now() + options_.max_wait;
  int64_t last_logged_step = 0;
  while (true) {
    ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(context->session(), global_step_));
    if (step >= options_.wait_until_step) {
      worker_is_started_ = true;
      return SessionRunArgs();
    }
    if (step - last_logged_step > 1000) {
      LOG(INFO) << "Waiting for global step " << options_.wait_until_step
                << " before starting training. Current step is " << step << ".";
      last_logged_step = step;
    }
    if (clock->Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "GlobalStepWaiterHook: global step is ", step, " after waiting ",
          absl::FormatDuration(options_.max_wait), " for step ", options_.wait_until_step));
    }
    clock->SleepFor(options_.poll_interval);
  }
}

// ---- FinalOpsHook ----

absl::Status FinalOpsHook::End(ClientSession* session) {
  if (options_.final_ops.empty()) return absl::OkStatus();
  std::vector<Output> fetches;
  for (const Fetch& f : options_.final_ops) {
    ASSIGN_OR_RETURN(Output t, f.Resolve(*session->graph()));
    fetches.push_back(t);
  }
  std::vector<Tensor> values;
  absl::Status status = session->Run(options_.final_ops_feed_dict, fetches, &values);
  if (absl::IsOutOfRange(status)) {
    LOG(WARNING) << "An OUT_OF_RANGE error was raised by the final ops of FinalOpsHook. "
                    "This typically means they have a dependency back to some input "
                    "source, which should not happen: final ops should only read "
                    "variables (e.g. a metric's value, not its update op).";
  }
  RETURN_IF_ERROR(status);
  values_ = std::move(values);
  return absl::OkStatus();
}

// ---- FeedFnHook ----

absl::StatusOr<SessionRunArgs> FeedFnHook::BeforeRun(SessionRunContext*) {
  SessionRunArgs args;
  ASSIGN_OR_RETURN(args.feeds, feed_fn_());
  return args;
}

}  // namespace overseer

#include "client/training/summary_hooks.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/graph/variables.h"
#include "client/training/hook_util.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "proto/summary.pb.h"

namespace overseer {

using hook_internal::GlobalStepTensor;
using hook_internal::ReadGlobalStep;

// ---- StepCounterHook ----

absl::StatusOr<std::unique_ptr<StepCounterHook>> StepCounterHook::Create(
    const StepCounterHookOptions& options) {
  if (options.every_n_steps.has_value() == options.every_n_secs.has_value()) {
    return absl::InvalidArgumentError(
        "StepCounterHook: exactly one of every_n_steps and every_n_secs should be provided "
        "(every_n_steps defaults to 100: set it to nullopt to use every_n_secs)");
  }
  if (options.steps_per_run < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("StepCounterHook: steps_per_run must be >= 1, got ", options.steps_per_run));
  }
  absl::StatusOr<SecondOrStepTimer> timer =
      SecondOrStepTimer::Create(options.every_n_secs, options.every_n_steps, options.clock);
  if (!timer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("StepCounterHook: ", timer.status().message()));
  }
  return std::unique_ptr<StepCounterHook>(new StepCounterHook(options, *timer));
}

absl::Status StepCounterHook::Begin(const Scope& scope) {
  ASSIGN_OR_RETURN(global_step_, GlobalStepTensor(scope, "StepCounterHook"));
  ASSIGN_OR_RETURN(std::string name, hook_internal::GlobalStepName(scope, "StepCounterHook"));
  summary_tag_ = name + "/sec";
  return absl::OkStatus();
}

absl::StatusOr<SessionRunArgs> StepCounterHook::BeforeRun(SessionRunContext*) {
  SessionRunArgs args;
  args.fetches = {global_step_};
  return args;
}

absl::Status StepCounterHook::AfterRun(SessionRunContext* context, const SessionRunValues& values) {
  ASSIGN_OR_RETURN(int64_t stale_step, StepValue(values.results[0]));
  if (timer_.ShouldTriggerForStep(stale_step + options_.steps_per_run)) {
    // The value fetched may predate this run's increment: read the step now.
    ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(context->session(), global_step_));
    if (timer_.ShouldTriggerForStep(step)) {
      SecondOrStepTimer::Elapsed elapsed = timer_.UpdateLastTriggeredStep(step);
      // No rate without time between the two triggers.
      if (elapsed.time.has_value() && *elapsed.time > absl::ZeroDuration()) {
        const double rate =
            static_cast<double>(*elapsed.steps) / absl::ToDoubleSeconds(*elapsed.time);
        if (options_.summary_writer != nullptr) {
          Summary summary;
          Summary::Value* value = summary.add_value();
          value->set_tag(summary_tag_);
          value->set_simple_value(static_cast<float>(rate));
          RETURN_IF_ERROR(options_.summary_writer->AddSummary(summary, step));
        }
        LOG(INFO) << summary_tag_ << ": " << rate;
      }
    }
  }
  // Some optimizers do not advance the global step in every run (e.g. synchronous
  // replicas): warn only after 20 runs in a row.
  if (last_global_step_.has_value() && stale_step == *last_global_step_) {
    if (++global_step_check_count_ % 20 == 0) {
      global_step_check_count_ = 0;
      LOG(WARNING) << "It seems that the global step has not been increased. Current "
                      "value (could be stable): "
                   << stale_step << " vs previous value: " << *last_global_step_
                   << ". You could increase the global step by passing it to the "
                      "optimizer's Minimize or ApplyGradients.";
    }
  } else {
    global_step_check_count_ = 0;
  }
  last_global_step_ = stale_step;
  return absl::OkStatus();
}

// ---- SummarySaverHook ----

absl::StatusOr<std::unique_ptr<SummarySaverHook>> SummarySaverHook::Create(
    SummarySaverHookOptions options) {
  if (options.summary_op.empty() == !options.summary_op_provider) {
    return absl::InvalidArgumentError(
        "SummarySaverHook: exactly one of summary_op and summary_op_provider must be "
        "provided");
  }
  absl::StatusOr<SecondOrStepTimer> timer =
      SecondOrStepTimer::Create(options.save_secs, options.save_steps, options.clock);
  if (!timer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("SummarySaverHook: save_secs / save_steps: ", timer.status().message()));
  }
  return std::unique_ptr<SummarySaverHook>(new SummarySaverHook(std::move(options), *timer));
}

absl::Status SummarySaverHook::Begin(const Scope& scope) {
  next_step_.reset();
  ASSIGN_OR_RETURN(global_step_, GlobalStepTensor(scope, "SummarySaverHook"));
  if (options_.summary_op_provider) {
    ASSIGN_OR_RETURN(summary_ops_, options_.summary_op_provider());
  } else {
    summary_ops_ = options_.summary_op;
  }
  for (const Output& op : summary_ops_) {
    if (!op.valid() || op.dtype() != DT_STRING) {
      return absl::InvalidArgumentError(
          absl::StrCat("SummarySaverHook: summary op '", op.valid() ? op.name() : "<null>",
                       "' is not a string tensor (a serialized Summary)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SessionRunArgs> SummarySaverHook::BeforeRun(SessionRunContext*) {
  SessionRunArgs args;
  if (options_.summary_writer == nullptr) return args;
  request_summary_ = !next_step_.has_value() || timer_.ShouldTriggerForStep(*next_step_);
  args.fetches = {global_step_};
  if (request_summary_) {
    args.fetches.insert(args.fetches.end(), summary_ops_.begin(), summary_ops_.end());
  }
  return args;
}

absl::Status SummarySaverHook::AfterRun(SessionRunContext* context,
                                        const SessionRunValues& values) {
  SummaryWriter* writer = options_.summary_writer;
  if (writer == nullptr) return absl::OkStatus();
  ASSIGN_OR_RETURN(int64_t step, StepValue(values.results[0]));
  ++step;
  if (!next_step_.has_value() || request_summary_) {
    ASSIGN_OR_RETURN(step, ReadGlobalStep(context->session(), global_step_));
  }
  if (!next_step_.has_value()) {
    RETURN_IF_ERROR(writer->AddSessionLog(SessionLog::START, step));
  }
  if (request_summary_) {
    timer_.UpdateLastTriggeredStep(step);
    for (size_t i = 1; i < values.results.size(); ++i) {
      const Tensor& t = values.results[i];
      if (t.dtype() != DT_STRING || t.NumElements() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("SummarySaverHook: summary op '", summary_ops_[i - 1].name(), "' gave a ",
                         t.shape().DebugString(), " tensor, not a serialized Summary scalar"));
      }
      RETURN_IF_ERROR(writer->AddSummary(t.data<std::string>()[0], step));
    }
  }
  next_step_ = step + 1;
  return absl::OkStatus();
}

absl::Status SummarySaverHook::End(ClientSession*) {
  if (options_.summary_writer == nullptr) return absl::OkStatus();
  return options_.summary_writer->Flush();
}

}  // namespace overseer

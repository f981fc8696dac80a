#include "client/training/checkpoint_saver_hook.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/graph/variables.h"
#include "client/training/hook_util.h"
#include "client/training/meta_graph.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {

using hook_internal::GlobalStepTensor;
using hook_internal::ReadGlobalStep;

absl::StatusOr<std::unique_ptr<CheckpointSaverHook>> CheckpointSaverHook::Create(
    CheckpointSaverHookOptions options) {
  if (options.checkpoint_location.empty()) {
    return absl::InvalidArgumentError("CheckpointSaverHook: checkpoint_location is empty");
  }
  if (options.saver != nullptr && options.saver_provider) {
    return absl::InvalidArgumentError(
        "CheckpointSaverHook: you cannot provide both a saver and a saver_provider");
  }
  if (options.steps_per_run < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CheckpointSaverHook: steps_per_run must be >= 1, got ", options.steps_per_run));
  }
  absl::StatusOr<SecondOrStepTimer> timer =
      SecondOrStepTimer::Create(options.save_secs, options.save_steps, options.clock);
  if (!timer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CheckpointSaverHook: save_secs / save_steps: ", timer.status().message()));
  }
  return std::unique_ptr<CheckpointSaverHook>(new CheckpointSaverHook(std::move(options), *timer));
}

CheckpointSaverHook::CheckpointSaverHook(CheckpointSaverHookOptions options,
                                         SecondOrStepTimer timer)
    : options_(std::move(options)),
      save_path_(absl::StrCat(options_.checkpoint_location, "/", options_.checkpoint_basename)),
      timer_(timer) {}

absl::Status CheckpointSaverHook::Begin(const Scope& scope) {
  ASSIGN_OR_RETURN(global_step_, GlobalStepTensor(scope, "CheckpointSaverHook"));
  if (options_.saver != nullptr) {
    saver_ = options_.saver;
  } else if (options_.saver_provider) {
    ASSIGN_OR_RETURN(saver_, options_.saver_provider());
    if (saver_ == nullptr) {
      return absl::FailedPreconditionError("CheckpointSaverHook: the saver provider gave none");
    }
  } else if (saver_ == nullptr) {
    SaverOptions saver_options;
    saver_options.sharded = true;
    ASSIGN_OR_RETURN(owned_saver_, Saver::Create(scope, saver_options));
    saver_ = owned_saver_.get();
  }
  for (CheckpointSaverListener* listener : options_.listeners) {
    RETURN_IF_ERROR(listener->Begin(scope));
  }
  return absl::OkStatus();
}

absl::Status CheckpointSaverHook::AfterCreateSession(ClientSession* session, Coordinator*) {
  ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(session, global_step_));
  if (options_.summary_writer != nullptr || options_.save_graph_def) {
    GraphDef graph;
    RETURN_IF_ERROR(session->graph()->ToGraphDef(&graph));
    if (options_.save_graph_def && !absl::StrContains(options_.checkpoint_location, "://")) {
      RETURN_IF_ERROR(WriteGraph(graph, options_.checkpoint_location, "graph.pbtxt"));
    }
    if (options_.summary_writer != nullptr) {
      RETURN_IF_ERROR(options_.summary_writer->AddGraph(graph, step));
      if (options_.save_graph_def) {
        ASSIGN_OR_RETURN(const MetaGraphDef meta,
                         ExportMetaGraph(Scope::RootScopeFor(session->graph()), saver_));
        RETURN_IF_ERROR(options_.summary_writer->AddMetaGraph(meta, step));
      }
    }
  }
  // The checkpoint saved here is the state at `step`. A listener cannot stop training
  // before the first run.
  return Save(session, step).status();
}

absl::StatusOr<SessionRunArgs> CheckpointSaverHook::BeforeRun(SessionRunContext*) {
  SessionRunArgs args;
  args.fetches = {global_step_};
  return args;
}

absl::Status CheckpointSaverHook::AfterRun(SessionRunContext* context,
                                           const SessionRunValues& values) {
  ASSIGN_OR_RETURN(int64_t stale_step, StepValue(values.results[0]));
  if (!timer_.ShouldTriggerForStep(stale_step + options_.steps_per_run)) {
    return absl::OkStatus();
  }
  // The value fetched may predate this run's increment: read the step now.
  ASSIGN_OR_RETURN(int64_t step, ReadGlobalStep(context->session(), global_step_));
  if (!timer_.ShouldTriggerForStep(step)) return absl::OkStatus();
  ASSIGN_OR_RETURN(bool stop, Save(context->session(), step));
  if (stop) context->RequestStop();
  return absl::OkStatus();
}

absl::Status CheckpointSaverHook::End(ClientSession* session) {
  ASSIGN_OR_RETURN(int64_t last_step, ReadGlobalStep(session, global_step_));
  if (timer_.LastTriggeredStep() != last_step) {
    RETURN_IF_ERROR(Save(session, last_step).status());
  }
  for (CheckpointSaverListener* listener : options_.listeners) {
    RETURN_IF_ERROR(listener->End(session, last_step));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> CheckpointSaverHook::Save(ClientSession* session, int64_t step) {
  LOG(INFO) << "Saving checkpoints for " << step << " into " << save_path_ << ".";
  for (CheckpointSaverListener* listener : options_.listeners) {
    RETURN_IF_ERROR(listener->BeforeSave(session, step));
  }
  // The saver's nodes may be newer than the session's graph.
  RETURN_IF_ERROR(session->ExtendIfNeeded());
  // A consistent saver names the checkpoint by the step its snapshot holds, which may
  // be past `step` when other trainers run; the event file and AfterSave get that one.
  std::string path;
  if (saver_->consistent()) {
    ASSIGN_OR_RETURN(path, saver_->Save(session->session(), save_path_, global_step_,
                                        options_.save_graph_def, &step));
  } else {
    ASSIGN_OR_RETURN(path,
                     saver_->Save(session->session(), save_path_, step, options_.save_graph_def));
  }
  timer_.UpdateLastTriggeredStep(step);  // The one place: every save, at the step saved.
  if (options_.summary_writer != nullptr && !path.empty()) {  // "": an empty saver.
    RETURN_IF_ERROR(options_.summary_writer->AddSessionLog(SessionLog::CHECKPOINT, step, path));
  }
  bool should_stop = false;
  for (CheckpointSaverListener* listener : options_.listeners) {
    ASSIGN_OR_RETURN(bool stop, listener->AfterSave(session, step));
    if (stop) {
      LOG(INFO) << "A CheckpointSaverListener requested that training be stopped.";
      should_stop = true;
    }
  }
  return should_stop;
}

}  // namespace overseer

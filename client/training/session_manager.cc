#include "client/training/session_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cluster/device_name.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"

namespace overseer {
namespace {

// WaitForSession's poll interval: from kMinPoll doubling to kMaxPoll (or
// recovery_wait if smaller), so that a master that lost the readiness record
// costs little latency.
constexpr absl::Duration kMinPoll = absl::Milliseconds(100);
constexpr absl::Duration kMaxPoll = absl::Seconds(5);
// A waiting trainer logs what it waits for at most this often.
constexpr absl::Duration kWaitLogInterval = absl::Seconds(30);

std::string OpName(const Operation &op) { return op.valid() ? op.name() : "None"; }

std::string TargetName(const std::string &master) {
  return master.empty() ? std::string("the in-process target") : master;
}

// "/job:ps/task:0" for a node requesting
// "/job:ps/replica:0/task:0/device:CPU:0".
std::string TaskOf(const ClientGraph &graph, const std::string &var) {
  Node *node = graph.FindNode(var);
  if (node == nullptr || node->def().device().empty()) return "the default device";
  absl::StatusOr<DeviceName> device = DeviceName::Parse(node->def().device());
  if (!device.ok() || device->job.empty()) return node->def().device();
  std::string task = absl::StrCat("/job:", device->job);
  if (device->has_task) absl::StrAppend(&task, "/task:", device->task);
  return task;
}

// A readiness channel for `master`: the injected one, or a new one owned by
// `owned` on `clock` (for the in-process target, over the table in `resources`, the
// sessions' ResourceMgr). Null (with the reason in `error`) when the target has none.
ReadinessChannel *ChannelFor(const std::string &master, ReadinessChannel *injected, Clock *clock,
                             ResourceMgr *resources, std::unique_ptr<ReadinessChannel> *owned,
                             absl::Status *error) {
  if (injected != nullptr) return injected;
  absl::StatusOr<std::unique_ptr<ReadinessChannel>> channel =
      NewReadinessChannel(master, clock, resources);
  if (!channel.ok()) {
    *error = channel.status();
    return nullptr;
  }
  *owned = std::move(*channel);
  return owned->get();
}

}  // namespace

std::string DescribeVariablesByTask(const ClientGraph &graph,
                                    const std::vector<std::string> &names) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_task;
  for (const std::string &name : names) {
    const std::string task = TaskOf(graph, name);
    auto it = std::find_if(by_task.begin(), by_task.end(),
                           [&](const auto &entry) { return entry.first == task; });
    if (it == by_task.end()) {
      by_task.emplace_back(task, std::vector<std::string>{name});
    } else {
      it->second.push_back(name);
    }
  }
  std::vector<std::string> parts;
  for (const auto &[task, vars] : by_task) {
    parts.push_back(absl::StrCat(absl::StrJoin(vars, ", "), " on ", task));
  }
  return absl::StrJoin(parts, "; ");
}

absl::StatusOr<std::unique_ptr<SessionManager>> SessionManager::Create(
    const Scope &scope, SessionManagerOptions options) {
  if (options.ready_for_local_init_op.valid() && !options.local_init_op.valid()) {
    return absl::InvalidArgumentError(
        "If you pass a ready_for_local_init_op "
        "you must also pass a local_init_op");
  }
  if (options.clock == nullptr) return absl::InvalidArgumentError("the clock is null");
  const ClientGraph *graph = scope.graph();
  auto check_graph = [graph](Node *node, const char *what) -> absl::Status {
    if (node == nullptr || node->graph() == graph) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        what, " '", node->name(), "' belongs to a different graph than the manager's scope"));
  };
  RETURN_IF_ERROR(check_graph(options.local_init_op.node(), "local_init_op"));
  RETURN_IF_ERROR(check_graph(options.ready_op.node(), "ready_op"));
  RETURN_IF_ERROR(check_graph(options.ready_for_local_init_op.node(), "ready_for_local_init_op"));
  for (const Output *op : {&options.ready_op, &options.ready_for_local_init_op}) {
    if (op->valid() && op->dtype() != DT_STRING) {
      return absl::InvalidArgumentError(
          absl::StrCat("ready op '", op->name(),
                       "' must be a string vector of uninitialised variable "
                       "names (e.g. ReportUninitializedVariables), not ",
                       DataTypeString(op->dtype())));
    }
  }
  return std::unique_ptr<SessionManager>(new SessionManager(scope, std::move(options)));
}

SessionManager::SessionManager(const Scope &scope, SessionManagerOptions options)
    : scope_(scope), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<ClientSession>> SessionManager::NewClientSession(
    const std::string &master, const std::optional<ConfigProto> &config) const {
  SessionOptions session_options = options_.session_options;
  session_options.target = master;
  if (config.has_value()) session_options.config = *config;
  return ClientSession::Create(scope_, session_options);
}

absl::StatusOr<std::optional<std::string>> SessionManager::RestoreCheckpoint(
    ClientSession &session, const RecoverSessionOptions &options) const {
  if (!options.checkpoint_dir.empty() && !options.checkpoint_filename_with_path.empty()) {
    return absl::InvalidArgumentError(
        "Can not provide both checkpoint_dir and "
        "checkpoint_filename_with_path");
  }
  if (options.saver == nullptr ||
      (options.checkpoint_dir.empty() && options.checkpoint_filename_with_path.empty())) {
    return std::optional<std::string>();
  }
  RETURN_IF_ERROR(session.ExtendIfNeeded());
  if (!options.checkpoint_filename_with_path.empty()) {
    RETURN_IF_ERROR(
        options.saver->Restore(session.session(), options.checkpoint_filename_with_path));
    return std::optional<std::string>(options.checkpoint_filename_with_path);
  }
  Clock *clock = options_.clock;
  const absl::Time deadline = clock->Now() + options.max_wait;
  std::optional<std::string> latest;
  while (true) {
    ASSIGN_OR_RETURN(latest, LatestCheckpoint(options.checkpoint_dir));
    if (latest.has_value()) break;
    const absl::Time now = clock->Now();
    if (!options.wait_for_checkpoint || now >= deadline) return latest;
    LOG(INFO) << "Waiting for a checkpoint in " << options.checkpoint_dir << " ("
              << absl::FormatDuration(deadline - now) << " left)";
    clock->SleepFor(std::min(options_.recovery_wait, deadline - now));
  }
  RETURN_IF_ERROR(options.saver->Restore(session.session(), *latest));
  RETURN_IF_ERROR(options.saver->RecoverLastCheckpoints(options.checkpoint_dir));
  return latest;
}

absl::StatusOr<SessionManager::Readiness> SessionManager::Check(ClientSession &session,
                                                                const Output &op) const {
  if (!op.valid()) return Readiness{};
  std::vector<Tensor> out;
  absl::Status s = session.Run({op}, &out);
  if (!s.ok()) {
    // A ready op that reads variables fails this way until they are
    // initialised.
    if (s.code() == absl::StatusCode::kFailedPrecondition &&
        absl::StrContains(s.message(), "uninitialized")) {
      return Readiness{false, std::string(s.message())};
    }
    return Annotate(s, absl::StrCat("running ready op '", op.name(), "': "));
  }
  std::vector<std::string> names;
  for (int64_t i = 0; i < out[0].NumElements(); ++i) {
    names.push_back(out[0].flat<std::string>()(i));
  }
  if (names.empty()) return Readiness{};
  return Readiness{false, absl::StrCat("Variables not initialized: ",
                                       DescribeVariablesByTask(*scope_.graph(), names))};
}

absl::StatusOr<SessionManager::Readiness> SessionManager::TryRunLocalInit(
    ClientSession &session) const {
  if (!options_.local_init_op.valid()) return Readiness{};
  ASSIGN_OR_RETURN(Readiness ready, Check(session, options_.ready_for_local_init_op));
  if (!ready.ready) {
    ready.reason = absl::StrCat("Model not ready for local init: ", ready.reason);
    return ready;
  }
  LOG(INFO) << "Running local_init_op " << options_.local_init_op.name();
  RETURN_IF_ERROR(
      Annotate(session.Run(options_.local_init_run_options, options_.local_init_feeds, {},
                           {options_.local_init_op}, nullptr, nullptr),
               absl::StrCat("running local_init_op '", options_.local_init_op.name(), "': ")));
  return Readiness{};
}

absl::StatusOr<SessionManager::Readiness> SessionManager::LocalInitAndCheck(
    ClientSession &session) const {
  ASSIGN_OR_RETURN(Readiness local, TryRunLocalInit(session));
  if (!local.ready) return local;
  return Check(session, options_.ready_op);
}

void SessionManager::MarkReady(const std::string &master,
                               const std::optional<ConfigProto> &config) const {
  std::unique_ptr<ReadinessChannel> owned;
  absl::Status error;
  ReadinessChannel *channel = ChannelFor(master, options_.readiness_channel, options_.clock,
                                         options_.session_options.resource_mgr, &owned, &error);
  const ConfigProto &used = config.has_value() ? *config : options_.session_options.config;
  const std::vector<std::string> filters(used.device_filters().begin(),
                                         used.device_filters().end());
  if (channel != nullptr) error = channel->MarkReady(options_.readiness_key, filters);
  if (!error.ok()) {
    LOG(WARNING) << "Could not mark model '" << options_.readiness_key << "' ready on "
                 << TargetName(master) << " (other trainers fall back to polling): " << error;
  }
}

void SessionManager::WithdrawReady(const std::string &master) const {
  std::unique_ptr<ReadinessChannel> owned;
  absl::Status error;
  ReadinessChannel *channel = ChannelFor(master, options_.readiness_channel, options_.clock,
                                         options_.session_options.resource_mgr, &owned, &error);
  if (channel != nullptr) error = channel->WithdrawReady(options_.readiness_key);
  if (!error.ok()) {
    LOG(WARNING) << "Could not withdraw readiness of model '" << options_.readiness_key << "' on "
                 << TargetName(master) << ": " << error;
  }
}

absl::StatusOr<bool> SessionManager::KeepReadyModel(ClientSession &session,
                                                    const std::string &master) const {
  const Output &global_check = options_.ready_for_local_init_op.valid()
                                   ? options_.ready_for_local_init_op
                                   : options_.ready_op;
  ASSIGN_OR_RETURN(Readiness global, Check(session, global_check));
  if (!global.ready) {
    LOG(INFO) << "Model state did not survive on " << TargetName(master)
              << ", restoring or initializing it: " << global.reason;
    return false;
  }
  ASSIGN_OR_RETURN(Readiness ready, LocalInitAndCheck(session));
  if (!ready.ready) {
    LOG(INFO) << "Model is not ready on " << TargetName(master)
              << " after local init, restoring or initializing it: " << ready.reason;
    return false;
  }
  return true;
}

absl::StatusOr<std::unique_ptr<ClientSession>> SessionManager::PrepareSession(
    const std::string &master, const PrepareSessionOptions &options) {
  ASSIGN_OR_RETURN(PreparedSession prepared, PrepareSessionWithResult(master, options));
  return std::move(prepared.session);
}

absl::StatusOr<PreparedSession> SessionManager::PrepareSessionWithResult(
    const std::string &master, const PrepareSessionOptions &options) {
  PreparedSession result;
  ASSIGN_OR_RETURN(result.session, NewClientSession(master, options.config));
  ClientSession *const session = result.session.get();
  if (options.restore_only_if_not_ready && options_.ready_op.valid()) {
    ASSIGN_OR_RETURN(result.kept_ready_model, KeepReadyModel(*session, master));
    if (result.kept_ready_model) {
      LOG(INFO) << "Model state survived on " << TargetName(master)
                << ": kept it, nothing restored or initialized";
      // As after a restore: the saver's retention list is the checkpoints already there.
      if (options.saver != nullptr && !options.checkpoint_dir.empty()) {
        const absl::Status recovered =
            options.saver->RecoverLastCheckpoints(options.checkpoint_dir);
        if (!recovered.ok()) {
          LOG(WARNING) << "cannot list the checkpoints of " << options.checkpoint_dir
                       << " for the saver's retention: " << recovered;
        }
      }
      MarkReady(master, options.config);
      return result;
    }
  }
  ASSIGN_OR_RETURN(std::optional<std::string> restored, RestoreCheckpoint(*session, options));
  result.restored_checkpoint = restored;
  const std::string init_fn_name = options.init_fn ? "given" : "None";
  bool already_ready = false;
  if (!restored.has_value()) {
    if (!options.init_op.valid() && !options.init_fn && !options_.local_init_op.valid()) {
      ASSIGN_OR_RETURN(Readiness ready, Check(*session, options_.ready_op));
      if (!ready.ready) {
        WithdrawReady(master);
        return absl::FailedPreconditionError(
            absl::StrCat("Model is not initialized and no init_op or init_fn "
                         "or local_init_op was "
                         "given (",
                         ready.reason, ")"));
      }
      already_ready = true;
    }
    if (options.init_op.valid()) {
      RETURN_IF_ERROR(Annotate(session->Run(options.init_feeds, {}, {options.init_op}, nullptr),
                               absl::StrCat("running init_op '", options.init_op.name(), "': ")));
    }
    if (options.init_fn) RETURN_IF_ERROR(Annotate(options.init_fn(*session), "init_fn: "));
  }
  ASSIGN_OR_RETURN(Readiness local, TryRunLocalInit(*session));
  if (!local.ready) {
    WithdrawReady(master);
    return absl::FailedPreconditionError(absl::StrCat(
        "Init operations did not make model ready for local_init. Init op: ",
        OpName(options.init_op), ", init fn: ", init_fn_name, ", error: ", local.reason));
  }
  ASSIGN_OR_RETURN(Readiness ready, Check(*session, options_.ready_op));
  if (!ready.ready) {
    WithdrawReady(master);
    return absl::FailedPreconditionError(absl::StrCat(
        "Init operations did not make model ready. Init op: ", OpName(options.init_op),
        ", init fn: ", init_fn_name, ", local_init_op: ", OpName(options_.local_init_op),
        ", error: ", ready.reason));
  }
  if (restored.has_value()) {
    LOG(INFO) << "Restored model from " << *restored << " on " << TargetName(master);
  } else if (already_ready) {
    LOG(INFO) << "Model was already initialized on " << TargetName(master);
  } else {
    LOG(INFO) << "Initialized model on " << TargetName(master)
              << " (init_op: " << OpName(options.init_op) << ", init_fn: " << init_fn_name << ")";
  }
  MarkReady(master, options.config);
  return result;
}

absl::StatusOr<RecoveredSession> SessionManager::RecoverSession(
    const std::string &master, const RecoverSessionOptions &options) {
  RecoveredSession result;
  ASSIGN_OR_RETURN(result.session, NewClientSession(master, options.config));
  ASSIGN_OR_RETURN(std::optional<std::string> restored,
                   RestoreCheckpoint(*result.session, options));
  // local_init_op runs whether or not a checkpoint was restored (as TensorFlow
  // does).
  ASSIGN_OR_RETURN(Readiness local, TryRunLocalInit(*result.session));
  if (!restored.has_value()) return result;
  if (!local.ready) {
    LOG(INFO) << "Restoring model from " << *restored
              << " did not make model ready for local init: " << local.reason;
    return result;
  }
  ASSIGN_OR_RETURN(Readiness ready, Check(*result.session, options_.ready_op));
  if (!ready.ready) {
    LOG(INFO) << "Restoring model from " << *restored
              << " did not make model ready: " << ready.reason;
    return result;
  }
  LOG(INFO) << "Restored model from " << *restored << " on " << TargetName(master);
  result.initialized = true;
  MarkReady(master, options.config);
  return result;
}

absl::StatusOr<std::unique_ptr<ClientSession>> SessionManager::WaitForSession(
    const std::string &master, absl::Duration max_wait, const std::optional<ConfigProto> &config) {
  Clock *clock = options_.clock;
  const absl::Time start = clock->Now();
  const absl::Time deadline = start + std::max(max_wait, absl::ZeroDuration());
  // One session for every check (TensorFlow opens a new one per poll).
  ASSIGN_OR_RETURN(std::unique_ptr<ClientSession> session, NewClientSession(master, config));

  std::unique_ptr<ReadinessChannel> owned;
  absl::Status channel_error;
  ReadinessChannel *channel =
      ChannelFor(master, options_.readiness_channel, options_.clock,
                 options_.session_options.resource_mgr, &owned, &channel_error);
  const absl::Duration max_poll =
      std::max(std::min(kMaxPoll, options_.recovery_wait), absl::Milliseconds(1));
  absl::Duration poll = std::min(kMinPoll, max_poll);
  absl::Time next_log = start;
  bool released = false;  // The last channel wait said "ready".
  while (true) {
    ASSIGN_OR_RETURN(Readiness ready, LocalInitAndCheck(*session));
    if (ready.ready) {
      LOG(INFO) << "Model is ready on " << TargetName(master) << " after waiting "
                << absl::FormatDuration(clock->Now() - start);
      return session;
    }
    const absl::Time now = clock->Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("Session was not ready after waiting ",
                                                      absl::FormatDuration(max_wait), " on ",
                                                      TargetName(master), ": ", ready.reason));
    }
    if (now >= next_log) {
      std::string how =
          channel != nullptr
              ? absl::StrCat("readiness record '", options_.readiness_key, "'")
              : absl::StrCat(
                    "polling the ready op (no readiness channel: ", channel_error.message(), ")");
      if (channel != nullptr && !channel_error.ok()) {
        absl::StrAppend(&how, " (last channel error: ", channel_error.message(), ")");
      }
      if (released) how += "; the record says ready but the ready op does not agree";
      LOG(INFO) << "Waiting for model to be ready on " << TargetName(master) << " via " << how
                << ": " << ready.reason;
      next_log = now + kWaitLogInterval;
    }
    const absl::Duration slice = std::min(poll, deadline - now);
    poll = std::min(poll * 2, max_poll);
    if (channel != nullptr && !released) {
      absl::StatusOr<bool> marked = channel->WaitForReady(options_.readiness_key, slice);
      if (marked.ok() && *marked) {
        released = true;  // Confirm right away.
        continue;
      }
      if (!marked.ok()) channel_error = marked.status();
      // A wait that returned early (an error, or a fake clock) still waits out
      // the slice.
      const absl::Duration waited = clock->Now() - now;
      if (waited < slice) clock->SleepFor(slice - waited);
    } else {
      // No channel, or its record disagrees with the ready op: poll with
      // backoff.
      released = false;
      clock->SleepFor(slice);
    }
  }
}

}  // namespace overseer

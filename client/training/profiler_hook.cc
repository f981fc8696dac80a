#include "client/training/profiler_hook.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/graph/variables.h"
#include "client/training/hook_util.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/types.h"

namespace overseer {
namespace {

// `s` as a JSON string literal, quotes included.
std::string Quote(absl::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// The op and the inputs of a timeline label "name = Op(a, b)"; the label itself and
// no inputs when it has another form.
std::pair<std::string, std::string> OpAndInputs(const std::string& label) {
  const size_t eq = label.find(" = ");
  const size_t open = label.find('(', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || open == std::string::npos || label.back() != ')') {
    return {label, ""};
  }
  return {label.substr(eq + 3, open - eq - 3), label.substr(open + 1, label.size() - open - 2)};
}

std::string ShapeString(const TensorShapeProto& shape) {
  std::string out = "[";
  for (int i = 0; i < shape.dim_size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",", shape.dim(i).size());
  }
  return out + "]";
}

}  // namespace

std::string ChromeTraceFromStepStats(const StepStats& stats) {
  std::string out = "{\"traceEvents\":[";
  bool first = true;
  auto event = [&](const std::string& json) {
    absl::StrAppend(&out, first ? "\n" : ",\n", json);
    first = false;
  };
  // One pid per device, in order of first appearance.
  std::map<std::string, int> pids;
  for (const DeviceStepStats& dev : stats.dev_stats()) {
    auto [it, added] = pids.emplace(dev.device(), static_cast<int>(pids.size()));
    if (!added) continue;
    event(absl::StrCat("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", it->second,
                       ",\"args\":{\"name\":", Quote(dev.device() + " Compute"), "}}"));
  }
  for (const DeviceStepStats& dev : stats.dev_stats()) {
    const int pid = pids.at(dev.device());
    for (const NodeExecStats& ns : dev.node_stats()) {
      auto [op, inputs] = OpAndInputs(ns.timeline_label());
      if (op.empty()) op = ns.node_name();
      std::string args = absl::StrCat("\"name\":", Quote(ns.node_name()), ",\"op\":", Quote(op));
      if (!inputs.empty()) absl::StrAppend(&args, ",\"inputs\":", Quote(inputs));
      for (const NodeOutput& output : ns.output()) {
        const TensorDescription& d = output.tensor_description();
        absl::StrAppend(
            &args, ",\"output", output.slot(), "\":",
            Quote(absl::StrCat(DataTypeString(d.dtype()), " ", ShapeString(d.shape()), " ",
                               d.allocation_description().requested_bytes(), " bytes")));
      }
      event(absl::StrCat("{\"name\":", Quote(op), ",\"cat\":\"Op\",\"ph\":\"X\",\"pid\":", pid,
                         ",\"tid\":", ns.thread_id(), ",\"ts\":", ns.all_start_micros(),
                         ",\"dur\":", ns.all_end_rel_micros(), ",\"args\":{", args, "}}"));
    }
  }
  absl::StrAppend(&out, "\n]}\n");
  return out;
}

absl::StatusOr<std::unique_ptr<ProfilerHook>> ProfilerHook::Create(
    const ProfilerHookOptions& options) {
  if (options.output_dir.empty()) {
    return absl::InvalidArgumentError("ProfilerHook: output_dir must be given");
  }
  absl::StatusOr<SecondOrStepTimer> timer =
      SecondOrStepTimer::Create(options.save_secs, options.save_steps, options.clock);
  if (!timer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("ProfilerHook: ", timer.status().message()));
  }
  return std::unique_ptr<ProfilerHook>(new ProfilerHook(options, *timer));
}

absl::Status ProfilerHook::Begin(const Scope& scope) {
  next_step_.reset();
  ASSIGN_OR_RETURN(global_step_, hook_internal::GlobalStepTensor(scope, "ProfilerHook"));
  return absl::OkStatus();
}

absl::StatusOr<SessionRunArgs> ProfilerHook::BeforeRun(SessionRunContext*) {
  tracing_ = next_step_.has_value() && timer_.ShouldTriggerForStep(*next_step_);
  SessionRunArgs args;
  args.fetches = {global_step_};
  if (tracing_) args.options.set_trace_level(RunOptions::FULL_TRACE);
  return args;
}

absl::Status ProfilerHook::AfterRun(SessionRunContext* context, const SessionRunValues& values) {
  ASSIGN_OR_RETURN(const int64_t stale_step, StepValue(values.results[0]));
  // The first run only starts the interval.
  if (!next_step_.has_value()) timer_.UpdateLastTriggeredStep(stale_step);
  int64_t step = stale_step + 1;
  if (tracing_) {
    ASSIGN_OR_RETURN(step, hook_internal::ReadGlobalStep(context->session(), global_step_));
    timer_.UpdateLastTriggeredStep(step);
    RETURN_IF_ERROR(Write(step, values.run_metadata.step_stats()));
  }
  next_step_ = step + 1;
  return absl::OkStatus();
}

absl::Status ProfilerHook::Write(int64_t step, const StepStats& stats) {
  FileSystem* fs = options_.file_system != nullptr ? options_.file_system : FileSystem::Posix();
  RETURN_IF_ERROR(fs->CreateDirs(options_.output_dir));
  const std::string path = absl::StrCat(options_.output_dir, "/timeline-", step, ".json");
  const std::string temp = path + ".tmp";
  const absl::Status stale = fs->DeleteFile(temp);  // What a crash mid-write left.
  if (!stale.ok() && !absl::IsNotFound(stale)) return stale;
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(temp));
  RETURN_IF_ERROR(file->Append(ChromeTraceFromStepStats(stats)));
  RETURN_IF_ERROR(file->Close());
  RETURN_IF_ERROR(fs->RenameFile(temp, path));
  LOG(INFO) << "ProfilerHook: wrote the timeline of global step " << step << " to " << path;
  return absl::OkStatus();
}

}  // namespace overseer

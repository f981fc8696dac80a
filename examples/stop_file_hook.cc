#include "examples/stop_file_hook.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace overseer {
namespace examples {

absl::Status StopFileHook::Begin(const Scope& scope) {
  // Finds the global step now, so that a graph without one fails at the start.
  StopAtStepHookOptions options;
  options.last_step = 0;
  ASSIGN_OR_RETURN(std::unique_ptr<StopAtStepHook> probe, StopAtStepHook::Create(options));
  RETURN_IF_ERROR(probe->Begin(scope));
  scope_ = std::make_unique<Scope>(scope);
  return absl::OkStatus();
}

absl::StatusOr<SessionRunArgs> StopFileHook::BeforeRun(SessionRunContext* context) {
  if (stop_ != nullptr) return stop_->BeforeRun(context);
  return SessionRunArgs();
}

absl::Status StopFileHook::AfterRun(SessionRunContext* context, const SessionRunValues& values) {
  if (stop_ != nullptr) return stop_->AfterRun(context, values);
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return absl::OkStatus();  // Not yet: train on.
  std::ifstream in(path_);
  std::stringstream text;
  text << in.rdbuf();
  int64_t step = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text.str()), &step) || step < 0) {
    return absl::InvalidArgumentError(absl::StrCat("stop file ", path_, " holds \"", text.str(),
                                                   "\", not a global step to stop at"));
  }
  StopAtStepHookOptions options;
  options.last_step = step;
  ASSIGN_OR_RETURN(stop_, StopAtStepHook::Create(options));
  RETURN_IF_ERROR(stop_->Begin(*scope_));
  last_step_ = step;
  // This run fetched nothing for it: the next run checks the step.
  return absl::OkStatus();
}

}  // namespace examples
}  // namespace overseer

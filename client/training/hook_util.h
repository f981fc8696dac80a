#ifndef OVERSEER_CLIENT_TRAINING_HOOK_UTIL_H_
#define OVERSEER_CLIENT_TRAINING_HOOK_UTIL_H_

// Helpers shared by the standard hooks (private to //client/training:basic_session_run_hooks).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "core/tensor.h"

namespace overseer {
namespace hook_internal {

// The global step's value tensor ("global_step/read:0"); FAILED_PRECONDITION "global
// step should be created to use <hook>" if the graph has none.
absl::StatusOr<Output> GlobalStepTensor(const Scope& scope, absl::string_view hook);

// The global step variable's node name ("global_step"); same errors.
absl::StatusOr<std::string> GlobalStepName(const Scope& scope, absl::string_view hook);

// Runs `step` in `session` and returns its value.
absl::StatusOr<int64_t> ReadGlobalStep(ClientSession* session, const Output& step);

// A tensor's values as a log line shows them: "42", "[1 2 3]", with at most
// `max_entries` values ("..." after).
std::string FormatTensorValue(const Tensor& t, int max_entries = 20);

}  // namespace hook_internal
}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_HOOK_UTIL_H_

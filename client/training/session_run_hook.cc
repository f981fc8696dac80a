#include "client/training/session_run_hook.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace overseer {

absl::StatusOr<Output> Fetch::Resolve(const ClientGraph& graph) const {
  if (name_.empty()) {
    if (!output_.valid()) {
      return absl::InvalidArgumentError("a fetched tensor is null (a failed builder?)");
    }
    if (output_.node()->graph() != &graph) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", output_.name(), "' belongs to a different graph than the session's"));
    }
    return output_;
  }
  absl::StatusOr<Output> found = graph.FindOutput(name_);
  if (!found.ok()) {
    return absl::NotFoundError(absl::StrCat("fetched tensor '", name_,
                                            "' is not in the graph: ", found.status().message()));
  }
  if (!absl::StrContains(name_, ':') && found->node()->num_outputs() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("fetched name '", name_, "' is ambiguous: node '", name_, "' has ",
                     found->node()->num_outputs(), " outputs; name one as '", name_, ":k'"));
  }
  return *found;
}

std::string Fetch::DebugName() const {
  if (!name_.empty()) return name_;
  return output_.valid() ? output_.name() : "<null>";
}

}  // namespace overseer

#include "core/cluster/cluster_def.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace overseer {

ClusterDef ToClusterDef(const ClusterSpec& spec) {
  ClusterDef def;
  for (const auto& [name, addresses] : spec.jobs()) {
    JobDef* job = def.add_job();
    job->set_name(name);
    for (int i = 0; i < static_cast<int>(addresses.size()); ++i) {
      (*job->mutable_tasks())[i] = addresses[i];
    }
  }
  return def;
}

absl::StatusOr<ClusterSpec> FromClusterDef(const ClusterDef& def) {
  ClusterSpec spec;
  for (const JobDef& job : def.job()) {
    std::vector<std::string> addresses(job.tasks().size());
    for (const auto& [index, address] : job.tasks()) {
      if (index < 0 || index >= static_cast<int>(addresses.size())) {
        return absl::InvalidArgumentError(absl::StrCat("job '", job.name(), "' has task index ",
                                                       index, " but only ", addresses.size(),
                                                       " tasks; indices must be 0..n-1"));
      }
      addresses[index] = address;
    }
    RETURN_IF_ERROR(spec.AddJob(job.name(), std::move(addresses)));
  }
  return spec;
}

}  // namespace overseer

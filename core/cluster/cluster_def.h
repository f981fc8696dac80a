#ifndef OVERSEER_CORE_CLUSTER_CLUSTER_DEF_H_
#define OVERSEER_CORE_CLUSTER_CLUSTER_DEF_H_

// Conversion between ClusterSpec (parsed from flags or TF_CONFIG) and the ClusterDef
// proto that travels in CreateWorkerSessionRequest.

#include "core/cluster/cluster_spec.h"
#include "proto/cluster.pb.h"

namespace overseer {

// The same jobs and addresses, jobs in name order.
ClusterDef ToClusterDef(const ClusterSpec& spec);

// The inverse. INVALID_ARGUMENT (as ClusterSpec::AddJob) for a bad job name or address,
// or for a job whose task indices are not 0..n-1.
absl::StatusOr<ClusterSpec> FromClusterDef(const ClusterDef& def);

}  // namespace overseer

#endif  // OVERSEER_CORE_CLUSTER_CLUSTER_DEF_H_

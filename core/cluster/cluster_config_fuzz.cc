// Fuzzes what a process reads from its environment and flags to learn its cluster:
// TF_CONFIG JSON, --cluster_spec, a task address and a rendezvous key. Any input gets
// a status, never a crash; what parses is self-consistent.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "core/cluster/cluster_spec.h"
#include "core/cluster/rendezvous_key.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<overseer::TfConfig> config = overseer::ParseTfConfig(input);
  if (config.ok()) {
    // A parsed cluster prints as a spec that parses back to the same cluster.
    const std::string printed = config->cluster.ToString();
    absl::StatusOr<overseer::ClusterSpec> again = overseer::ClusterSpec::Parse(printed);
    if (!again.ok() || again->ToString() != printed) std::abort();
  }
  (void)overseer::ClusterSpec::Parse(input);
  (void)overseer::ValidateAddress(input);
  (void)overseer::ParseRendezvousKey(input);
  return 0;
}

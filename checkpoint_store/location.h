#ifndef OVERSEER_CHECKPOINT_STORE_LOCATION_H_
#define OVERSEER_CHECKPOINT_STORE_LOCATION_H_

// Checkpoint locations: a local directory (embedded mode: an in-process CheckpointStore
// rooted there, run "") or "grpc://host:port[/run]" (a checkpoint_store_server; the
// gRPC client library registers the scheme). Stores are opened once per process and
// shared: this registry is how Save/Restore kernels on any device reach the store.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "checkpoint_store/checkpoint_store_interface.h"

namespace overseer {

struct CheckpointLocation {
  CheckpointStoreInterface* store = nullptr;  // Process-lifetime; never deleted.
  std::string run;
};

// Resolves `location`, opening its store on first use. INVALID_ARGUMENT for an empty
// location or an unknown scheme ("x://"); UNAVAILABLE/other errors of opening.
// Thread-safe.
absl::StatusOr<CheckpointLocation> ResolveCheckpointLocation(const std::string& location);

// Opens a store for "scheme://authority" (e.g. "grpc://localhost:5000"). The rest of a
// location after the authority is the run.
using CheckpointStoreFactory =
    std::function<absl::StatusOr<std::unique_ptr<CheckpointStoreInterface>>(
        const std::string& authority)>;
// Called from a static initialiser of the implementing library. Thread-safe.
void RegisterCheckpointStoreScheme(const std::string& scheme, CheckpointStoreFactory factory);

// Splits a checkpoint prefix "<location>/<name>" at its last '/'. INVALID_ARGUMENT if
// there is no '/' (use "./name" for the working directory) or the name is empty.
absl::Status SplitCheckpointPrefix(const std::string& prefix, std::string* location,
                                   std::string* name);

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_LOCATION_H_

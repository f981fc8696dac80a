#ifndef OVERSEER_CHECKPOINT_STORE_LOCATION_H_
#define OVERSEER_CHECKPOINT_STORE_LOCATION_H_

// Checkpoint locations: a local directory (embedded mode: an in-process CheckpointStore
// rooted there, run "") or "grpc://host:port[/run]" (a checkpoint_store_server; the
// gRPC client library registers the scheme). Stores are opened once per process and
// shared: this registry is how Save/Restore kernels on any device reach the store.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint_store/checkpoint_store_interface.h"

namespace overseer {

struct CheckpointLocation {
  CheckpointStoreInterface* store = nullptr;  // Process-lifetime; never deleted.
  std::string run;
};

// Resolves `location`, opening its store on first use. INVALID_ARGUMENT for an empty
// location, an unknown scheme ("x://") or a malformed store ("grpc://host" without a
// port); UNAVAILABLE/other errors of opening.
// Thread-safe.
absl::StatusOr<CheckpointLocation> ResolveCheckpointLocation(const std::string& location);

// Confines the local directories that ResolveCheckpointLocation opens to `roots`
// (existing directories). Until called, any local directory is accepted: a trainer's
// checkpoints are its own. A server that runs kernels of remote graphs (worker_server,
// --checkpoint_roots, none by default) calls it once before serving, after which a local
// location is accepted only if it is one of the roots or under one, by its components
// (no "..") and with its symbolic links resolved; anything else is PERMISSION_DENIED
// before any file or directory is touched. An empty `roots` refuses every local
// location. INVALID_ARGUMENT for a relative or missing root. Thread-safe.
absl::Status RestrictLocalCheckpointLocations(const std::vector<std::string>& roots);

// Opens the store "scheme://authority" (e.g. "grpc://localhost:5000"), the location up
// to the first '/' after the authority (the rest is the run); INVALID_ARGUMENT if the
// scheme's parser refuses the authority.
using CheckpointStoreFactory =
    std::function<absl::StatusOr<std::unique_ptr<CheckpointStoreInterface>>(
        const std::string& store)>;
// Called from a static initialiser of the implementing library. Thread-safe.
void RegisterCheckpointStoreScheme(const std::string& scheme, CheckpointStoreFactory factory);

// Splits a checkpoint prefix "<location>/<name>" at its last '/'. INVALID_ARGUMENT if
// there is no '/' (use "./name" for the working directory) or the name is empty.
absl::Status SplitCheckpointPrefix(const std::string& prefix, std::string* location,
                                   std::string* name);

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_LOCATION_H_

#include "checkpoint_store/location.h"

#include <map>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint_store/checkpoint_store.h"
#include "core/io/file_system.h"
#include "core/io/rooted_file_system.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

struct Root {
  std::string path;  // As configured, without a trailing '/'.
  std::string real;  // Its RealPath.
};

struct Registry {
  absl::Mutex mu;
  // Set by RestrictLocalCheckpointLocations; unset: any local directory.
  std::optional<std::vector<Root>> local_roots ABSL_GUARDED_BY(mu);
  std::map<std::string, CheckpointStoreFactory> factories ABSL_GUARDED_BY(mu);
  std::map<std::string, std::unique_ptr<CheckpointStoreInterface>> stores ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* const registry = new Registry();
  return *registry;
}

// OK if the local directory `location` may be opened under `roots`.
absl::Status CheckLocalLocation(const std::vector<Root>& roots, const std::string& location) {
  std::vector<std::string> configured;
  for (const Root& root : roots) {
    if (IsLexicallyUnder(root.path, location)) {
      return CheckResolvesUnder(FileSystem::Posix(), root.path, root.real, location);
    }
    configured.push_back(root.path);
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "checkpoint location '", location, "' is not under this server's --checkpoint_roots (",
      configured.empty() ? "none set" : absl::StrJoin(configured, ","),
      "); save to a checkpoint store (grpc://host:port/run) or start the server with "
      "--checkpoint_roots naming the directory"));
}

}  // namespace

absl::Status RestrictLocalCheckpointLocations(const std::vector<std::string>& roots) {
  std::vector<Root> resolved;
  for (std::string root : roots) {
    if (root.empty() || root[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint root '", root, "' must be an absolute path"));
    }
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    absl::StatusOr<std::string> real = FileSystem::Posix()->RealPath(root);
    if (!real.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint root '", root, "': ", real.status().message()));
    }
    resolved.push_back(Root{root, *real});
  }
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  r.local_roots = std::move(resolved);
  return absl::OkStatus();
}

void RegisterCheckpointStoreScheme(const std::string& scheme, CheckpointStoreFactory factory) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  r.factories[scheme] = std::move(factory);
}

absl::StatusOr<CheckpointLocation> ResolveCheckpointLocation(const std::string& location) {
  if (location.empty()) return absl::InvalidArgumentError("empty checkpoint location");
  Registry& r = GetRegistry();
  std::string key = location;
  std::string run;
  std::string scheme;
  const size_t sep = location.find("://");
  if (sep != std::string::npos) {
    scheme = location.substr(0, sep);
    const size_t slash = location.find('/', sep + 3);
    key = location.substr(0, slash);
    if (slash != std::string::npos) run = location.substr(slash + 1);
    while (!run.empty() && run.back() == '/') run.pop_back();
  } else {
    while (key.size() > 1 && key.back() == '/') key.pop_back();
  }
  absl::MutexLock lock(&r.mu);
  if (scheme.empty() && r.local_roots.has_value()) {
    RETURN_IF_ERROR(CheckLocalLocation(*r.local_roots, key));
  }
  auto it = r.stores.find(key);
  if (it == r.stores.end()) {
    std::unique_ptr<CheckpointStoreInterface> store;
    if (scheme.empty()) {
      // The store is shared by every user of the location in this process, whatever
      // their clocks; it reads its clock only for checkpoint timestamps and metrics.
      ASSIGN_OR_RETURN(std::unique_ptr<CheckpointStore> local,
                       CheckpointStore::Open(FileSystem::Posix(), key, Clock::Real()));
      store = std::move(local);
    } else {
      auto factory = r.factories.find(scheme);
      if (factory == r.factories.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "checkpoint location ", location, " has unknown scheme ", scheme,
            "://; use a local directory or grpc://host:port/run (link the gRPC client)"));
      }
      ASSIGN_OR_RETURN(store, factory->second(key));
    }
    it = r.stores.emplace(key, std::move(store)).first;
  }
  return CheckpointLocation{it->second.get(), run};
}

absl::Status SplitCheckpointPrefix(const std::string& prefix, std::string* location,
                                   std::string* name) {
  const size_t slash = prefix.rfind('/');
  const size_t scheme = prefix.find("://");
  if (slash == std::string::npos || slash + 1 == prefix.size() ||
      (scheme != std::string::npos && slash < scheme + 3)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint prefix '", prefix, "' must be <directory or grpc://host:port/run>/<name>"));
  }
  *location = slash == 0 ? "/" : prefix.substr(0, slash);
  *name = prefix.substr(slash + 1);
  return absl::OkStatus();
}

}  // namespace overseer

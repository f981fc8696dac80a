#include "checkpoint_store/location.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint_store/checkpoint_store.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

struct Registry {
  absl::Mutex mu;
  std::map<std::string, CheckpointStoreFactory> factories ABSL_GUARDED_BY(mu);
  std::map<std::string, std::unique_ptr<CheckpointStoreInterface>> stores ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* const registry = new Registry();
  return *registry;
}

}  // namespace

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

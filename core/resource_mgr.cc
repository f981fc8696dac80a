#include "core/resource_mgr.h"

namespace overseer {

void Var::PrepareForUpdate() {
  if (tensor_.IsInitialized() && !tensor_.RefCountIsOne()) tensor_ = tensor_.DeepCopy();
}

std::string Var::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat(
      "variable of ", DataTypeString(dtype_), " ",
      tensor_.IsInitialized() ? tensor_.shape().DebugString() : std::string("(uninitialized)"));
}

int64_t Var::MemoryUsed() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(tensor_.TotalBytes());
}

ResourceMgr* ResourceMgr::Default() {
  static ResourceMgr* mgr = new ResourceMgr();
  return mgr;
}

absl::StatusOr<std::shared_ptr<ResourceBase>> ResourceMgr::LookupBase(
    const std::string& container, const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto c = containers_.find(container);
  if (c != containers_.end()) {
    auto r = c->second.find(name);
    if (r != c->second.end()) return r->second;
  }
  return absl::NotFoundError(absl::StrCat("resource ", container, "/", name, " does not exist"));
}

void ResourceMgr::Cleanup(const std::string& container) {
  Container dropped;  // Destroyed outside the lock.
  absl::MutexLock lock(&mu_);
  auto it = containers_.find(container);
  if (it == containers_.end()) return;
  dropped.swap(it->second);
  containers_.erase(it);
}

void ResourceMgr::Clear() {
  std::map<std::string, Container> dropped;
  absl::MutexLock lock(&mu_);
  dropped.swap(containers_);
}

std::vector<std::string> ResourceMgr::Containers() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, c] : containers_) names.push_back(name);
  return names;
}

int64_t ResourceMgr::MemoryUsed() const {
  absl::MutexLock lock(&mu_);
  int64_t total = 0;
  for (const auto& [name, c] : containers_) {
    for (const auto& [rname, r] : c) total += r->MemoryUsed();
  }
  return total;
}

}  // namespace overseer

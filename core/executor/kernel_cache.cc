#include "core/executor/kernel_cache.h"

#include <utility>

namespace overseer {

absl::StatusOr<std::shared_ptr<OpKernel>> KernelCache::GetOrCreate(const NodeDef& def) {
  {
    absl::MutexLock lock(&mu_);
    auto it = kernels_.find(def.name());
    if (it != kernels_.end()) return it->second;
  }
  // Built outside the lock: Init may be slow (large constants).
  auto created = CreateOpKernel(def);
  if (!created.ok()) return created.status();
  std::shared_ptr<OpKernel> kernel = std::move(*created);
  absl::MutexLock lock(&mu_);
  // If another executor raced us, keep the first so that state is never split.
  auto [it, inserted] = kernels_.emplace(def.name(), std::move(kernel));
  return it->second;
}

void KernelCache::Clear() {
  absl::MutexLock lock(&mu_);
  kernels_.clear();
}

int KernelCache::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(kernels_.size());
}

}  // namespace overseer

#ifndef OVERSEER_CORE_RESOURCE_MGR_H_
#define OVERSEER_CORE_RESOURCE_MGR_H_

// Containers of named resources (variables, queues) shared by every session of a
// process (or of a worker task): a variable initialised through one session is visible
// to another and survives the session's close. Clearing a container drops them.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/tensor.h"

namespace overseer {

class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  virtual std::string DebugString() const = 0;
  // Bytes held, for metrics.
  virtual int64_t MemoryUsed() const { return 0; }
};

// A variable: a tensor that persists across steps, guarded by its mutex. Kernels that
// read it take a Tensor copy (shares the buffer) under the lock; kernels that update
// it in place first make the buffer exclusive (copy-on-write) so that values read
// earlier in a step never change under the reader.
class Var : public ResourceBase {
 public:
  explicit Var(DataType dtype) : dtype_(dtype) {}
  DataType dtype() const { return dtype_; }
  absl::Mutex* mu() ABSL_LOCK_RETURNED(mu_) { return &mu_; }
  // The value; uninitialised (!IsInitialized()) until first assigned.
  Tensor* tensor() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return &tensor_; }
  bool is_initialized() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return tensor_.IsInitialized(); }
  // Makes tensor() the only holder of its buffer (copying it if shared), so that an
  // in-place update is invisible to earlier readers.
  void PrepareForUpdate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string DebugString() const override;
  int64_t MemoryUsed() const override;

 private:
  const DataType dtype_;
  mutable absl::Mutex mu_;
  Tensor tensor_ ABSL_GUARDED_BY(mu_);
};

// Thread-safe.
class ResourceMgr {
 public:
  static constexpr const char* kDefaultContainer = "localhost";

  ResourceMgr() = default;
  ResourceMgr(const ResourceMgr&) = delete;
  ResourceMgr& operator=(const ResourceMgr&) = delete;

  // The process-wide manager used by DirectSession. Never null.
  static ResourceMgr* Default();

  // The resource `name` in `container`, created by `creator` if absent. An existing
  // resource of another type is INVALID_ARGUMENT naming both.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> LookupOrCreate(
      const std::string& container, const std::string& name,
      const std::function<absl::StatusOr<std::shared_ptr<T>>()>& creator);

  // NOT_FOUND if absent; INVALID_ARGUMENT for another type.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> Lookup(const std::string& container,
                                            const std::string& name) const;

  // Drops every resource of `container` (kernels holding one keep it alive).
  void Cleanup(const std::string& container);
  // Drops every container.
  void Clear();
  std::vector<std::string> Containers() const;
  int64_t MemoryUsed() const;

 private:
  absl::StatusOr<std::shared_ptr<ResourceBase>> LookupBase(const std::string& container,
                                                           const std::string& name) const;
  using Container = std::map<std::string, std::shared_ptr<ResourceBase>>;
  mutable absl::Mutex mu_;
  std::map<std::string, Container> containers_ ABSL_GUARDED_BY(mu_);
};

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::Lookup(const std::string& container,
                                                       const std::string& name) const {
  auto base = LookupBase(container, name);
  if (!base.ok()) return base.status();
  auto typed = std::dynamic_pointer_cast<T>(*base);
  if (typed == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("resource ", container, "/", name, " is a ",
                                                   (*base)->DebugString(),
                                                   ", not the type this op expects"));
  }
  return typed;
}

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::LookupOrCreate(
    const std::string& container, const std::string& name,
    const std::function<absl::StatusOr<std::shared_ptr<T>>()>& creator) {
  absl::MutexLock lock(&mu_);
  auto& slot = containers_[container][name];
  if (slot == nullptr) {
    auto created = creator();
    if (!created.ok()) {
      containers_[container].erase(name);
      return created.status();
    }
    slot = *created;
  }
  auto typed = std::dynamic_pointer_cast<T>(slot);
  if (typed == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("resource ", container, "/", name, " is a ",
                                                   slot->DebugString(),
                                                   ", not the type this op expects"));
  }
  return typed;
}

}  // namespace overseer

#endif  // OVERSEER_CORE_RESOURCE_MGR_H_

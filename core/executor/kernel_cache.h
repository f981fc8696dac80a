#ifndef OVERSEER_CORE_EXECUTOR_KERNEL_CACHE_H_
#define OVERSEER_CORE_EXECUTOR_KERNEL_CACHE_H_

// One kernel per node name, shared by every executor of a session: a stateful kernel
// (random generators, variables, queues) then keeps its state across the session's
// step signatures, and no kernel is built twice.

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/op_kernel.h"
#include "proto/node_def.pb.h"

namespace overseer {

// Thread-safe.
class KernelCache {
 public:
  KernelCache() = default;
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The kernel of node `def.name()`, built by CreateOpKernel(def) on first use. A
  // session's nodes never change, so later calls with the same name reuse it whatever
  // their inputs (a pruned graph rewrites fed inputs). Errors are CreateOpKernel's and
  // are not cached.
  absl::StatusOr<std::shared_ptr<OpKernel>> GetOrCreate(const NodeDef& def);

  // Drops every kernel (executors holding one keep it alive).
  void Clear();
  int size() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<OpKernel>> kernels_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CORE_EXECUTOR_KERNEL_CACHE_H_

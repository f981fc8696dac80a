#ifndef OVERSEER_CHECKPOINT_STORE_BUFFER_POOL_H_
#define OVERSEER_CHECKPOINT_STORE_BUFFER_POOL_H_

// Byte buffers kept with their capacity for reuse by later reads and messages.
//
// Tensor bytes pass through buffers of megabytes (a tensor read from a data file, a
// message's bytes field, a tensor assembled from chunks). A fresh buffer costs a page
// fault per 4 KiB page the first time it is written (about 3 s per GiB on a
// virtualised host, far more than reading the disk), so the store and its client take
// buffers from a pool and give them back instead of allocating per tensor or per call.
//
//   std::string buffer = pool.Take();   // The largest cached buffer, or an empty one.
//   buffer.resize(n);                   // No new pages while n <= its capacity.
//   ...
//   pool.Give(std::move(buffer));

#include <cstddef>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace overseer {

// Makes `buffer`'s capacity at least `capacity` bytes. A buffer that is large enough is
// left as it is; otherwise it is replaced by new, empty storage (the old contents are
// dropped, not copied) advised to use transparent huge pages where the host allows
// them, so that its first touch faults once per 2 MiB instead of once per 4 KiB.
void ReserveBuffer(std::string* buffer, size_t capacity);

// Thread-safe.
class BufferPool {
 public:
  // Keeps given buffers while their capacities add up to at most `max_cached_bytes`.
  explicit BufferPool(size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // The cached buffer of the largest capacity (its contents unspecified, its capacity
  // kept), or an empty string if none is cached. A caller that takes several buffers
  // takes the one that must be largest first.
  std::string Take();

  // Caches `buffer` for a later Take, or frees it if the pool would exceed its limit.
  void Give(std::string buffer);

  // Sum of the cached buffers' capacities.
  size_t cached_bytes() const;

 private:
  const size_t max_cached_bytes_;
  mutable absl::Mutex mu_;
  std::vector<std::string> buffers_ ABSL_GUARDED_BY(mu_);
  size_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_BUFFER_POOL_H_

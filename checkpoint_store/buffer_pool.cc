#include "checkpoint_store/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace overseer {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

}  // namespace

void ReserveBuffer(std::string* buffer, size_t capacity) {
  if (buffer->capacity() >= capacity) return;
  std::string grown;
  grown.reserve(capacity);
  // Advise the whole 2 MiB pages inside the new storage, before anything touches it.
  const uintptr_t begin = reinterpret_cast<uintptr_t>(grown.data());
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = (begin + capacity) & ~(kHugePage - 1);
  if (last > first) {
    madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // Advice only.
  }
  buffer->swap(grown);
}

std::string BufferPool::Take() {
  absl::MutexLock lock(&mu_);
  if (buffers_.empty()) return std::string();
  auto largest = std::max_element(
      buffers_.begin(), buffers_.end(),
      [](const std::string& a, const std::string& b) { return a.capacity() < b.capacity(); });
  std::string buffer = std::move(*largest);
  buffers_.erase(largest);
  cached_bytes_ -= buffer.capacity();
  return buffer;
}

void BufferPool::Give(std::string buffer) {
  const size_t bytes = buffer.capacity();
  absl::MutexLock lock(&mu_);
  if (cached_bytes_ + bytes > max_cached_bytes_) return;  // Freed on return.
  cached_bytes_ += bytes;
  buffers_.push_back(std::move(buffer));
}

size_t BufferPool::cached_bytes() const {
  absl::MutexLock lock(&mu_);
  return cached_bytes_;
}

}  // namespace overseer

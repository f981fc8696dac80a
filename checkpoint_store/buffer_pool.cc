#include "checkpoint_store/buffer_pool.h"

#include <utility>

namespace overseer {

std::string BufferPool::Take() {
  absl::MutexLock lock(&mu_);
  if (buffers_.empty()) return std::string();
  std::string buffer = std::move(buffers_.back());
  buffers_.pop_back();
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

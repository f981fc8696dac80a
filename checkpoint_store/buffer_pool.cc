#include "checkpoint_store/buffer_pool.h"

#include <algorithm>
#include <utility>

namespace overseer {

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

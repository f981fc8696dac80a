#include "core/process_settings.h"

#include <cstdint>

#include "absl/flags/flag.h"
#include "core/absl_config.h"
#include "core/malloc_config.h"
#include "core/tensor.h"

ABSL_FLAG(bool, tune_malloc, true,
          "Keep allocations up to 32 MiB in glibc's heaps and up to 256 MiB of free memory "
          "per arena for reuse (docs/settings.md); false leaves glibc's defaults.");

ABSL_FLAG(int64_t, tensor_buffer_cache_bytes, -1,
          "Keep up to this many bytes of freed tensor buffers of 1 MiB and up for reuse "
          "(docs/settings.md); -1: an eighth of physical memory, at most 8 GiB; 0: off.");

ABSL_FLAG(int64_t, tensor_memory_budget_bytes, -1,
          "Fail a step with RESOURCE_EXHAUSTED, naming the node, when a tensor it allocates "
          "would take the process's live tensor bytes past this budget (docs/settings.md); "
          "-1: physical memory, or the container's limit if lower; 0: no budget.");

namespace overseer {

void ApplyProcessSettings() {
  ConfigureMutexDeadlockDetection();
  if (absl::GetFlag(FLAGS_tune_malloc)) ConfigureMalloc();
  const int64_t cache_bytes = absl::GetFlag(FLAGS_tensor_buffer_cache_bytes);
  SetTensorBufferCacheBytes(cache_bytes < 0 ? DefaultTensorBufferCacheBytes()
                                            : static_cast<size_t>(cache_bytes));
  const int64_t budget = absl::GetFlag(FLAGS_tensor_memory_budget_bytes);
  SetTensorMemoryBudget(budget < 0 ? DefaultTensorMemoryBudget() : static_cast<uint64_t>(budget));
}

}  // namespace overseer

#ifndef OVERSEER_CORE_PROCESS_SETTINGS_H_
#define OVERSEER_CORE_PROCESS_SETTINGS_H_

// The process-wide settings a binary opts into from main() (docs/settings.md lists
// them all, with their defaults and reasons):
//
//   --tune_malloc (default true): ConfigureMalloc(), glibc's thresholds for megabyte
//       tensors.
//   --tensor_buffer_cache_bytes (default -1: an eighth of physical memory, at most
//       8 GiB; 0: off): SetTensorBufferCacheBytes(), freed large tensor buffers kept
//       for reuse.
//   --tensor_memory_budget_bytes (default -1: physical memory, or the container's
//       limit if lower; 0: none): SetTensorMemoryBudget(), the live tensor bytes past
//       which a step's allocation fails with RESOURCE_EXHAUSTED. Libraries and tests
//       get the same default without the flag.
//   no flag: ConfigureMutexDeadlockDetection(), Abseil's lock-order check, on only
//       under `bazel test`.
//
// The servers, the trainers and the benchmarks call ApplyProcessSettings(); libraries
// and tests do not, so they keep glibc's thresholds and have no tensor buffer cache
// (tests turn the deadlock detection on in their main, //third_party:gtest_main).

namespace overseer {

// Applies the settings above from their flags. Call once from main(), after
// absl::ParseCommandLine and before starting threads. Not thread-safe.
void ApplyProcessSettings();

}  // namespace overseer

#endif  // OVERSEER_CORE_PROCESS_SETTINGS_H_

#include "core/process_settings.h"

#include "absl/flags/flag.h"
#include "core/absl_config.h"
#include "core/malloc_config.h"

ABSL_FLAG(bool, tune_malloc, true,
          "Keep allocations up to 32 MiB in glibc's heaps and up to 256 MiB of free memory "
          "per arena for reuse (docs/settings.md); false leaves glibc's defaults.");

namespace overseer {

void ApplyProcessSettings() {
  ConfigureMutexDeadlockDetection();
  if (absl::GetFlag(FLAGS_tune_malloc)) ConfigureMalloc();
}

}  // namespace overseer

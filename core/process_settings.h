#ifndef OVERSEER_CORE_PROCESS_SETTINGS_H_
#define OVERSEER_CORE_PROCESS_SETTINGS_H_

// The process-wide settings a binary opts into from main(), each behind a flag that
// this library defines (docs/settings.md lists them all, with their defaults and
// reasons):
//
//   --tune_malloc  (default true)  ConfigureMalloc(): glibc thresholds for megabyte
//                                  tensors.
//
// The servers, the trainers and the benchmarks call ApplyProcessSettings(); libraries
// and tests do not, so they run with the library defaults (glibc's own thresholds).

namespace overseer {

// Applies the settings above from their flags. Call once from main(), after
// absl::ParseCommandLine and before starting threads. Not thread-safe.
void ApplyProcessSettings();

}  // namespace overseer

#endif  // OVERSEER_CORE_PROCESS_SETTINGS_H_

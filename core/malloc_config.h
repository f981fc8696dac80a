#ifndef OVERSEER_CORE_MALLOC_CONFIG_H_
#define OVERSEER_CORE_MALLOC_CONFIG_H_

namespace overseer {

// Sets glibc's malloc thresholds for a process that streams megabyte tensors: keeps
// allocations up to 32 MiB in the heaps (M_MMAP_THRESHOLD) and up to 256 MiB of free
// heap memory per arena for reuse (M_TRIM_THRESHOLD). Process-wide and permanent; call
// it from main() of a binary that wants it (the servers, trainers and benchmarks do,
// through ApplyProcessSettings with --tune_malloc), before it starts threads. Libraries
// and tests never call it. See docs/settings.md.
void ConfigureMalloc();

}  // namespace overseer

#endif  // OVERSEER_CORE_MALLOC_CONFIG_H_

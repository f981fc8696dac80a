// Process-wide glibc malloc settings, applied by the binaries that call ConfigureMalloc.
//
// By default glibc serves allocations above a dynamic threshold (128 KiB, raised up to
// 32 MiB by later frees) with fresh mmaps, and returns free memory at the top of a heap
// to the system (brk, or madvise(MADV_DONTNEED) in per-thread arenas) once it exceeds
// twice that threshold. Streaming megabytes through gRPC allocates and frees the same
// few 1-4 MiB buffers per message (serialised slices, received slices, protobuf byte
// fields), so every message handed its pages back and faulted fresh ones in: a 4 KiB
// page fault costs about 12 us on this virtualised host (3 s per GiB), and the profile
// of a 1 GiB checkpoint save through the store showed page faults and the madvise TLB
// shootdowns as the largest share of the ps and store CPU time. Fixed thresholds keep
// allocations up to 32 MiB in the heaps and keep up to 256 MiB of free heap memory per
// arena for reuse, as tcmalloc-style allocators do. Larger tensor buffers are recycled
// by core/tensor.cc.

#include "core/malloc_config.h"

#include <malloc.h>

namespace overseer {
namespace {

constexpr int kMmapThresholdBytes = 32 << 20;  // glibc's maximum on 64-bit hosts.
constexpr int kTrimThresholdBytes = 256 << 20;

}  // namespace

void ConfigureMalloc() {
  mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes);
}

}  // namespace overseer

#ifndef OVERSEER_CHECKPOINT_STORE_DIRECT_READ_H_
#define OVERSEER_CHECKPOINT_STORE_DIRECT_READ_H_

// Direct reads of large tensors (O_DIRECT), for local reads of checkpoints
// (docs/checkpoint_format.md, "Local reads"). A restore reads each checkpoint byte
// once, so the page cache only adds a copy and the kernel's one-request-at-a-time
// readahead; with O_DIRECT and several large requests in flight the disk writes
// straight into the tensor's memory. Measured on the 2-core virtual machine, two
// processes each reading 512 MiB that are not cached: 0.25-0.28 s through the page
// cache (1 MiB preads, the whole range advised WILLNEED), 0.18-0.23 s with four 8 MiB
// O_DIRECT requests in flight each; one process reading 1 GiB with read(): 0.19-0.46 s.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace overseer {

// File offsets and memory addresses of direct reads are multiples of this (the
// largest logical block size of common devices).
constexpr uint64_t kDirectReadAlignment = 4096;
// Tensors smaller than this are read through the page cache.
constexpr uint64_t kDirectReadMinBytes = uint64_t{8} << 20;

// Whether the `size` bytes at `offset` of open file `fd` should be read with
// ReadVerifiedTensorDirect: direct reads are enabled (the environment variable
// OVERSEER_CHECKPOINT_DIRECT_READS is not "0", "false", "no" or "off"), the tensor is
// at least kDirectReadMinBytes, `offset` is aligned to kDirectReadAlignment, and less
// than half of the range is in the page cache (a cached range is copied faster than a
// disk reads it).
bool ShouldReadDirect(int fd, uint64_t offset, uint64_t size);

// Reads the `size` bytes of tensor `name` at `offset` of `fd` (data file `path` in
// errors) into `dst` with O_DIRECT, several 8 MiB requests in flight, and checks their
// CRC32C against `masked_crc32c` in order as the pieces arrive. The descriptor's
// O_DIRECT flag is set for the read and cleared afterwards, so `fd` must not be read
// by anyone else meanwhile. FAILED_PRECONDITION, with nothing verified, if `offset` or
// `dst` is not aligned to kDirectReadAlignment or the file system refuses direct I/O:
// read the tensor through the page cache instead. Otherwise the errors of
// ReadVerifiedTensor (bundle.h), worded alike. On error `dst` is unspecified.
absl::Status ReadVerifiedTensorDirect(int fd, const std::string& path, absl::string_view name,
                                      uint64_t offset, uint64_t size, uint32_t masked_crc32c,
                                      char* dst);

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_DIRECT_READ_H_

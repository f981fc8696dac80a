#ifndef OVERSEER_CHECKPOINT_STORE_LOCAL_WRITE_H_
#define OVERSEER_CHECKPOINT_STORE_LOCAL_WRITE_H_

// Short-circuit local writes of checkpoint shards (docs/checkpoint_format.md, "Local
// writes"): a store hands a shard writer on its own host a write-only descriptor of the
// shard's new data file over the local read socket (local_read.h), the writer puts the
// tensors there itself and reports where each lies (CloseLocalWrite). Tensor bytes
// never cross a TCP socket nor the store's memory, and where the file system allows it
// they go from the tensors' memory to the disk with O_DIRECT, without a copy into the
// page cache: on the 2-core virtual machine writing 1 GiB through the page cache costs
// 1.8-3.1 s of CPU, with O_DIRECT 0.12 s (dd, 64 MiB blocks, fsync).

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "checkpoint_store/local_read.h"
#include "proto/checkpoint_store.pb.h"

namespace overseer {

// Writes one shard's data file through `fd`, in the layout DataFileWriter (bundle.h)
// gives it: tensors back to back in the order begun, those of kAlignedTensorBytes or
// more at multiples of kTensorAlignment with zeros before them. Writes go out in
// 4 KiB-aligned blocks: a large tensor in memory aligned to 4 KiB is written from
// there; the rest goes through an aligned staging buffer. Not thread-safe.
class LocalDataFileWriter {
 public:
  // `fd` is an empty regular file opened for writing; `path` names it in errors.
  // O_DIRECT is set on it if the file system accepts it and the environment variable
  // OVERSEER_CHECKPOINT_DIRECT_WRITES is not "0", "false", "no" or "off" (direct()
  // tells).
  LocalDataFileWriter(UniqueFd fd, std::string path);
  ~LocalDataFileWriter();
  LocalDataFileWriter(const LocalDataFileWriter&) = delete;
  LocalDataFileWriter& operator=(const LocalDataFileWriter&) = delete;

  // As DataFileWriter's: INVALID_ARGUMENT on a bad header, a duplicate name, a tensor
  // that ended short, or bytes beyond the current tensor's size.
  absl::Status BeginTensor(const TensorHeader& header);
  absl::Status Append(absl::string_view data);
  // Writes what is staged and cuts the file to the data's length. The store makes it
  // durable when the shard closes. INTERNAL naming the file on an I/O error.
  absl::Status Finish();

  // Where each tensor lies, with its masked CRC32C (valid after Finish).
  const std::vector<LocalWrittenTensor>& tensors() const { return tensors_; }
  // The file's length (valid after Finish).
  int64_t bytes() const { return offset_; }
  bool direct() const { return direct_; }

 private:
  absl::Status FinishTensor();
  // Appends `data` to the file at offset_ (zeros if data is null).
  absl::Status Put(const char* data, size_t n);
  // Writes the staged bytes, padded with zeros to a whole block.
  absl::Status Flush();
  // pwrite of all `n` bytes at `offset`; retries without O_DIRECT if the kernel
  // refuses it for this request.
  absl::Status WriteAt(const char* data, size_t n, int64_t offset);

  const UniqueFd fd_;
  const std::string path_;
  bool direct_ = false;
  struct FreeDeleter {
    void operator()(char* p) const;
  };
  std::unique_ptr<char, FreeDeleter> stage_;  // kStageBytes, aligned; allocated when needed.
  size_t staged_ = 0;  // Bytes in stage_, which holds the file from stage_offset_.
  int64_t stage_offset_ = 0;
  int64_t offset_ = 0;  // The file's logical length so far.
  std::vector<LocalWrittenTensor> tensors_;
  std::set<std::string> names_;
  int64_t remaining_ = 0;  // Bytes of the current tensor still to come.
  uint32_t crc_ = 0;
  bool in_tensor_ = false;
  bool finished_ = false;
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_LOCAL_WRITE_H_

#ifndef OVERSEER_CHECKPOINT_STORE_BUNDLE_H_
#define OVERSEER_CHECKPOINT_STORE_BUNDLE_H_

// TensorFlow's V2 tensor bundle (FORMATS.md 6, docs/checkpoint_format.md): the
// .data-NNNNN-of-NNNNN files holding tensor bytes and the .index LevelDB table holding
// a BundleHeaderProto under key "" and a BundleEntryProto per tensor name. Only
// numeric and bool tensors are written and read (DT_STRING's layout is not supported).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/io/file_system.h"
#include "proto/checkpoint_store.pb.h"
#include "proto/tensor_bundle.pb.h"

namespace overseer {

// "<prefix>.index".
std::string IndexFilename(absl::string_view prefix);
// "<prefix>.data-00001-of-00002" for shard 1 of 2.
std::string DataFilename(absl::string_view prefix, int shard_id, int num_shards);

// OK if `header` describes a tensor that can be stored: a non-empty name, a numeric or
// bool dtype, a fully known shape and size == elements * bytes per element.
// INVALID_ARGUMENT naming the tensor otherwise.
absl::Status ValidateTensorHeader(const TensorHeader& header);

// Tensors of kAlignedTensorBytes or more start at a multiple of kTensorAlignment in
// their data file (zeros fill the gap), so that a restore can read them with O_DIRECT
// (direct_read.h) straight into memory.
constexpr int64_t kAlignedTensorBytes = int64_t{1} << 20;
constexpr int64_t kTensorAlignment = 4096;

// Appends tensors to one data file and remembers their entries (offset, size, CRC).
// Tensors of kAlignedTensorBytes or more are aligned to kTensorAlignment.
// Not thread-safe.
class DataFileWriter {
 public:
  // Creates `path` (which must not exist) for shard `shard_id`.
  static absl::StatusOr<std::unique_ptr<DataFileWriter>> Create(FileSystem* fs, std::string path,
                                                                int shard_id);

  // Starts a tensor whose header.size bytes follow through Append. INVALID_ARGUMENT on
  // a bad header, a duplicate name, or if the previous tensor is incomplete.
  absl::Status BeginTensor(const TensorHeader& header);
  // Bytes of the current tensor; INVALID_ARGUMENT beyond its size.
  absl::Status Append(absl::string_view data);
  // Both at once.
  absl::Status AddTensor(const TensorHeader& header, absl::string_view data);
  // Checks the last tensor is complete, then fsyncs and closes the file.
  absl::Status Finish();

  const std::string& path() const { return path_; }
  int64_t bytes_written() const { return offset_; }
  // Entries by tensor name (shard_id, offset, size, crc32c set).
  const std::map<std::string, BundleEntryProto>& entries() const { return entries_; }

 private:
  DataFileWriter(std::string path, int shard_id, std::unique_ptr<WritableFile> file)
      : path_(std::move(path)), shard_id_(shard_id), file_(std::move(file)) {}
  absl::Status FinishTensor();

  const std::string path_;
  const int shard_id_;
  std::unique_ptr<WritableFile> file_;
  std::map<std::string, BundleEntryProto> entries_;
  BundleEntryProto* current_ = nullptr;  // Points into entries_.
  std::string current_name_;
  int64_t current_remaining_ = 0;
  uint32_t current_crc_ = 0;
  int64_t offset_ = 0;
  bool finished_ = false;
};

// Writes a complete .index table to `path` (which must not exist): the header with
// `num_shards`, then `entries` in bytewise key order; then fsyncs and closes it.
absl::Status WriteIndexFile(FileSystem* fs, const std::string& path, int num_shards,
                            const std::map<std::string, BundleEntryProto>& entries);

// Reads the `size` bytes of tensor `name` at `offset` of data file `file` (called
// `path` in errors) into `dst` in 1 MiB pieces, the CRC32C of each piece computed
// right after its read, with the disk reads prefetched up to 32 MiB ahead, and checks
// the CRC32C against `masked_crc32c` (BundleEntryProto.crc32c). DATA_LOSS naming the
// tensor and `path` for a file that ends before the tensor or a mismatch; errors of
// `file` as they are. On error the contents of `dst` are unspecified.
absl::Status ReadVerifiedTensor(const RandomAccessFile& file, const std::string& path,
                                absl::string_view name, uint64_t offset, uint64_t size,
                                uint32_t masked_crc32c, char* dst);

// The errors every reader of a tensor's bytes gives, so that all read paths word them
// alike: DATA_LOSS for data file `path` ending after `got` of the tensor's `size` bytes
// at `offset`, and for a CRC32C `actual` that differs from `masked_crc32c`.
absl::Status TruncatedTensorError(const std::string& path, absl::string_view name, uint64_t offset,
                                  uint64_t size, uint64_t got);
absl::Status CheckTensorCrc(const std::string& path, absl::string_view name, uint32_t masked_crc32c,
                            uint32_t actual);

// Reads a bundle given its prefix. Every tensor read is CRC32C-verified. Thread-safe.
class BundleReader {
 public:
  // Parses "<prefix>.index" with block checksums verified. NOT_FOUND if it does not
  // exist; DATA_LOSS naming the file for a truncated or corrupted table, a bad magic
  // or a bad header; FAILED_PRECONDITION for a big-endian or too new bundle.
  static absl::StatusOr<std::unique_ptr<BundleReader>> Open(FileSystem* fs, std::string prefix);

  const BundleHeaderProto& header() const { return header_; }
  const std::map<std::string, BundleEntryProto>& entries() const { return entries_; }
  // NOT_FOUND naming the tensor and the checkpoint.
  absl::StatusOr<const BundleEntryProto*> Lookup(absl::string_view name) const;
  // The tensor's bytes. NOT_FOUND for an unknown name; INVALID_ARGUMENT for sliced or
  // DT_STRING entries; DATA_LOSS naming the tensor and file for a missing shard, a
  // short file, a size that does not match dtype and shape, or a CRC mismatch.
  absl::StatusOr<std::string> ReadTensor(absl::string_view name) const;
  // Like ReadTensor, into `*bytes` (resized to the tensor's size; a buffer that is
  // already large enough gets no new memory). On error *bytes is unspecified.
  absl::Status ReadTensorInto(absl::string_view name, std::string* bytes) const;
  // The entry of a tensor that can be read: the errors of ReadTensor that the index
  // and the data file's size show (unknown name, slices, DT_STRING, bad shard, size
  // not matching dtype and shape, bytes past the end of the data file), checked before
  // anything of entry->size() bytes is allocated. Its size() is what ReadTensorTo
  // writes.
  absl::StatusOr<const BundleEntryProto*> CheckedEntry(absl::string_view name) const;
  // Like ReadTensor, into `dst`, which holds at least CheckedEntry(name)->size()
  // bytes; the CRC32C is computed piece by piece as the bytes are read (no second
  // pass). On error the contents of `dst` are unspecified.
  absl::Status ReadTensorTo(absl::string_view name, char* dst) const;
  // The data file of shard `shard_id` ("<prefix>.data-...").
  std::string DataFile(int shard_id) const;

 private:
  BundleReader(FileSystem* fs, std::string prefix) : fs_(fs), prefix_(std::move(prefix)) {}

  FileSystem* const fs_;
  const std::string prefix_;
  BundleHeaderProto header_;
  std::map<std::string, BundleEntryProto> entries_;
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_BUNDLE_H_

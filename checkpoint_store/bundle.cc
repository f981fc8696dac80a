#include "checkpoint_store/bundle.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "checkpoint_store/buffer_pool.h"
#include "core/io/crc32c.h"
#include "core/status_macros.h"
#include "core/types.h"
#include "leveldb/env.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "leveldb/table.h"
#include "leveldb/table_builder.h"

namespace overseer {
namespace {

// TensorFlow's kTensorBundleVersion / the consumer version this reader is.
constexpr int kBundleVersion = 1;
constexpr int kBundleConsumer = 1;

// TensorFlow's table options for checkpoints (FORMATS.md 6.2).
leveldb::Options TableOptions() {
  leveldb::Options options;
  options.compression = leveldb::kNoCompression;
  options.block_size = 262144;
  options.block_restart_interval = 16;
  options.paranoid_checks = true;
  return options;
}

// Gives leveldb's TableBuilder our WritableFile; the caller syncs and closes it.
class TableSink : public leveldb::WritableFile {
 public:
  explicit TableSink(::overseer::WritableFile* file) : file_(file) {}
  leveldb::Status Append(const leveldb::Slice& data) override {
    absl::Status s = file_->Append(absl::string_view(data.data(), data.size()));
    if (!s.ok()) {
      status_ = s;
      return leveldb::Status::IOError(std::string(s.message()));
    }
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }
  const absl::Status& status() const { return status_; }

 private:
  ::overseer::WritableFile* file_;
  absl::Status status_;
};

// leveldb reads a block by allocating the bytes its handle claims and only then reading
// them, so a damaged index could make it allocate any amount (a 5 KB index claimed a
// 21 GB block; found by //checkpoint_store:state_fuzz). Before leveldb sees `table`,
// every handle that opening and iterating it follows (the footer's two, and the index
// block's handles of the data blocks, when it is uncompressed as TensorFlow writes it)
// must lie inside it. DATA_LOSS naming `path` otherwise.
bool GetVarint(absl::string_view* in, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

absl::Status CheckTableBlockHandles(absl::string_view table, const std::string& path) {
  constexpr size_t kFooterBytes = 48;  // Two handles (padded) and the 8-byte magic.
  constexpr size_t kTrailerBytes = 5;  // A block's compression type and CRC.
  auto damaged = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat("checkpoint index ", path, " is damaged: ", what));
  };
  if (table.size() < kFooterBytes) return damaged("shorter than a table's footer");
  // The block at a handle read from `in`: inside the table, trailer included.
  auto block = [&](absl::string_view* in, absl::string_view* out) -> absl::Status {
    uint64_t offset = 0, size = 0;
    if (!GetVarint(in, &offset) || !GetVarint(in, &size)) return damaged("a bad block handle");
    if (offset > table.size() || size > table.size() - offset ||
        kTrailerBytes > table.size() - offset - size) {
      return damaged(absl::StrCat("a block handle [", offset, ", +", size, ") past the end of its ",
                                  table.size(), " bytes"));
    }
    *out = table.substr(offset, size + kTrailerBytes);
    return absl::OkStatus();
  };
  absl::string_view footer = table.substr(table.size() - kFooterBytes);
  absl::string_view metaindex, index;
  RETURN_IF_ERROR(block(&footer, &metaindex));
  RETURN_IF_ERROR(block(&footer, &index));
  const char type = index[index.size() - kTrailerBytes];
  if (type != 0) return absl::OkStatus();  // Compressed: leveldb decodes it (rare here).
  index.remove_suffix(kTrailerBytes);
  if (index.size() < 4) return damaged("an index block without its restart count");
  const uint32_t restarts =
      static_cast<uint8_t>(index[index.size() - 4]) |
      static_cast<uint32_t>(static_cast<uint8_t>(index[index.size() - 3])) << 8 |
      static_cast<uint32_t>(static_cast<uint8_t>(index[index.size() - 2])) << 16 |
      static_cast<uint32_t>(static_cast<uint8_t>(index[index.size() - 1])) << 24;
  if (restarts > (index.size() - 4) / 4) return damaged("an index block's restart count");
  absl::string_view entries = index.substr(0, index.size() - 4 - 4 * size_t{restarts});
  while (!entries.empty()) {
    uint64_t shared = 0, unshared = 0, value_size = 0;
    if (!GetVarint(&entries, &shared) || !GetVarint(&entries, &unshared) ||
        !GetVarint(&entries, &value_size) || unshared > entries.size() ||
        value_size > entries.size() - unshared) {
      return damaged("a bad index block entry");
    }
    entries.remove_prefix(unshared);
    absl::string_view handle = entries.substr(0, value_size);
    entries.remove_prefix(value_size);
    absl::string_view data;
    RETURN_IF_ERROR(block(&handle, &data));
  }
  return absl::OkStatus();
}

// A whole .index file in memory, read by leveldb::Table (index files are small).
class StringSource : public leveldb::RandomAccessFile {
 public:
  explicit StringSource(std::string contents) : contents_(std::move(contents)) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* /*scratch*/) const override {
    if (offset > contents_.size()) {
      *result = leveldb::Slice();
      return leveldb::Status::IOError("read past the end of the index");
    }
    *result =
        leveldb::Slice(contents_.data() + offset, std::min<size_t>(n, contents_.size() - offset));
    return leveldb::Status::OK();
  }

 private:
  const std::string contents_;
};

absl::StatusOr<int64_t> NumElements(const TensorShapeProto& shape, absl::string_view name) {
  if (shape.unknown_rank()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", name, " has an unknown rank"));
  }
  int64_t n = 1;
  for (const auto& dim : shape.dim()) {
    if (dim.size() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", name, " has an unknown or negative dimension"));
    }
    n *= dim.size();
  }
  return n;
}

absl::Status CheckStorableDtype(DataType dtype, absl::string_view name) {
  if (dtype == DT_STRING || !IsSupportedDataType(dtype) || DataTypeSize(dtype) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", name, " has dtype ", DataTypeString(dtype),
                     "; checkpoints hold numeric and bool tensors only"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string IndexFilename(absl::string_view prefix) { return absl::StrCat(prefix, ".index"); }

std::string DataFilename(absl::string_view prefix, int shard_id, int num_shards) {
  return absl::StrFormat("%s.data-%05d-of-%05d", prefix, shard_id, num_shards);
}

absl::Status ValidateTensorHeader(const TensorHeader& header) {
  if (header.name().empty()) return absl::InvalidArgumentError("a tensor has an empty name");
  RETURN_IF_ERROR(CheckStorableDtype(header.dtype(), header.name()));
  ASSIGN_OR_RETURN(const int64_t elements, NumElements(header.shape(), header.name()));
  const int64_t expected = elements * static_cast<int64_t>(DataTypeSize(header.dtype()));
  if (header.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", header.name(), " declares ", header.size(), " bytes but its ",
                     DataTypeString(header.dtype()), " shape needs ", expected));
  }
  return absl::OkStatus();
}

// ---- DataFileWriter ----

absl::StatusOr<std::unique_ptr<DataFileWriter>> DataFileWriter::Create(FileSystem* fs,
                                                                       std::string path,
                                                                       int shard_id) {
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(path));
  return std::unique_ptr<DataFileWriter>(
      new DataFileWriter(std::move(path), shard_id, std::move(file)));
}

absl::Status DataFileWriter::BeginTensor(const TensorHeader& header) {
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(path_, " is finished"));
  RETURN_IF_ERROR(FinishTensor());
  RETURN_IF_ERROR(ValidateTensorHeader(header));
  auto [it, inserted] = entries_.try_emplace(header.name());
  if (!inserted) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", header.name(), " is written twice to ", path_));
  }
  if (header.size() >= kAlignedTensorBytes && offset_ % kTensorAlignment != 0) {
    // Zeros up to the boundary, as TensorFlow's BundleWriter pads for data_alignment;
    // readers go by the entries' offsets.
    static const std::string* const kZeros = new std::string(kTensorAlignment, '\0');
    const int64_t pad = kTensorAlignment - offset_ % kTensorAlignment;
    RETURN_IF_ERROR(file_->Append(absl::string_view(*kZeros).substr(0, pad)));
    offset_ += pad;
  }
  BundleEntryProto& entry = it->second;
  entry.set_dtype(header.dtype());
  *entry.mutable_shape() = header.shape();
  entry.set_shard_id(shard_id_);
  entry.set_offset(offset_);
  entry.set_size(header.size());
  current_ = &entry;
  current_remaining_ = header.size();
  current_crc_ = 0;
  current_name_ = header.name();
  return current_remaining_ == 0 ? FinishTensor() : absl::OkStatus();
}

absl::Status DataFileWriter::Append(absl::string_view data) {
  if (data.empty()) return absl::OkStatus();
  if (current_ == nullptr || static_cast<int64_t>(data.size()) > current_remaining_) {
    return absl::InvalidArgumentError(absl::StrCat(
        data.size(), " bytes written to ", path_, " beyond the declared size of ",
        current_ == nullptr ? std::string("any tensor") : absl::StrCat("tensor ", current_name_)));
  }
  RETURN_IF_ERROR(file_->Append(data));
  current_crc_ = crc32c::Extend(current_crc_, data);
  current_remaining_ -= static_cast<int64_t>(data.size());
  offset_ += static_cast<int64_t>(data.size());
  return absl::OkStatus();
}

absl::Status DataFileWriter::AddTensor(const TensorHeader& header, absl::string_view data) {
  RETURN_IF_ERROR(BeginTensor(header));
  RETURN_IF_ERROR(Append(data));
  return FinishTensor();
}

absl::Status DataFileWriter::FinishTensor() {
  if (current_ == nullptr) return absl::OkStatus();
  if (current_remaining_ > 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", current_name_, " in ", path_,
                                                   " ended ", current_remaining_,
                                                   " bytes short of its size"));
  }
  current_->set_crc32c(crc32c::Mask(current_crc_));
  current_ = nullptr;
  return absl::OkStatus();
}

absl::Status DataFileWriter::Finish() {
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(path_, " is finished"));
  RETURN_IF_ERROR(FinishTensor());
  finished_ = true;
  RETURN_IF_ERROR(file_->Sync());
  return file_->Close();
}

// ---- Index ----

absl::Status WriteIndexFile(FileSystem* fs, const std::string& path, int num_shards,
                            const std::map<std::string, BundleEntryProto>& entries) {
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(path));
  TableSink sink(file.get());
  const leveldb::Options options = TableOptions();
  leveldb::TableBuilder builder(options, &sink);
  BundleHeaderProto header;
  header.set_num_shards(num_shards);
  header.set_endianness(BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kBundleVersion);
  builder.Add("", header.SerializeAsString());
  for (const auto& [name, entry] : entries) {
    if (name.empty()) return absl::InvalidArgumentError("a tensor has an empty name");
    builder.Add(name, entry.SerializeAsString());
  }
  const leveldb::Status finished = builder.Finish();
  if (!sink.status().ok()) return sink.status();
  if (!finished.ok()) {
    return absl::InternalError(absl::StrCat("cannot build ", path, ": ", finished.ToString()));
  }
  RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

// ---- BundleReader ----

absl::StatusOr<std::unique_ptr<BundleReader>> BundleReader::Open(FileSystem* fs,
                                                                 std::string prefix) {
  std::unique_ptr<BundleReader> reader(new BundleReader(fs, std::move(prefix)));
  const std::string path = IndexFilename(reader->prefix_);
  ASSIGN_OR_RETURN(std::string contents, fs->ReadFile(path));
  RETURN_IF_ERROR(CheckTableBlockHandles(contents, path));
  const uint64_t size = contents.size();
  StringSource source(std::move(contents));
  leveldb::Table* raw_table = nullptr;
  leveldb::Status opened = leveldb::Table::Open(TableOptions(), &source, size, &raw_table);
  if (!opened.ok()) {
    return absl::DataLossError(
        absl::StrCat("checkpoint index ", path, " is not a valid table: ", opened.ToString()));
  }
  std::unique_ptr<leveldb::Table> table(raw_table);
  leveldb::ReadOptions read_options;
  read_options.verify_checksums = true;
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read_options));
  bool saw_header = false;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string key = it->key().ToString();
    const leveldb::Slice value = it->value();
    if (key.empty()) {
      if (!reader->header_.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
        return absl::DataLossError(absl::StrCat("bad bundle header in ", path));
      }
      saw_header = true;
      continue;
    }
    BundleEntryProto entry;
    if (!entry.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      return absl::DataLossError(absl::StrCat("bad entry for tensor ", key, " in ", path));
    }
    reader->entries_.emplace(key, std::move(entry));
  }
  if (!it->status().ok()) {
    return absl::DataLossError(
        absl::StrCat("checkpoint index ", path, " is corrupted: ", it->status().ToString()));
  }
  if (!saw_header) return absl::DataLossError(absl::StrCat("no bundle header in ", path));
  const BundleHeaderProto& header = reader->header_;
  if (header.num_shards() <= 0) {
    return absl::DataLossError(
        absl::StrCat("bundle header of ", path, " has num_shards ", header.num_shards()));
  }
  if (header.endianness() != BundleHeaderProto::LITTLE) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " holds big-endian tensor data; only little-endian is read"));
  }
  const VersionDef& version = header.version();
  bool bad_consumer = false;
  for (int v : version.bad_consumers()) bad_consumer |= (v == kBundleConsumer);
  if (version.producer() < 0 || version.min_consumer() > kBundleConsumer || bad_consumer) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " needs a newer bundle reader (producer ", version.producer(),
                     ", min_consumer ", version.min_consumer(), ")"));
  }
  return reader;
}

absl::StatusOr<const BundleEntryProto*> BundleReader::Lookup(absl::string_view name) const {
  auto it = entries_.find(std::string(name));
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("tensor ", name, " is not in checkpoint ", prefix_));
  }
  return &it->second;
}

absl::StatusOr<std::string> BundleReader::ReadTensor(absl::string_view name) const {
  std::string bytes;
  RETURN_IF_ERROR(ReadTensorInto(name, &bytes));
  return bytes;
}

absl::Status BundleReader::ReadTensorInto(absl::string_view name, std::string* out) const {
  ASSIGN_OR_RETURN(const BundleEntryProto* entry, CheckedEntry(name));
  std::string& bytes = *out;
  ReserveBuffer(&bytes, static_cast<size_t>(entry->size()));
  bytes.resize(static_cast<size_t>(entry->size()));
  return ReadTensorTo(name, bytes.data());
}

absl::StatusOr<const BundleEntryProto*> BundleReader::CheckedEntry(absl::string_view name) const {
  ASSIGN_OR_RETURN(const BundleEntryProto* entry, Lookup(name));
  if (entry->slices_size() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor ", name, " in ", prefix_, " is partitioned into slices, which are not read"));
  }
  RETURN_IF_ERROR(CheckStorableDtype(entry->dtype(), name));
  const int num_shards = header_.num_shards();
  if (entry->shard_id() < 0 || entry->shard_id() >= num_shards) {
    return absl::DataLossError(absl::StrCat("tensor ", name, " in ", prefix_, " names shard ",
                                            entry->shard_id(), " of ", num_shards));
  }
  auto elements = NumElements(entry->shape(), name);
  if (!elements.ok() || entry->offset() < 0 ||
      entry->size() != *elements * static_cast<int64_t>(DataTypeSize(entry->dtype()))) {
    return absl::DataLossError(absl::StrCat("invalid size in bundle entry of tensor ", name, " (",
                                            entry->size(), " bytes) in ", prefix_));
  }
  // Before anyone allocates entry->size() bytes: a damaged or hostile index can claim
  // any size (21 GB from a 5 KB index, found by //checkpoint_store:state_fuzz).
  const std::string path = DataFile(entry->shard_id());
  absl::StatusOr<uint64_t> file_size = fs_->GetFileSize(path);
  if (!file_size.ok()) {
    return absl::DataLossError(absl::StrCat("data file ", path, " of tensor ", name,
                                            " cannot be read: ", file_size.status().message()));
  }
  const uint64_t offset = static_cast<uint64_t>(entry->offset());
  const uint64_t size = static_cast<uint64_t>(entry->size());
  if (offset > *file_size || size > *file_size - offset) {
    return TruncatedTensorError(path, name, offset, size,
                                offset > *file_size ? 0 : *file_size - offset);
  }
  return entry;
}

std::string BundleReader::DataFile(int shard_id) const {
  return DataFilename(prefix_, shard_id, header_.num_shards());
}

absl::Status BundleReader::ReadTensorTo(absl::string_view name, char* dst) const {
  ASSIGN_OR_RETURN(const BundleEntryProto* entry, CheckedEntry(name));
  const std::string path = DataFile(entry->shard_id());
  auto file = fs_->NewRandomAccessFile(path);
  if (!file.ok()) {
    return absl::DataLossError(absl::StrCat("data file ", path, " of tensor ", name,
                                            " cannot be opened: ", file.status().message()));
  }
  return ReadVerifiedTensor(**file, path, name, static_cast<uint64_t>(entry->offset()),
                            static_cast<uint64_t>(entry->size()), entry->crc32c(), dst);
}

absl::Status ReadVerifiedTensor(const RandomAccessFile& file, const std::string& path,
                                absl::string_view name, uint64_t offset, uint64_t size,
                                uint32_t masked_crc32c, char* dst) {
  // Piece by piece, each CRC'd right after its read while it is still in the cache.
  // The disk reads run up to kPrefetchBytes ahead: one small read at a time would
  // leave a single request in flight (the device's readahead is 128 KiB here), at a
  // fraction of the rate of the large reads a plain sequential reader makes.
  constexpr uint64_t kPieceBytes = 1 << 20;
  constexpr uint64_t kPrefetchBytes = 32 << 20;
  uint32_t actual = 0;
  uint64_t prefetched = 0;
  for (uint64_t done = 0; done < size;) {
    if (prefetched < size && prefetched < done + kPrefetchBytes / 2) {
      const uint64_t ahead = std::min(kPrefetchBytes, size - prefetched);
      file.Prefetch(offset + prefetched, static_cast<size_t>(ahead));
      prefetched += ahead;
    }
    const size_t n = static_cast<size_t>(std::min(kPieceBytes, size - done));
    ASSIGN_OR_RETURN(absl::string_view got, file.Read(offset + done, n, dst + done));
    if (got.size() != n) {
      return TruncatedTensorError(path, name, offset, size, done + got.size());
    }
    if (got.data() != dst + done) std::memcpy(dst + done, got.data(), n);
    actual = crc32c::Extend(actual, absl::string_view(dst + done, n));
    done += n;
  }
  return CheckTensorCrc(path, name, masked_crc32c, actual);
}

absl::Status TruncatedTensorError(const std::string& path, absl::string_view name, uint64_t offset,
                                  uint64_t size, uint64_t got) {
  return absl::DataLossError(absl::StrCat("data file ", path, " is truncated: tensor ", name,
                                          " needs bytes [", offset, ", ", offset + size, "), got ",
                                          got));
}

absl::Status CheckTensorCrc(const std::string& path, absl::string_view name, uint32_t masked_crc32c,
                            uint32_t actual) {
  const uint32_t stored = crc32c::Unmask(masked_crc32c);
  if (stored == actual) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrFormat("checksum of tensor %s does not match in %s: stored %08x vs. calculated %08x",
                      name, path, stored, actual));
}

}  // namespace overseer

#include "summary_writer/record.h"

#include "absl/strings/str_cat.h"
#include "core/io/crc32c.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

void PutLE32(uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void PutLE64(uint64_t v, char* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t GetLE32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

uint64_t GetLE64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

void AppendRecord(absl::string_view data, std::string* out) {
  char header[kRecordHeaderSize];
  PutLE64(data.size(), header);
  PutLE32(crc32c::Mask(crc32c::Value(absl::string_view(header, 8))), header + 8);
  char footer[kRecordFooterSize];
  PutLE32(crc32c::Mask(crc32c::Value(data)), footer);
  out->reserve(out->size() + kRecordHeaderSize + data.size() + kRecordFooterSize);
  out->append(header, kRecordHeaderSize);
  out->append(data.data(), data.size());
  out->append(footer, kRecordFooterSize);
}

void FrameRecordInPlace(size_t start, std::string* buf) {
  const size_t length = buf->size() - start - kRecordHeaderSize;
  char* header = &(*buf)[start];
  PutLE64(length, header);
  PutLE32(crc32c::Mask(crc32c::Value(absl::string_view(header, 8))), header + 8);
  char footer[kRecordFooterSize];
  PutLE32(crc32c::Mask(crc32c::Value(absl::string_view(header + kRecordHeaderSize, length))),
          footer);
  buf->append(footer, kRecordFooterSize);
}

absl::Status RecordReader::ReadRecord(std::string* record) {
  absl::string_view data;
  RETURN_IF_ERROR(ReadRecord(&data));
  record->assign(data.data(), data.size());
  return absl::OkStatus();
}

absl::Status RecordReader::ReadRecord(absl::string_view* record) {
  const uint64_t remaining = contents_.size() - offset_;
  if (remaining == 0) return absl::OutOfRangeError("end of records");
  const char* p = contents_.data() + offset_;
  if (remaining < 8) {
    return absl::DataLossError(absl::StrCat("truncated record at ", offset_, ": header"));
  }
  if (remaining < kRecordHeaderSize) {
    return absl::DataLossError(absl::StrCat("truncated record at ", offset_, ": header crc"));
  }
  const uint64_t length = GetLE64(p);
  if (crc32c::Unmask(GetLE32(p + 8)) != crc32c::Value(absl::string_view(p, 8))) {
    return absl::DataLossError(
        absl::StrCat("corrupted record at ", offset_, ": length crc mismatch"));
  }
  const uint64_t body = remaining - kRecordHeaderSize;
  if (length > body) {
    return absl::DataLossError(absl::StrCat("truncated record at ", offset_, ": data"));
  }
  if (body - length < kRecordFooterSize) {
    return absl::DataLossError(absl::StrCat("truncated record at ", offset_, ": data crc"));
  }
  const absl::string_view data(p + kRecordHeaderSize, length);
  if (crc32c::Unmask(GetLE32(data.data() + length)) != crc32c::Value(data)) {
    return absl::DataLossError(
        absl::StrCat("corrupted record at ", offset_, ": data crc mismatch"));
  }
  *record = data;
  offset_ += kRecordHeaderSize + length + kRecordFooterSize;
  return absl::OkStatus();
}

}  // namespace overseer

#ifndef OVERSEER_SUMMARY_WRITER_RECORD_H_
#define OVERSEER_SUMMARY_WRITER_RECORD_H_

// TFRecord framing (FORMATS.md 1.1), the container of event files:
//   uint64 LE length | uint32 LE masked_crc32c(length bytes) | data |
//   uint32 LE masked_crc32c(data)
// RecordReader verifies both CRCs of every record. Everything here is thread-compatible.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace overseer {

inline constexpr size_t kRecordHeaderSize = 12;
inline constexpr size_t kRecordFooterSize = 4;

// Appends the framed record holding `data` to `out`.
void AppendRecord(absl::string_view data, std::string* out);

// Frames, in place, a record whose data was appended to `buf` after kRecordHeaderSize
// placeholder bytes at `start`: fills in the header and appends the footer. Saves the
// copy of AppendRecord when the data is serialized straight into `buf`.
void FrameRecordInPlace(size_t start, std::string* buf);

// Reads records from a buffer it borrows (which must outlive it).
class RecordReader {
 public:
  explicit RecordReader(absl::string_view contents) : contents_(contents) {}

  // Sets `record` to the next record's data and advances. Returns OUT_OF_RANGE at a
  // clean end (no bytes left); DATA_LOSS naming the offset for a length or data CRC
  // mismatch ("corrupted record") or a record cut short ("truncated record"). After
  // an error the reader stays at the bad record.
  absl::Status ReadRecord(std::string* record);
  // The same, pointing `record` into the borrowed buffer instead of copying.
  absl::Status ReadRecord(absl::string_view* record);

  // Offset of the next record.
  uint64_t offset() const { return offset_; }

 private:
  absl::string_view contents_;
  uint64_t offset_ = 0;
};

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_RECORD_H_

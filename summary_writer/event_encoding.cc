#include "summary_writer/event_encoding.h"

#include <cstring>

#include "google/protobuf/io/coded_stream.h"

namespace overseer {
namespace {

using ::google::protobuf::io::CodedOutputStream;

// Event field tags (proto/event.proto): wall_time = 1 (fixed64), step = 2 (varint),
// summary = 5 (length-delimited).
constexpr uint8_t kWallTimeTag = (1 << 3) | 1;
constexpr uint8_t kStepTag = (2 << 3) | 0;
constexpr uint8_t kSummaryTag = (5 << 3) | 2;
// Tag bytes plus the longest double, step and length fields.
constexpr size_t kMaxHeaderSize = 1 + 8 + 1 + 10 + 1 + 10;

// Writes the fields before the summary's bytes at `p` and returns the end. As proto3
// serialization does, zero scalars are left out (a double whose bits are zero).
uint8_t* WriteHeader(double wall_time, int64_t step, size_t summary_size, uint8_t* p) {
  uint64_t wall_bits;
  std::memcpy(&wall_bits, &wall_time, sizeof(wall_bits));
  if (wall_bits != 0) {
    *p++ = kWallTimeTag;
    p = CodedOutputStream::WriteLittleEndian64ToArray(wall_bits, p);
  }
  if (step != 0) {
    *p++ = kStepTag;
    p = CodedOutputStream::WriteVarint64ToArray(static_cast<uint64_t>(step), p);
  }
  *p++ = kSummaryTag;
  return CodedOutputStream::WriteVarint64ToArray(summary_size, p);
}

}  // namespace

void AppendSummaryEvent(double wall_time, int64_t step, const Summary& summary, std::string* out) {
  const size_t summary_size = summary.ByteSizeLong();
  const size_t start = out->size();
  out->resize(start + kMaxHeaderSize + summary_size);
  auto* begin = reinterpret_cast<uint8_t*>(&(*out)[start]);
  uint8_t* p = WriteHeader(wall_time, step, summary_size, begin);
  p = summary.SerializeWithCachedSizesToArray(p);
  out->resize(start + static_cast<size_t>(p - begin));
}

void AppendSerializedSummaryEvent(double wall_time, int64_t step, absl::string_view summary,
                                  std::string* out) {
  uint8_t header[kMaxHeaderSize];
  const uint8_t* end = WriteHeader(wall_time, step, summary.size(), header);
  out->reserve(out->size() + static_cast<size_t>(end - header) + summary.size());
  out->append(reinterpret_cast<const char*>(header), static_cast<size_t>(end - header));
  out->append(summary.data(), summary.size());
}

}  // namespace overseer

// Fuzzes the TFRecord framing of event files and the events in them, as the summary
// writer's reader (and TensorBoard) meets a file cut short or damaged: any bytes get
// records and then OUT_OF_RANGE or DATA_LOSS, never a crash, a read past the buffer
// or a loop that does not advance.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/event.pb.h"
#include "summary_writer/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  overseer::RecordReader reader(absl::string_view(reinterpret_cast<const char*>(data), size));
  absl::string_view record;
  uint64_t last = 0;
  while (true) {
    const absl::Status status = reader.ReadRecord(&record);
    if (!status.ok()) break;
    if (reader.offset() <= last || reader.offset() > size) std::abort();
    last = reader.offset();
    overseer::Event event;
    (void)event.ParseFromArray(record.data(), static_cast<int>(record.size()));
  }
  return 0;
}

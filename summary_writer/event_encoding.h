#ifndef OVERSEER_SUMMARY_WRITER_EVENT_ENCODING_H_
#define OVERSEER_SUMMARY_WRITER_EVENT_ENCODING_H_

// Serializes summary Events without building an Event message: the writer's hot path
// (one scalar per step) appends Event{wall_time, step, summary} straight into its
// record buffer. The bytes are exactly what Event::SerializeToString produces for the
// same fields (event_encoding_test.cc checks this). Thread-compatible.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/summary.pb.h"

namespace overseer {

// Event.wall_time for `time`: seconds since the Unix epoch, to the microsecond, as
// TensorFlow's writers stamp it (NowMicros() / 1e6). A double holds no finer than
// about a quarter of a microsecond for today's dates anyway; this is several times
// cheaper than absl::ToDoubleSeconds, and every event pays it.
inline double EventWallTime(absl::Time time) {
  return static_cast<double>(absl::ToUnixMicros(time)) / 1e6;
}

// Appends the serialization of an Event with `wall_time`, `step` and `summary` set.
void AppendSummaryEvent(double wall_time, int64_t step, const Summary& summary, std::string* out);

// The same for a summary given serialized; `summary` is copied as is, so the caller
// makes sure it is a valid serialized Summary.
void AppendSerializedSummaryEvent(double wall_time, int64_t step, absl::string_view summary,
                                  std::string* out);

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_EVENT_ENCODING_H_

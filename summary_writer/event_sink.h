#ifndef OVERSEER_SUMMARY_WRITER_EVENT_SINK_H_
#define OVERSEER_SUMMARY_WRITER_EVENT_SINK_H_

// Where a SummaryWriter's events go: an event file on the local disk
// (EventFileWriter) or a writer of the summary_writer service (GrpcEventSink).

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/event.pb.h"
#include "proto/summary.pb.h"

namespace overseer {

// Implementations are thread-safe.
class EventSink {
 public:
  virtual ~EventSink() = default;

  // Queues `event` (in order). A zero wall_time is replaced with the current time.
  // May write or send queued events (when the queue fills or a flush is due) and then
  // returns their errors. FAILED_PRECONDITION after Close.
  virtual absl::Status WriteEvent(const Event& event) = 0;

  // WriteEvent of Event{wall_time, step, summary}, which implementations may queue
  // without building the Event (the per-step hot path). The default builds it.
  virtual absl::Status WriteSummary(double wall_time, int64_t step, const Summary& summary) {
    Event event;
    event.set_wall_time(wall_time);
    event.set_step(step);
    *event.mutable_summary() = summary;
    return WriteEvent(event);
  }

  // The same for a serialized Summary, which the caller has checked parses
  // (implementations may copy the bytes as they are).
  virtual absl::Status WriteSerializedSummary(double wall_time, int64_t step,
                                              absl::string_view summary) {
    Event event;
    if (!event.mutable_summary()->ParseFromArray(summary.data(),
                                                 static_cast<int>(summary.size()))) {
      return absl::InvalidArgumentError("not a serialized Summary proto");
    }
    event.set_wall_time(wall_time);
    event.set_step(step);
    return WriteEvent(event);
  }

  // Blocks until every event queued so far is durable (written and fsynced).
  virtual absl::Status Flush() = 0;

  // Flush, then release the file or remote writer. Later calls fail with
  // FAILED_PRECONDITION; a second Close returns OK.
  virtual absl::Status Close() = 0;
};

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_EVENT_SINK_H_

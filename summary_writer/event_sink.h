#ifndef OVERSEER_SUMMARY_WRITER_EVENT_SINK_H_
#define OVERSEER_SUMMARY_WRITER_EVENT_SINK_H_

// Where a SummaryWriter's events go: an event file on the local disk
// (EventFileWriter) or a writer of the summary_writer service (GrpcEventSink).

#include "absl/status/status.h"
#include "proto/event.pb.h"

namespace overseer {

// Implementations are thread-safe.
class EventSink {
 public:
  virtual ~EventSink() = default;

  // Queues `event` (in order). A zero wall_time is replaced with the current time.
  // May write or send queued events (when the queue fills or a flush is due) and then
  // returns their errors. FAILED_PRECONDITION after Close.
  virtual absl::Status WriteEvent(const Event& event) = 0;

  // Blocks until every event queued so far is durable (written and fsynced).
  virtual absl::Status Flush() = 0;

  // Flush, then release the file or remote writer. Later calls fail with
  // FAILED_PRECONDITION; a second Close returns OK.
  virtual absl::Status Close() = 0;
};

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_EVENT_SINK_H_

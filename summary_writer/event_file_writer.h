#ifndef OVERSEER_SUMMARY_WRITER_EVENT_FILE_WRITER_H_
#define OVERSEER_SUMMARY_WRITER_EVENT_FILE_WRITER_H_

// Writes one TensorBoard event file (docs/summary_writer.md, FORMATS.md 1 and 4):
//   <dir>/events.out.tfevents.<10-digit seconds>.<host>.<pid>.<n><suffix>
// starting with the record brain.Event:2. Events are framed as TFRecords and queued in
// memory; the queue is written to the file (whole records only) when it holds
// max_queue events, and written and fsynced by Flush, by Close, and when
// flush_interval has passed since the last flush: checked by FlushIfDue, which an
// owner calls periodically (SummaryWriter's flusher, the service's), and whenever a
// full queue is written, so that a writer whose owner never calls FlushIfDue still
// flushes. (Not on every event: the clock read was a tenth of an event's cost.)

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/io/file_system.h"
#include "proto/event.pb.h"
#include "summary_writer/event_sink.h"

namespace overseer {

struct EventFileWriterOptions {
  // As TensorFlow's FileWriter: flush every 120 s, and write out every 10 events.
  absl::Duration flush_interval = absl::Seconds(120);
  int max_queue = 10;
  // Appended to the file name (TF2 writers use ".v2").
  std::string filename_suffix;
  // When set, the file starts (after the version record) with an Event at this step
  // holding SessionLog START, so that TensorBoard drops the values of steps >= it that
  // an earlier run of the trainer wrote (FORMATS.md 5.3).
  std::optional<int64_t> start_step;
};

// What the writer uses from its surroundings. Not owned; must outlive the writer.
struct EventWriterEnv {
  FileSystem* fs = FileSystem::Posix();
  // Stamps events and paces periodic flushes. Required.
  Clock* clock = nullptr;
  // Empty: the machine's host name.
  std::string hostname;
  // 0: this process's id.
  int64_t pid = 0;
  // If set, told how long each flush took (writing the queue out and the fsync) that
  // had something to make durable, whatever asked for it: Flush, a periodic flush
  // (FlushIfDue, or one due when a full queue is written), Close. Called with the
  // writer's lock held: must be quick and must not call the writer.
  std::function<void(absl::Duration)> on_flush;
};

// The "source_metadata.writer" of the first event of every file.
inline constexpr char kEventWriterName[] = "overseer.summary_writer";

// The file name for a file created at `time`.
std::string EventFileName(absl::Time time, absl::string_view hostname, int64_t pid, int64_t n,
                          absl::string_view suffix);

// Thread-safe.
class EventFileWriter : public EventSink {
 public:
  // Creates `dir` if needed and a new event file in it whose name sorts after every
  // event file already there (taking a later timestamp if the clock's would not), then
  // writes and fsyncs the version record (and START, see options). INVALID_ARGUMENT for
  // bad options; the file system's error otherwise.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Create(
      const std::string& dir, const EventFileWriterOptions& options,
      const EventWriterEnv& env = EventWriterEnv());

  // Closes the file if Close was not called (errors are logged).
  ~EventFileWriter() override;
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // EventSink. After a file-system error every call returns that error (the file then
  // ends with whole records, unless the failed write itself was cut short).
  absl::Status WriteEvent(const Event& event) override;
  absl::Status WriteSummary(double wall_time, int64_t step, const Summary& summary) override;
  absl::Status WriteSerializedSummary(double wall_time, int64_t step,
                                      absl::string_view summary) override;
  absl::Status Flush() override;
  absl::Status Close() override;

  // WriteEvent of each of `events` in order, under one lock (the service's batches).
  // The batch is queued whole and written with one write when the queue holds
  // max_queue events or more, instead of one write per max_queue events. Stops at the
  // first error; the events before it stay queued.
  absl::Status WriteEvents(const google::protobuf::RepeatedPtrField<Event>& events);

  // Queues `records`, TFRecord-framed serialized Events (WriteEventsRequest.records),
  // as they are, with one write when the queue then holds max_queue events or more.
  // Checks first that every record is whole, its CRCs match and its data parses as an
  // Event: INVALID_ARGUMENT naming the first bad record, and nothing is queued. Returns
  // the number of events queued.
  absl::StatusOr<int64_t> WriteRecords(absl::string_view records);

  // Flushes if flush_interval has passed since the last flush and events are queued.
  absl::Status FlushIfDue();

  // The file's path.
  const std::string& path() const { return path_; }
  // Bytes framed so far (written or queued), including the version record.
  int64_t bytes() const;

 private:
  EventFileWriter(std::string path, std::unique_ptr<WritableFile> file,
                  const EventFileWriterOptions& options, Clock* clock,
                  std::function<void(absl::Duration)> on_flush);

  // Frames the record whose data `append` appends to queue_, then writes it (or
  // flushes, when due) if the queue is full and `write_when_full`.
  template <typename AppendFn>
  absl::Status QueueLocked(const AppendFn& append, bool write_when_full = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteQueueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the queue, or flushes when flush_interval has passed.
  absl::Status WriteOrFlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckOpenLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const EventFileWriterOptions options_;
  Clock* const clock_;
  const std::function<void(absl::Duration)> on_flush_;

  mutable absl::Mutex mu_;
  std::unique_ptr<WritableFile> file_ ABSL_GUARDED_BY(mu_);
  std::string queue_ ABSL_GUARDED_BY(mu_);  // Framed records not yet appended.
  int queued_events_ ABSL_GUARDED_BY(mu_) = 0;
  bool unsynced_ ABSL_GUARDED_BY(mu_) = false;  // Appended since the last Sync.
  absl::Time last_flush_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_EVENT_FILE_WRITER_H_

#ifndef OVERSEER_SUMMARY_WRITER_SUMMARY_WRITER_SERVICE_H_
#define OVERSEER_SUMMARY_WRITER_SUMMARY_WRITER_SERVICE_H_

// The logic of the summary_writer service: event files for many runs and trainers at
// once, one directory per run under the logdir. Takes and returns protos and
// absl::Status; rpc/grpc_summary_writer_service.h puts it on gRPC.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/summary_writer_service.pb.h"
#include "summary_writer/event_file_writer.h"

namespace overseer {

struct SummaryWriterServiceOptions {
  // Every run directory is created below this one; nothing is written outside it.
  std::string logdir;
  // Used when OpenWriterRequest leaves flush_secs or max_queue at 0.
  absl::Duration default_flush_interval = absl::Seconds(120);
  int default_max_queue = 10;
  // OpenWriter fails RESOURCE_EXHAUSTED while this many writers are open.
  int max_open_writers = 1000;
  // FlushDue closes writers that no call used for this long (zero: never). A client
  // that comes back gets NOT_FOUND, on which GrpcEventSink opens a new file.
  absl::Duration idle_close = absl::Hours(1);
};

// Thread-safe: calls for different writers run in parallel; calls for one writer are
// ordered by that writer.
// A random first writer id in [1, 2^62).
int64_t RandomFirstWriterId();

class SummaryWriterServiceImpl {
 public:
  // `env` (file system, clock) must outlive the service; the service sets its
  // on_flush. `metrics` may be null; else the service registers in it (the prefix is
  // not overseer_summary_writer_: promtool rejects names that contain "_summary_")
  //   overseer_event_writer_events_written_total  events accepted into event files
  //   overseer_event_writer_bytes_written_total   bytes of their framed records
  //   overseer_event_writer_flush_duration_seconds  every flush that made events
  //       durable (write out and fsync): FlushWriter, periodic, on close
  //   overseer_event_writer_files_open            event files open now
  //   overseer_event_writer_idle_closed_total     files closed after idle_close
  SummaryWriterServiceImpl(SummaryWriterServiceOptions options, EventWriterEnv env,
                           prometheus::Registry* metrics);
  // Closes every writer still open (errors are logged).
  ~SummaryWriterServiceImpl();
  SummaryWriterServiceImpl(const SummaryWriterServiceImpl&) = delete;
  SummaryWriterServiceImpl& operator=(const SummaryWriterServiceImpl&) = delete;

  // Opens a new event file in <logdir>/<run>. INVALID_ARGUMENT for a bad run name or
  // negative flush_secs / max_queue; the file system's error otherwise; UNAVAILABLE
  // after CloseAll.
  absl::Status OpenWriter(const OpenWriterRequest& request, OpenWriterResponse* response);
  // Queues the events of one message of a WriteEvents stream (`events`, then the
  // framed `records`) and returns how many. NOT_FOUND for an unknown (or closed)
  // writer id; INVALID_ARGUMENT for a bad record; the writer's error otherwise.
  absl::StatusOr<int64_t> WriteEvents(const WriteEventsRequest& request);
  // Makes the writer's events durable. NOT_FOUND for an unknown writer id.
  absl::Status FlushWriter(const FlushWriterRequest& request, FlushWriterResponse* response);
  // Flushes and closes the writer and forgets its id. NOT_FOUND for an unknown id.
  absl::Status CloseWriter(const CloseWriterRequest& request, CloseWriterResponse* response);

  // Flushes every writer whose flush interval has passed, and closes those idle for
  // longer than idle_close (called periodically).
  void FlushDue();
  // Flushes and closes every writer; later OpenWriter calls fail. Returns the first
  // error. For shutdown.
  absl::Status CloseAll();

  int open_writers() const;

 private:
  struct OpenFile {
    std::shared_ptr<EventFileWriter> writer;
    absl::Time last_used;
  };
  // The writer, marked used now.
  absl::StatusOr<std::shared_ptr<EventFileWriter>> Find(int64_t writer_id);

  const SummaryWriterServiceOptions options_;
  const EventWriterEnv env_;

  prometheus::Counter* events_written_ = nullptr;
  prometheus::Counter* bytes_written_ = nullptr;
  prometheus::Histogram* flush_duration_ = nullptr;
  prometheus::Gauge* open_writers_gauge_ = nullptr;
  prometheus::Counter* idle_closed_ = nullptr;

  mutable absl::Mutex mu_;
  // Starts at a random value, so that a client holding the id of a writer of an
  // earlier incarnation of the server gets NOT_FOUND, never another client's writer.
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = RandomFirstWriterId();
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int64_t, OpenFile> writers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_SUMMARY_WRITER_SERVICE_H_

#ifndef OVERSEER_SUMMARY_WRITER_RPC_GRPC_EVENT_SINK_H_
#define OVERSEER_SUMMARY_WRITER_RPC_GRPC_EVENT_SINK_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "grpcpp/channel.h"
#include "proto/summary_writer_service.grpc.pb.h"
#include "summary_writer/event_sink.h"

namespace overseer {

struct GrpcEventSinkOptions {
  // Passed to OpenWriter (0: the server's defaults).
  int flush_secs = 0;
  int max_queue = 0;
  std::string filename_suffix;
  std::optional<int64_t> start_step;
  // Events sent per WriteEvents message.
  int batch_size = 64;
  // Deadline of each unary call; a WriteEvents stream may stay open for
  // stream_lifetime (the owner flushes more often than that) plus this.
  absl::Duration rpc_timeout = absl::Seconds(30);
  absl::Duration stream_lifetime = absl::Minutes(10);
  // Events kept while the server is unreachable; also the most a stream carries
  // before it is ended to have them acknowledged (and freed).
  int max_pending_events = 10000;
};

// An EventSink writing to one writer of a summary_writer server. Events are framed
// as TFRecords as they come (WriteEventsRequest.records), batched, and sent on a
// WriteEvents stream. Flush sends the last batch with the stream's
// flush flag and ends the stream: one round trip, and every event is durable when the
// server answers (FlushWriter only when nothing was sent since the last flush). Close
// ends the stream before calling CloseWriter, so that it sees every event.
//
// The writer survives a restart of the server: when the server does not know the
// writer any more (NOT_FOUND: it restarted) or cannot be reached (UNAVAILABLE), the
// sink opens a new writer for the run (a new event file, as TensorFlow's writer does
// after a restart) and sends again every event the server had not acknowledged (the
// events of the broken stream). While the server is unreachable, WriteEvent keeps the
// events (up to max_pending_events, dropping the oldest beyond) and returns OK, so
// that training does not stop for its summaries; Flush and Close return the error.
// Thread-safe.
class GrpcEventSink : public EventSink {
 public:
  // Opens a writer for `run` on the server behind `channel`. `clock` (not owned, not
  // null) stamps events and paces flushes. The server's error (INVALID_ARGUMENT for a
  // bad run name), or UNAVAILABLE / DEADLINE_EXCEEDED.
  static absl::StatusOr<std::unique_ptr<GrpcEventSink>> Open(std::shared_ptr<grpc::Channel> channel,
                                                             const std::string& run,
                                                             const GrpcEventSinkOptions& options,
                                                             Clock* clock);

  // Closes the remote writer if Close was not called (errors are logged).
  ~GrpcEventSink() override;

  absl::Status WriteEvent(const Event& event) override;
  absl::Status WriteSummary(double wall_time, int64_t step, const Summary& summary) override;
  absl::Status Flush() override;
  absl::Status Close() override;

  // The current event file's path relative to the server's logdir (a new one after
  // the server restarted).
  std::string file() const;
  // How many times a new writer was opened because the old one was lost.
  int reopens() const;
  // Events held: queued, or streamed and not acknowledged yet.
  int pending_events() const;

 private:
  GrpcEventSink(std::unique_ptr<SummaryWriterService::Stub> stub, std::string run,
                OpenWriterResponse opened, const GrpcEventSinkOptions& options, Clock* clock);

  // Adds an event, serialized by `append`, to the batch as a framed record (sending
  // the batch when full).
  template <typename AppendFn>
  absl::Status QueueLocked(const AppendFn& append) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double NowSeconds() const;
  // Sends the batch and, with `finish`, ends the stream so that the server has taken
  // every event sent (and, with `flush` too, made them durable); after a lost writer,
  // reopens and sends the unacknowledged events again (once per call).
  absl::Status SendLocked(bool finish, bool flush = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status TrySendLocked(bool finish, bool flush) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FinishStreamLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Opens a new writer for the run and queues the unacknowledged events before the
  // batch. On failure the sink stays lost and keeps its events.
  absl::Status ReopenLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A unary call on the current writer (FlushWriter, CloseWriter), reopening and
  // resending once when the writer was lost.
  template <typename CallFn>
  absl::Status CallWriterLocked(const CallFn& call, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<SummaryWriterService::Stub> stub_;
  const std::string run_;
  const GrpcEventSinkOptions options_;
  Clock* const clock_;

  mutable absl::Mutex mu_;
  int64_t writer_id_ ABSL_GUARDED_BY(mu_);
  std::string file_ ABSL_GUARDED_BY(mu_);
  // Events are serialized and framed as they are queued (WriteEventsRequest.records),
  // so the server appends them without parsing them into messages and serializing
  // them again.
  std::string batch_records_ ABSL_GUARDED_BY(mu_);
  int batch_count_ ABSL_GUARDED_BY(mu_) = 0;
  // Events sent on the current stream, not yet acknowledged by its end.
  std::string unacked_records_ ABSL_GUARDED_BY(mu_);
  int unacked_count_ ABSL_GUARDED_BY(mu_) = 0;
  WriteEventsRequest request_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::ClientContext> stream_context_ ABSL_GUARDED_BY(mu_);
  WriteEventsResponse stream_response_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::ClientWriter<WriteEventsRequest>> stream_ ABSL_GUARDED_BY(mu_);
  // The writer was lost and could not be reopened yet.
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  int reopens_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace overseer

#endif  // OVERSEER_SUMMARY_WRITER_RPC_GRPC_EVENT_SINK_H_

#include "client/summary/summary_writer.h"

#include <algorithm>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/io/run_name.h"
#include "core/logging.h"
#include "core/rpc/channel.h"
#include "core/rpc/grpc_target.h"
#include "core/status_macros.h"
#include "summary_writer/event_encoding.h"
#include "summary_writer/event_file_writer.h"
#include "summary_writer/periodic_flusher.h"
#include "summary_writer/rpc/grpc_event_sink.h"

namespace overseer {

absl::StatusOr<std::unique_ptr<SummaryWriter>> SummaryWriter::Create(
    const std::string& logdir, const SummaryWriterOptions& given) {
  SummaryWriterOptions options = given;
  if (options.clock == nullptr) options.clock = Clock::Real();  // The public entry point.
  if (options.flush_secs < 1 || options.max_queue < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("flush_secs and max_queue must be at least 1, got ", options.flush_secs,
                     " and ", options.max_queue));
  }
  if (logdir.empty()) return absl::InvalidArgumentError("empty logdir");
  SinkFactory factory;
  if (absl::StartsWith(logdir, kGrpcScheme)) {
    ASSIGN_OR_RETURN(GrpcTarget target, ParseGrpcTarget(logdir));
    if (target.rest.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "summary logdir '", logdir, "' must look like grpc://host:port/<run>: it names no run"));
    }
    const std::string run = target.rest;
    RETURN_IF_ERROR(ValidateRunName(run));
    auto channel = NewChannel(target.address);
    factory = [channel, run, options, logdir](
                  std::optional<int64_t> start_step) -> absl::StatusOr<std::unique_ptr<EventSink>> {
      GrpcEventSinkOptions sink_options;
      sink_options.flush_secs = options.flush_secs;
      sink_options.max_queue = options.max_queue;
      sink_options.batch_size = std::max(options.max_queue, 512);
      sink_options.filename_suffix = options.filename_suffix;
      sink_options.start_step = start_step;
      auto sink = GrpcEventSink::Open(channel, run, sink_options, options.clock);
      if (absl::IsUnimplemented(sink.status())) {
        // Another kind of server: gRPC says only UNIMPLEMENTED, with no detail.
        return absl::FailedPreconditionError(absl::StrCat(
            "summary logdir '", logdir, "': the server there is not a summary writer (it ",
            "does not serve overseer.SummaryWriterService; a checkpoint store, perhaps?): ",
            "name a summary_writer_server's grpc://host:port/<run>, or a local directory"));
      }
      if (!sink.ok()) return sink.status();
      return std::unique_ptr<EventSink>(*std::move(sink));
    };
  } else {
    factory = [logdir, options](
                  std::optional<int64_t> start_step) -> absl::StatusOr<std::unique_ptr<EventSink>> {
      EventFileWriterOptions file_options;
      file_options.flush_interval = absl::Seconds(options.flush_secs);
      file_options.max_queue = options.max_queue;
      file_options.filename_suffix = options.filename_suffix;
      file_options.start_step = start_step;
      EventWriterEnv env;
      env.clock = options.clock;
      ASSIGN_OR_RETURN(auto writer, EventFileWriter::Create(logdir, file_options, env));
      return std::unique_ptr<EventSink>(std::move(writer));
    };
  }
  ASSIGN_OR_RETURN(std::unique_ptr<EventSink> sink, factory(options.start_step));
  return std::unique_ptr<SummaryWriter>(new SummaryWriter(factory, std::move(sink), options));
}

SummaryWriter::SummaryWriter(SinkFactory factory, std::unique_ptr<EventSink> sink,
                             const SummaryWriterOptions& options)
    : factory_(std::move(factory)), options_(options) {
  {
    absl::MutexLock lock(&mu_);
    sink_.store(sink.get(), std::memory_order_release);
    sinks_.push_back(std::move(sink));
    last_flush_ = options_.clock->Now();
  }
  if (options_.background_flush) {
    flusher_ = std::make_unique<PeriodicFlusher>(
        options_.clock, std::min(absl::Seconds(options_.flush_secs), absl::Seconds(1)),
        [this] { FlushIfDue(); });
  }
}

SummaryWriter::~SummaryWriter() {
  flusher_.reset();
  const absl::Status s = Close();
  if (!s.ok()) LOG(ERROR) << "closing summary writer: " << s.ToString();
}

double SummaryWriter::Now() const { return EventWallTime(options_.clock->Now()); }

template <typename WriteFn>
absl::Status SummaryWriter::Write(const WriteFn& write, bool is_summary) {
  EventSink* sink = sink_.load(std::memory_order_acquire);
  absl::Status s = write(sink);
  if (absl::IsFailedPrecondition(s)) {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::FailedPreconditionError("summary writer is closed");
    EventSink* current = sink_.load(std::memory_order_relaxed);
    if (current == sink) return s;
    s = write(current);  // A restart replaced the sink meanwhile.
  }
  if (!s.ok()) return s;
  if (is_summary) has_summaries_.store(true, std::memory_order_relaxed);
  dirty_.store(true, std::memory_order_relaxed);
  return s;
}

absl::Status SummaryWriter::AddEvent(const Event& event) {
  return Write([&](EventSink* sink) { return sink->WriteEvent(event); }, event.has_summary());
}

absl::Status SummaryWriter::AddSummary(const Summary& summary, int64_t step) {
  const double wall_time = Now();
  return Write([&](EventSink* sink) { return sink->WriteSummary(wall_time, step, summary); },
               /*is_summary=*/true);
}

absl::Status SummaryWriter::AddSummary(const std::string& serialized_summary, int64_t step) {
  // Parsed only to check it; the sink takes the bytes as they are. The scratch message
  // keeps its allocations from call to call.
  thread_local Summary scratch;
  if (!scratch.ParseFromString(serialized_summary)) {
    return absl::InvalidArgumentError("AddSummary: not a serialized Summary proto");
  }
  const double wall_time = Now();
  return Write(
      [&](EventSink* sink) {
        return sink->WriteSerializedSummary(wall_time, step, serialized_summary);
      },
      /*is_summary=*/true);
}

absl::Status SummaryWriter::AddGraph(const GraphDef& graph, int64_t step) {
  Event event;
  event.set_wall_time(Now());
  event.set_step(step);
  graph.SerializeToString(event.mutable_graph_def());
  return AddEvent(event);
}

absl::Status SummaryWriter::AddMetaGraph(const MetaGraphDef& meta_graph, int64_t step) {
  Event event;
  event.set_wall_time(Now());
  event.set_step(step);
  meta_graph.SerializeToString(event.mutable_meta_graph_def());
  return AddEvent(event);
}

absl::Status SummaryWriter::AddSessionLog(SessionLog::SessionStatus status, int64_t step,
                                          const std::string& checkpoint_path) {
  if (status == SessionLog::START) {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::FailedPreconditionError("summary writer is closed");
    if (has_summaries_.load(std::memory_order_relaxed)) {
      // A restart: values at steps >= `step` in the old file are orphaned. A new file
      // (sorting after the old one) starts with START at `step`.
      RETURN_IF_ERROR(sinks_.back()->Close());
      ASSIGN_OR_RETURN(std::unique_ptr<EventSink> next, factory_(step));
      sink_.store(next.get(), std::memory_order_release);
      sinks_.push_back(std::move(next));
      has_summaries_.store(false, std::memory_order_relaxed);
      dirty_.store(false, std::memory_order_relaxed);
      return absl::OkStatus();
    }
  }
  Event event;
  event.set_wall_time(Now());
  event.set_step(step);
  event.mutable_session_log()->set_status(status);
  event.mutable_session_log()->set_checkpoint_path(checkpoint_path);
  return AddEvent(event);
}

absl::Status SummaryWriter::Flush() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::FailedPreconditionError("summary writer is closed");
  last_flush_ = options_.clock->Now();
  dirty_.store(false, std::memory_order_relaxed);
  return sinks_.back()->Flush();
}

void SummaryWriter::FlushIfDue() {
  absl::MutexLock lock(&mu_);
  if (closed_ || !dirty_.load(std::memory_order_relaxed)) return;
  if (options_.clock->Now() - last_flush_ < absl::Seconds(options_.flush_secs)) return;
  last_flush_ = options_.clock->Now();
  dirty_.store(false, std::memory_order_relaxed);
  const absl::Status s = sinks_.back()->Flush();
  if (!s.ok()) LOG(WARNING) << "periodic flush of summaries: " << s.ToString();
}

absl::Status SummaryWriter::Close() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::OkStatus();
  closed_ = true;
  return sinks_.back()->Close();
}

}  // namespace overseer

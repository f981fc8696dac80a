#include "summary_writer/rpc/grpc_event_sink.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/rpc/client_context.h"
#include "core/rpc/grpc_status.h"
#include "core/status_macros.h"
#include "summary_writer/event_encoding.h"
#include "summary_writer/record.h"

namespace overseer {

namespace {

// Whether `status` says the server lost the writer (it restarted: NOT_FOUND) or could
// not be reached (UNAVAILABLE): then a new writer is opened.
bool WriterLost(const absl::Status& status) {
  return absl::IsNotFound(status) || absl::IsUnavailable(status);
}

// Removes the first `n` framed records of `records` (all of them if it holds fewer).
void DropRecords(int n, std::string* records) {
  RecordReader reader(*records);
  std::string skipped;
  int dropped = 0;
  while (dropped < n && reader.ReadRecord(&skipped).ok()) ++dropped;
  records->erase(0, reader.offset());
}

OpenWriterRequest OpenRequest(const std::string& run, const GrpcEventSinkOptions& options,
                              bool first) {
  OpenWriterRequest request;
  request.set_run(run);
  request.set_flush_secs(options.flush_secs);
  request.set_max_queue(options.max_queue);
  request.set_filename_suffix(options.filename_suffix);
  // A reopened file continues the run; only the first one starts it.
  if (first && options.start_step.has_value()) {
    request.set_write_start(true);
    request.set_start_step(*options.start_step);
  }
  return request;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcEventSink>> GrpcEventSink::Open(
    std::shared_ptr<grpc::Channel> channel, const std::string& run,
    const GrpcEventSinkOptions& options, Clock* clock) {
  if (clock == nullptr) return absl::InvalidArgumentError("GrpcEventSink: the clock is null");
  if (options.batch_size < 1 || options.max_pending_events < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size and max_pending_events must be at least 1, got ",
                     options.batch_size, " and ", options.max_pending_events));
  }
  auto stub = SummaryWriterService::NewStub(channel);
  OpenWriterResponse response;
  auto context = NewClientContext(options.rpc_timeout);
  RETURN_IF_ERROR(Annotate(
      FromGrpcStatus(stub->OpenWriter(context.get(), OpenRequest(run, options, true), &response)),
      absl::StrCat("opening a summary writer for run '", run, "': ")));
  return std::unique_ptr<GrpcEventSink>(
      new GrpcEventSink(std::move(stub), run, std::move(response), options, clock));
}

GrpcEventSink::GrpcEventSink(std::unique_ptr<SummaryWriterService::Stub> stub, std::string run,
                             OpenWriterResponse opened, const GrpcEventSinkOptions& options,
                             Clock* clock)
    : stub_(std::move(stub)), run_(std::move(run)), options_(options), clock_(clock) {
  absl::MutexLock lock(&mu_);
  writer_id_ = opened.writer_id();
  file_ = opened.file();
}

GrpcEventSink::~GrpcEventSink() {
  const absl::Status s = Close();
  if (!s.ok()) LOG(ERROR) << "closing remote event file " << file() << ": " << s.ToString();
}

std::string GrpcEventSink::file() const {
  absl::MutexLock lock(&mu_);
  return file_;
}

int GrpcEventSink::pending_events() const {
  absl::MutexLock lock(&mu_);
  return batch_count_ + unacked_count_;
}

int GrpcEventSink::reopens() const {
  absl::MutexLock lock(&mu_);
  return reopens_;
}

template <typename AppendFn>
absl::Status GrpcEventSink::QueueLocked(const AppendFn& append) {
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(file_, " is closed"));
  // Serialize straight into the batch, then frame the record around it.
  const size_t start = batch_records_.size();
  batch_records_.append(kRecordHeaderSize, '\0');
  append(&batch_records_);
  FrameRecordInPlace(start, &batch_records_);
  ++batch_count_;
  if (batch_count_ < options_.batch_size) return absl::OkStatus();
  // A stream holds its events until it ends (to send them again if the writer is
  // lost): end it once it holds max_pending_events, so memory stays bounded between
  // flushes.
  const bool finish = unacked_count_ + batch_count_ >= options_.max_pending_events;
  const absl::Status sent = SendLocked(finish);
  if (!lost_) return sent;
  // The server is unreachable: keep the newest events for when it is back (the
  // unacknowledged ones are older than the batch).
  const int excess = unacked_count_ + batch_count_ - options_.max_pending_events;
  if (excess > 0) {
    const int from_unacked = std::min(excess, unacked_count_);
    DropRecords(from_unacked, &unacked_records_);
    unacked_count_ -= from_unacked;
    DropRecords(excess - from_unacked, &batch_records_);
    batch_count_ -= excess - from_unacked;
    LOG(WARNING) << "summary writer for run '" << run_ << "' unreachable: dropped the " << excess
                 << " oldest pending events";
  }
  return absl::OkStatus();
}

double GrpcEventSink::NowSeconds() const { return EventWallTime(clock_->Now()); }

absl::Status GrpcEventSink::WriteEvent(const Event& event) {
  absl::MutexLock lock(&mu_);
  if (event.wall_time() != 0) {
    return QueueLocked([&](std::string* out) { event.AppendToString(out); });
  }
  Event stamped = event;
  stamped.set_wall_time(NowSeconds());
  return QueueLocked([&](std::string* out) { stamped.AppendToString(out); });
}

absl::Status GrpcEventSink::WriteSummary(double wall_time, int64_t step, const Summary& summary) {
  absl::MutexLock lock(&mu_);
  if (wall_time == 0) wall_time = NowSeconds();
  return QueueLocked([&](std::string* out) { AppendSummaryEvent(wall_time, step, summary, out); });
}

absl::Status GrpcEventSink::SendLocked(bool finish, bool flush) {
  if (lost_) RETURN_IF_ERROR(ReopenLocked());
  const absl::Status sent = TrySendLocked(finish, flush);
  if (!WriterLost(sent)) return sent;
  LOG(WARNING) << "summary writer " << writer_id_ << " (" << file_ << ") lost: " << sent
               << "; opening a new event file for run '" << run_ << "'";
  lost_ = true;
  RETURN_IF_ERROR(ReopenLocked());
  return TrySendLocked(finish, flush);
}

absl::Status GrpcEventSink::TrySendLocked(bool finish, bool flush) {
  flush = flush && finish;
  if (batch_count_ > 0 || (flush && stream_ != nullptr)) {
    if (stream_ == nullptr) {
      stream_context_ = NewClientContext(options_.stream_lifetime + options_.rpc_timeout);
      stream_response_.Clear();
      stream_ = stub_->WriteEvents(stream_context_.get(), &stream_response_);
    }
    request_.set_writer_id(writer_id_);
    request_.set_flush(flush);
    request_.mutable_records()->swap(batch_records_);
    const bool written = stream_->Write(request_);
    unacked_records_.append(request_.records());
    unacked_count_ += batch_count_;
    request_.mutable_records()->clear();
    batch_records_.swap(*request_.mutable_records());  // Keeps the capacity.
    batch_records_.clear();
    batch_count_ = 0;
    if (!written) {  // The stream broke; its status says why.
      const absl::Status broken = FinishStreamLocked();
      return broken.ok() ? absl::UnavailableError("the WriteEvents stream broke") : broken;
    }
  }
  return finish ? FinishStreamLocked() : absl::OkStatus();
}

absl::Status GrpcEventSink::FinishStreamLocked() {
  if (stream_ == nullptr) return absl::OkStatus();
  stream_->WritesDone();
  const grpc::Status status = stream_->Finish();
  stream_.reset();
  stream_context_.reset();
  const absl::Status finished = FromGrpcStatus(status);
  // Acknowledged: the server took every event of the stream. Otherwise they are kept
  // for a new writer if this one was lost, and dropped on any other error.
  if (finished.ok() || !WriterLost(finished)) {
    unacked_records_.clear();
    unacked_count_ = 0;
  }
  return Annotate(finished, absl::StrCat("writing events to ", file_, ": "));
}

absl::Status GrpcEventSink::ReopenLocked() {
  stream_.reset();
  stream_context_.reset();
  OpenWriterResponse response;
  auto context = NewClientContext(options_.rpc_timeout);
  RETURN_IF_ERROR(Annotate(FromGrpcStatus(stub_->OpenWriter(
                               context.get(), OpenRequest(run_, options_, false), &response)),
                           absl::StrCat("reopening the summary writer for run '", run_, "': ")));
  LOG(INFO) << "summary writer for run '" << run_ << "' reopened as " << response.file();
  writer_id_ = response.writer_id();
  file_ = response.file();
  lost_ = false;
  ++reopens_;
  // The unacknowledged events go first, in their order.
  unacked_records_.append(batch_records_);
  batch_records_.swap(unacked_records_);
  batch_count_ += unacked_count_;
  unacked_records_.clear();
  unacked_count_ = 0;
  return absl::OkStatus();
}

template <typename CallFn>
absl::Status GrpcEventSink::CallWriterLocked(const CallFn& call, const char* what) {
  RETURN_IF_ERROR(SendLocked(/*finish=*/true));
  auto context = NewClientContext(options_.rpc_timeout);
  absl::Status s = FromGrpcStatus(call(context.get(), writer_id_));
  if (WriterLost(s)) {
    // The server restarted since the stream ended: reopen, resend, call again.
    lost_ = true;
    RETURN_IF_ERROR(SendLocked(/*finish=*/true));
    auto again = NewClientContext(options_.rpc_timeout);
    s = FromGrpcStatus(call(again.get(), writer_id_));
  }
  return Annotate(s, absl::StrCat(what, " ", file_, ": "));
}

absl::Status GrpcEventSink::Flush() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(file_, " is closed"));
  if (lost_ || stream_ != nullptr || batch_count_ > 0) {
    // The stream's last message carries the flush; a reopened writer gets every
    // unacknowledged event again, flushed alike.
    return SendLocked(/*finish=*/true, /*flush=*/true);
  }
  return CallWriterLocked(
      [this](grpc::ClientContext* context, int64_t id) {
        FlushWriterRequest request;
        request.set_writer_id(id);
        FlushWriterResponse response;
        return stub_->FlushWriter(context, request, &response);
      },
      "flushing");
}

absl::Status GrpcEventSink::Close() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::OkStatus();
  closed_ = true;
  return CallWriterLocked(
      [this](grpc::ClientContext* context, int64_t id) {
        CloseWriterRequest request;
        request.set_writer_id(id);
        CloseWriterResponse response;
        return stub_->CloseWriter(context, request, &response);
      },
      "closing");
}

}  // namespace overseer

#include "summary_writer/rpc/grpc_event_sink.h"

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/rpc/client_context.h"
#include "core/rpc/grpc_status.h"
#include "core/status_macros.h"

namespace overseer {

absl::StatusOr<std::unique_ptr<GrpcEventSink>> GrpcEventSink::Open(
    std::shared_ptr<grpc::Channel> channel, const std::string& run,
    const GrpcEventSinkOptions& options, Clock* clock) {
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size must be at least 1, got ", options.batch_size));
  }
  auto stub = SummaryWriterService::NewStub(channel);
  OpenWriterRequest request;
  request.set_run(run);
  request.set_flush_secs(options.flush_secs);
  request.set_max_queue(options.max_queue);
  request.set_filename_suffix(options.filename_suffix);
  if (options.start_step.has_value()) {
    request.set_write_start(true);
    request.set_start_step(*options.start_step);
  }
  OpenWriterResponse response;
  auto context = NewClientContext(options.rpc_timeout);
  RETURN_IF_ERROR(Annotate(FromGrpcStatus(stub->OpenWriter(context.get(), request, &response)),
                           absl::StrCat("opening a summary writer for run '", run, "': ")));
  return std::unique_ptr<GrpcEventSink>(new GrpcEventSink(
      std::move(stub), response.writer_id(), response.file(), options, clock));
}

GrpcEventSink::GrpcEventSink(std::unique_ptr<SummaryWriterService::Stub> stub,
                             int64_t writer_id, std::string file,
                             const GrpcEventSinkOptions& options, Clock* clock)
    : stub_(std::move(stub)),
      writer_id_(writer_id),
      file_(std::move(file)),
      options_(options),
      clock_(clock) {
  absl::MutexLock lock(&mu_);
  batch_.set_writer_id(writer_id_);
}

GrpcEventSink::~GrpcEventSink() {
  const absl::Status s = Close();
  if (!s.ok()) LOG(ERROR) << "closing remote event file " << file_ << ": " << s.ToString();
}

template <typename FillFn>
absl::Status GrpcEventSink::QueueLocked(const FillFn& fill) {
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(file_, " is closed"));
  Event* queued = batch_.add_events();
  fill(queued);
  if (queued->wall_time() == 0) {
    queued->set_wall_time(absl::ToDoubleSeconds(clock_->Now() - absl::UnixEpoch()));
  }
  if (batch_.events_size() >= options_.batch_size) return SendBatchLocked();
  return absl::OkStatus();
}

absl::Status GrpcEventSink::WriteEvent(const Event& event) {
  absl::MutexLock lock(&mu_);
  return QueueLocked([&](Event* queued) { *queued = event; });
}

absl::Status GrpcEventSink::WriteSummary(double wall_time, int64_t step,
                                         const Summary& summary) {
  absl::MutexLock lock(&mu_);
  return QueueLocked([&](Event* queued) {
    queued->set_wall_time(wall_time);
    queued->set_step(step);
    *queued->mutable_summary() = summary;
  });
}

absl::Status GrpcEventSink::SendBatchLocked() {
  if (batch_.events_size() == 0) return absl::OkStatus();
  if (stream_ == nullptr) {
    stream_context_ =
        NewClientContext(options_.stream_lifetime + options_.rpc_timeout);
    stream_response_.Clear();
    stream_ = stub_->WriteEvents(stream_context_.get(), &stream_response_);
  }
  const bool sent = stream_->Write(batch_);
  batch_.clear_events();
  if (!sent) return FinishStreamLocked();  // The stream broke; its status says why.
  return absl::OkStatus();
}

absl::Status GrpcEventSink::FinishStreamLocked() {
  if (stream_ == nullptr) return absl::OkStatus();
  stream_->WritesDone();
  const grpc::Status status = stream_->Finish();
  stream_.reset();
  stream_context_.reset();
  return Annotate(FromGrpcStatus(status), absl::StrCat("writing events to ", file_, ": "));
}

absl::Status GrpcEventSink::Flush() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(file_, " is closed"));
  RETURN_IF_ERROR(SendBatchLocked());
  RETURN_IF_ERROR(FinishStreamLocked());
  FlushWriterRequest request;
  request.set_writer_id(writer_id_);
  FlushWriterResponse response;
  auto context = NewClientContext(options_.rpc_timeout);
  return Annotate(FromGrpcStatus(stub_->FlushWriter(context.get(), request, &response)),
                  absl::StrCat("flushing ", file_, ": "));
}

absl::Status GrpcEventSink::Close() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::OkStatus();
  closed_ = true;
  absl::Status sent = SendBatchLocked();
  const absl::Status finished = FinishStreamLocked();
  if (sent.ok()) sent = finished;
  CloseWriterRequest request;
  request.set_writer_id(writer_id_);
  CloseWriterResponse response;
  auto context = NewClientContext(options_.rpc_timeout);
  const absl::Status closed =
      Annotate(FromGrpcStatus(stub_->CloseWriter(context.get(), request, &response)),
               absl::StrCat("closing ", file_, ": "));
  return sent.ok() ? closed : sent;
}

}  // namespace overseer

#include "summary_writer/summary_writer_service.h"

#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "core/io/run_name.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {

namespace {

// `env` whose writers report their flushes to `*histogram` (once it is set).
EventWriterEnv ObservingFlushes(EventWriterEnv env, prometheus::Histogram* const* histogram) {
  env.on_flush = [histogram](absl::Duration took) {
    if (*histogram != nullptr) (*histogram)->Observe(absl::ToDoubleSeconds(took));
  };
  return env;
}

}  // namespace

SummaryWriterServiceImpl::SummaryWriterServiceImpl(SummaryWriterServiceOptions options,
                                                   EventWriterEnv env,
                                                   prometheus::Registry* metrics)
    : options_(std::move(options)), env_(ObservingFlushes(std::move(env), &flush_duration_)) {
  if (metrics == nullptr) return;
  events_written_ = &prometheus::BuildCounter()
                         .Name("overseer_event_writer_events_written_total")
                         .Help("Events accepted into event files.")
                         .Register(*metrics)
                         .Add({});
  bytes_written_ = &prometheus::BuildCounter()
                        .Name("overseer_event_writer_bytes_written_total")
                        .Help("Bytes of framed records accepted into event files.")
                        .Register(*metrics)
                        .Add({});
  flush_duration_ = &prometheus::BuildHistogram()
                         .Name("overseer_event_writer_flush_duration_seconds")
                         .Help(
                             "Time each flush of an event file takes (write out and fsync): "
                             "FlushWriter's, the periodic ones (every flush_secs) and "
                             "those of closing.")
                         .Register(*metrics)
                         .Add({}, prometheus::Histogram::BucketBoundaries{
                                      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                      0.5, 1, 2.5, 5});
  open_writers_gauge_ = &prometheus::BuildGauge()
                             .Name("overseer_event_writer_files_open")
                             .Help("Event files open now (OpenWriter, not yet closed).")
                             .Register(*metrics)
                             .Add({});
  idle_closed_ = &prometheus::BuildCounter()
                      .Name("overseer_event_writer_idle_closed_total")
                      .Help(
                          "Event files closed because no call used them for "
                          "--writer_idle_close_seconds.")
                      .Register(*metrics)
                      .Add({});
}

int64_t RandomFirstWriterId() {
  absl::BitGen bits;
  return absl::Uniform<int64_t>(bits, 1, int64_t{1} << 62);
}

SummaryWriterServiceImpl::~SummaryWriterServiceImpl() {
  const absl::Status s = CloseAll();
  if (!s.ok()) LOG(ERROR) << "closing event files: " << s.ToString();
}

absl::StatusOr<std::shared_ptr<EventFileWriter>> SummaryWriterServiceImpl::Find(int64_t writer_id) {
  const absl::Time now = env_.clock->Now();
  absl::MutexLock lock(&mu_);
  auto it = writers_.find(writer_id);
  if (it == writers_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no open summary writer with id ", writer_id, "; open one with OpenWriter"));
  }
  it->second.last_used = now;
  return it->second.writer;
}

absl::Status SummaryWriterServiceImpl::OpenWriter(const OpenWriterRequest& request,
                                                  OpenWriterResponse* response) {
  RETURN_IF_ERROR(ValidateRunName(request.run()));
  if (request.flush_secs() < 0 || request.max_queue() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("flush_secs and max_queue must not be negative, got ", request.flush_secs(),
                     " and ", request.max_queue()));
  }
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::UnavailableError("summary_writer is shutting down");
    if (static_cast<int>(writers_.size()) >= options_.max_open_writers) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the summary writer has ", writers_.size(),
          " event files open, its limit (--max_open_writers); close the writers you no "
          "longer use (idle ones close after --writer_idle_close_seconds)"));
    }
  }
  EventFileWriterOptions options;
  options.flush_interval = request.flush_secs() > 0 ? absl::Seconds(request.flush_secs())
                                                    : options_.default_flush_interval;
  options.max_queue = request.max_queue() > 0 ? request.max_queue() : options_.default_max_queue;
  options.filename_suffix = request.filename_suffix();
  if (request.write_start()) options.start_step = request.start_step();
  ASSIGN_OR_RETURN(
      std::unique_ptr<EventFileWriter> writer,
      EventFileWriter::Create(RunDirectory(options_.logdir, request.run()), options, env_));
  response->set_file(writer->path().substr(options_.logdir.size() + 1));
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError("summary_writer is shutting down");
  const int64_t id = next_id_++;
  writers_[id] = OpenFile{std::move(writer), env_.clock->Now()};
  response->set_writer_id(id);
  if (open_writers_gauge_ != nullptr) open_writers_gauge_->Set(writers_.size());
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SummaryWriterServiceImpl::WriteEvents(const WriteEventsRequest& request) {
  ASSIGN_OR_RETURN(std::shared_ptr<EventFileWriter> writer, Find(request.writer_id()));
  const int64_t before = writer->bytes();
  RETURN_IF_ERROR(writer->WriteEvents(request.events()));
  int64_t written = request.events_size();
  if (!request.records().empty()) {
    ASSIGN_OR_RETURN(const int64_t records, writer->WriteRecords(request.records()));
    written += records;
  }
  if (events_written_ != nullptr) {
    events_written_->Increment(static_cast<double>(written));
    bytes_written_->Increment(static_cast<double>(writer->bytes() - before));
  }
  return written;
}

absl::Status SummaryWriterServiceImpl::FlushWriter(const FlushWriterRequest& request,
                                                   FlushWriterResponse* /*response*/) {
  ASSIGN_OR_RETURN(std::shared_ptr<EventFileWriter> writer, Find(request.writer_id()));
  return writer->Flush();
}

absl::Status SummaryWriterServiceImpl::CloseWriter(const CloseWriterRequest& request,
                                                   CloseWriterResponse* /*response*/) {
  std::shared_ptr<EventFileWriter> writer;
  {
    absl::MutexLock lock(&mu_);
    auto it = writers_.find(request.writer_id());
    if (it == writers_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no open summary writer with id ", request.writer_id()));
    }
    writer = std::move(it->second.writer);
    writers_.erase(it);
    if (open_writers_gauge_ != nullptr) open_writers_gauge_->Set(writers_.size());
  }
  return writer->Close();
}

void SummaryWriterServiceImpl::FlushDue() {
  std::vector<std::shared_ptr<EventFileWriter>> writers;
  std::vector<std::shared_ptr<EventFileWriter>> idle;
  {
    const absl::Time now = env_.clock->Now();
    absl::MutexLock lock(&mu_);
    for (auto it = writers_.begin(); it != writers_.end();) {
      if (options_.idle_close > absl::ZeroDuration() &&
          now - it->second.last_used > options_.idle_close) {
        idle.push_back(std::move(it->second.writer));
        it = writers_.erase(it);
      } else {
        writers.push_back(it->second.writer);
        ++it;
      }
    }
    if (!idle.empty() && open_writers_gauge_ != nullptr) open_writers_gauge_->Set(writers_.size());
  }
  for (const auto& writer : writers) {
    const absl::Status s = writer->FlushIfDue();
    if (!s.ok()) LOG(WARNING) << "periodic flush of " << writer->path() << ": " << s.ToString();
  }
  for (const auto& writer : idle) {
    LOG(INFO) << "closing idle event file " << writer->path().substr(options_.logdir.size() + 1);
    const absl::Status s = writer->Close();
    if (!s.ok()) LOG(WARNING) << "closing idle " << writer->path() << ": " << s.ToString();
    if (idle_closed_ != nullptr) idle_closed_->Increment();
  }
}

absl::Status SummaryWriterServiceImpl::CloseAll() {
  std::map<int64_t, OpenFile> writers;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    writers.swap(writers_);
    if (open_writers_gauge_ != nullptr) open_writers_gauge_->Set(0);
  }
  absl::Status first;
  for (auto& entry : writers) {
    const absl::Status s = entry.second.writer->Close();
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

int SummaryWriterServiceImpl::open_writers() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(writers_.size());
}

}  // namespace overseer

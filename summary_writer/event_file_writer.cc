#include "summary_writer/event_file_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "google/protobuf/arena.h"
#include "summary_writer/event_encoding.h"
#include "summary_writer/event_file_reader.h"
#include "summary_writer/record.h"

namespace overseer {
namespace {

constexpr char kFilePrefix[] = "events.out.tfevents.";
constexpr char kFileVersion[] = "brain.Event:2";

// Serialises the choice and creation of file names within the process, so that two
// writers opening files in one directory at once still get increasing names.
absl::Mutex name_mu(absl::kConstInit);
int64_t name_counter ABSL_GUARDED_BY(name_mu) = 0;

std::string LocalHostname() {
  char buffer[256] = {0};
  if (::gethostname(buffer, sizeof(buffer) - 1) != 0 || buffer[0] == '\0') return "localhost";
  return buffer;
}

// The seconds field of a standard event file name, if `name` is one.
std::optional<int64_t> FileSeconds(absl::string_view name) {
  if (!absl::StartsWith(name, kFilePrefix)) return std::nullopt;
  name.remove_prefix(sizeof(kFilePrefix) - 1);
  if (name.size() < 10) return std::nullopt;
  int64_t secs = 0;
  if (!absl::SimpleAtoi(name.substr(0, 10), &secs)) return std::nullopt;
  return secs;
}

double WallTime(Clock* clock) { return EventWallTime(clock->Now()); }

}  // namespace

std::string EventFileName(absl::Time time, absl::string_view hostname, int64_t pid, int64_t n,
                          absl::string_view suffix) {
  return absl::StrFormat("%s%010d.%s.%d.%d%s", kFilePrefix, absl::ToUnixSeconds(time), hostname,
                         pid, n, suffix);
}

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(
    const std::string& dir, const EventFileWriterOptions& options, const EventWriterEnv& env) {
  if (env.clock == nullptr) return absl::InvalidArgumentError("EventWriterEnv.clock is null");
  if (options.max_queue < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_queue must be at least 1, got ", options.max_queue));
  }
  if (options.flush_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("flush_interval must be positive");
  }
  if (options.filename_suffix.size() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "filename_suffix has ", options.filename_suffix.size(), " bytes, more than 64"));
  }
  for (const char c : options.filename_suffix) {
    // A file name part: no directory separator, no NUL, newline or other control
    // character that would cut or forge the name in a listing or a log line.
    if (c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat("filename_suffix '", absl::CHexEscape(options.filename_suffix),
                       "' contains '", absl::CHexEscape(std::string(1, c)),
                       "'; only printable characters other than '/' may appear"));
    }
  }
  const std::string hostname = env.hostname.empty() ? LocalHostname() : env.hostname;
  const int64_t pid = env.pid != 0 ? env.pid : static_cast<int64_t>(::getpid());
  RETURN_IF_ERROR(env.fs->CreateDirs(dir));

  std::string path;
  std::unique_ptr<WritableFile> file;
  {
    absl::MutexLock lock(&name_mu);
    ASSIGN_OR_RETURN(const std::vector<std::string> existing, ListEventFiles(env.fs, dir));
    absl::Time time = env.clock->Now();
    for (int attempt = 0; file == nullptr; ++attempt) {
      if (attempt == 100) {
        return absl::InternalError(absl::StrCat("cannot find a new event file name in ", dir));
      }
      const std::string name =
          EventFileName(time, hostname, pid, ++name_counter, options.filename_suffix);
      if (!existing.empty() && name <= existing.back()) {
        // Sort after the newest file: one second later than its timestamp.
        const std::optional<int64_t> last = FileSeconds(existing.back());
        if (last.has_value() && *last + 1 > absl::ToUnixSeconds(time)) {
          time = absl::FromUnixSeconds(*last + 1);
          continue;
        }
        if (!last.has_value() && attempt == 0) {
          LOG(WARNING) << "event file " << existing.back() << " in " << dir
                       << " has a non-standard name; " << name << " may sort before it";
        }
      }
      path = absl::StrCat(dir, "/", name);
      absl::StatusOr<std::unique_ptr<WritableFile>> created = env.fs->NewWritableFile(path);
      if (absl::IsAlreadyExists(created.status())) continue;
      RETURN_IF_ERROR(created.status());
      file = *std::move(created);
    }
  }

  std::unique_ptr<EventFileWriter> writer(
      new EventFileWriter(path, std::move(file), options, env.clock, env.on_flush));
  Event version;
  version.set_wall_time(WallTime(env.clock));
  version.set_file_version(kFileVersion);
  version.mutable_source_metadata()->set_writer(kEventWriterName);
  RETURN_IF_ERROR(writer->WriteEvent(version));
  if (options.start_step.has_value()) {
    Event start;
    start.set_wall_time(WallTime(env.clock));
    start.set_step(*options.start_step);
    start.mutable_session_log()->set_status(SessionLog::START);
    RETURN_IF_ERROR(writer->WriteEvent(start));
  }
  RETURN_IF_ERROR(writer->Flush());
  return writer;
}

EventFileWriter::EventFileWriter(std::string path, std::unique_ptr<WritableFile> file,
                                 const EventFileWriterOptions& options, Clock* clock,
                                 std::function<void(absl::Duration)> on_flush)
    : path_(std::move(path)),
      options_(options),
      clock_(clock),
      on_flush_(std::move(on_flush)),
      file_(std::move(file)) {
  absl::MutexLock lock(&mu_);
  last_flush_ = clock_->Now();
}

EventFileWriter::~EventFileWriter() {
  const absl::Status s = Close();
  if (!s.ok()) LOG(ERROR) << "closing " << path_ << ": " << s.ToString();
}

absl::Status EventFileWriter::CheckOpenLocked() const {
  if (!error_.ok()) return error_;
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(path_, " is closed"));
  return absl::OkStatus();
}

template <typename AppendFn>
absl::Status EventFileWriter::QueueLocked(const AppendFn& append, bool write_when_full) {
  RETURN_IF_ERROR(CheckOpenLocked());
  // Serialize straight into the queue, then frame the record around it.
  const size_t start = queue_.size();
  queue_.append(kRecordHeaderSize, '\0');
  append(&queue_);
  FrameRecordInPlace(start, &queue_);
  bytes_ += static_cast<int64_t>(queue_.size() - start);
  ++queued_events_;
  if (write_when_full && queued_events_ >= options_.max_queue) return WriteOrFlushLocked();
  return absl::OkStatus();
}

absl::Status EventFileWriter::WriteOrFlushLocked() {
  // The clock is read here, once per write, rather than for every event.
  if (clock_->Now() - last_flush_ >= options_.flush_interval) return FlushLocked();
  return WriteQueueLocked();
}

absl::Status EventFileWriter::WriteEvent(const Event& event) {
  if (event.wall_time() == 0) {
    Event stamped = event;
    stamped.set_wall_time(WallTime(clock_));
    absl::MutexLock lock(&mu_);
    return QueueLocked([&](std::string* out) { stamped.AppendToString(out); });
  }
  absl::MutexLock lock(&mu_);
  return QueueLocked([&](std::string* out) { event.AppendToString(out); });
}

absl::Status EventFileWriter::WriteEvents(const google::protobuf::RepeatedPtrField<Event>& events) {
  absl::MutexLock lock(&mu_);
  for (const Event& event : events) {
    if (event.wall_time() == 0) {
      Event stamped = event;
      stamped.set_wall_time(WallTime(clock_));
      RETURN_IF_ERROR(QueueLocked([&](std::string* out) { stamped.AppendToString(out); },
                                  /*write_when_full=*/false));
    } else {
      RETURN_IF_ERROR(QueueLocked([&](std::string* out) { event.AppendToString(out); },
                                  /*write_when_full=*/false));
    }
  }
  if (queued_events_ >= options_.max_queue) return WriteOrFlushLocked();
  return absl::OkStatus();
}

absl::StatusOr<int64_t> EventFileWriter::WriteRecords(absl::string_view records) {
  // Checked before the lock: a bad message leaves the queue as it was. Each record is
  // parsed on an arena, reset every kParsesPerArena records, that starts in a block
  // of this thread's: parsing into one reused Event instead freed and allocated its
  // Summary, values and tags for every record (Clear deletes a oneof's message).
  constexpr int kParsesPerArena = 64;
  alignas(8) thread_local char arena_block[32 << 10];
  google::protobuf::ArenaOptions arena_options;
  arena_options.initial_block = arena_block;
  arena_options.initial_block_size = sizeof(arena_block);
  google::protobuf::Arena arena(arena_options);
  RecordReader reader(records);
  int64_t n = 0;
  for (;; ++n) {
    const uint64_t offset = reader.offset();
    absl::string_view data;
    const absl::Status read = reader.ReadRecord(&data);
    if (absl::IsOutOfRange(read)) break;
    if (!read.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("WriteEvents records: record ", n, ": ", read.message()));
    }
    if (n % kParsesPerArena == kParsesPerArena - 1) arena.Reset();
    Event* parsed = google::protobuf::Arena::CreateMessage<Event>(&arena);
    if (!parsed->ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "WriteEvents records: record ", n, " (at byte ", offset, ") is not a serialized Event"));
    }
  }
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  queue_.append(records.data(), records.size());
  bytes_ += static_cast<int64_t>(records.size());
  queued_events_ += static_cast<int>(n);
  if (queued_events_ >= options_.max_queue) RETURN_IF_ERROR(WriteOrFlushLocked());
  return n;
}

absl::Status EventFileWriter::WriteSummary(double wall_time, int64_t step, const Summary& summary) {
  if (wall_time == 0) wall_time = WallTime(clock_);
  absl::MutexLock lock(&mu_);
  return QueueLocked([&](std::string* out) { AppendSummaryEvent(wall_time, step, summary, out); });
}

absl::Status EventFileWriter::WriteSerializedSummary(double wall_time, int64_t step,
                                                     absl::string_view summary) {
  if (wall_time == 0) wall_time = WallTime(clock_);
  absl::MutexLock lock(&mu_);
  return QueueLocked(
      [&](std::string* out) { AppendSerializedSummaryEvent(wall_time, step, summary, out); });
}

absl::Status EventFileWriter::WriteQueueLocked() {
  if (queue_.empty()) return absl::OkStatus();
  const absl::Status s = file_->Append(queue_);
  if (!s.ok()) {
    error_ = s;
    return s;
  }
  queue_.clear();
  queued_events_ = 0;
  unsynced_ = true;
  return absl::OkStatus();
}

absl::Status EventFileWriter::FlushLocked() {
  const absl::Time start = clock_->Now();
  RETURN_IF_ERROR(WriteQueueLocked());
  last_flush_ = start;
  if (!unsynced_) return absl::OkStatus();
  const absl::Status s = file_->Sync();
  if (!s.ok()) {
    error_ = s;
    return s;
  }
  unsynced_ = false;
  if (on_flush_) on_flush_(clock_->Now() - start);
  return absl::OkStatus();
}

absl::Status EventFileWriter::Flush() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  return FlushLocked();
}

absl::Status EventFileWriter::FlushIfDue() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckOpenLocked());
  if (clock_->Now() - last_flush_ < options_.flush_interval) return absl::OkStatus();
  if (queue_.empty() && !unsynced_) {
    last_flush_ = clock_->Now();
    return absl::OkStatus();
  }
  return FlushLocked();
}

absl::Status EventFileWriter::Close() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::OkStatus();
  closed_ = true;
  if (!error_.ok()) {
    file_->Close().IgnoreError();
    return error_;
  }
  const absl::Status flushed = FlushLocked();
  const absl::Status close = file_->Close();
  return flushed.ok() ? close : flushed;
}

int64_t EventFileWriter::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace overseer

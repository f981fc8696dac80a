#include "checkpoint_store/checkpoint_store.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "checkpoint_store/bundle.h"
#include "checkpoint_store/state_file.h"
#include "core/io/run_name.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

constexpr char kTempMarker[] = ".tempstate";
// The most checkpoints a Saver's list sent with BeginCheckpoint may hold.
constexpr int kMaxSaverCheckpoints = 100000;
constexpr size_t kMaxMetaGraphBytes = size_t{32} << 20;

std::string MetaGraphFilename(absl::string_view prefix) { return absl::StrCat(prefix, ".meta"); }

double UnixSeconds(absl::Time t) { return absl::ToDoubleSeconds(t - absl::UnixEpoch()); }

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Whether `file` is "<name>.data-NNNNN-of-NNNNN" for some name; sets *name.
bool ParseDataFilename(const std::string& file, std::string* name) {
  const size_t pos = file.rfind(".data-");
  if (pos == std::string::npos || file.size() - pos != 6 + 14) return false;
  const std::string rest = file.substr(pos + 6);  // "NNNNN-of-NNNNN"
  if (rest.substr(5, 4) != "-of-") return false;
  for (int i : {0, 1, 2, 3, 4, 9, 10, 11, 12, 13}) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(rest[i]))) return false;
  }
  *name = file.substr(0, pos);
  return true;
}

// Whether `suffix` is a temp id: 16 lowercase hex digits (Pending::id).
bool IsTempId(absl::string_view suffix) {
  if (suffix.size() != 16) return false;
  for (char c : suffix) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

// The index entries of a shard a local writer wrote, from its report: every header
// valid, names unique, every tensor within the file and none overlapping another.
// INVALID_ARGUMENT naming the tensor and `file` otherwise.
using ShardEntries = std::map<std::string, BundleEntryProto>;

absl::StatusOr<ShardEntries> LocalShardEntries(const CloseLocalWriteRequest& request,
                                               const std::string& file) {
  if (request.file_bytes() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("negative length ", request.file_bytes(), " reported for ", file));
  }
  ShardEntries entries;
  std::vector<std::pair<int64_t, int64_t>> ranges;  // [offset, end)
  for (const LocalWrittenTensor& t : request.tensors()) {
    const TensorHeader& header = t.tensor();
    RETURN_IF_ERROR(ValidateTensorHeader(header));
    if (t.offset() < 0 || t.offset() > request.file_bytes() - header.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor ", header.name(), " at offset ", t.offset(), " (", header.size(),
          " bytes) lies outside data file ", file, " of ", request.file_bytes(), " bytes"));
    }
    BundleEntryProto entry;
    entry.set_dtype(header.dtype());
    *entry.mutable_shape() = header.shape();
    entry.set_shard_id(request.shard_id());
    entry.set_offset(t.offset());
    entry.set_size(header.size());
    entry.set_crc32c(t.crc32c());
    if (!entries.emplace(header.name(), std::move(entry)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", header.name(), " is written twice to ", file));
    }
    if (header.size() > 0) ranges.emplace_back(t.offset(), t.offset() + header.size());
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensors overlap in data file ", file, " at offset ", ranges[i].first));
    }
  }
  return entries;
}

}  // namespace

int64_t CheckpointStepFromName(absl::string_view name) {
  const size_t dash = name.rfind('-');
  if (dash == absl::string_view::npos) return -1;
  int64_t step;
  if (!absl::SimpleAtoi(name.substr(dash + 1), &step) || step < 0) return -1;
  return step;
}

absl::Status ValidateCheckpointRun(absl::string_view run) {
  if (run.empty()) return absl::OkStatus();
  return ValidateRunName(run);
}

absl::Status ValidateCheckpointName(absl::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == ".." || name == kStateFilename ||
      absl::StrContains(name, kTempMarker) || absl::StartsWith(name, kStateTempPrefix)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid checkpoint name '", name, "'"));
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid checkpoint name '", name, "': only [A-Za-z0-9._-] may appear"));
    }
  }
  return absl::OkStatus();
}

struct CheckpointStore::Shard {
  bool open = false;
  bool closed = false;
  // While a local write holds the shard (open): the token it was granted under, and
  // the data file as the store opened it when it created it.
  std::string local_token;
  std::shared_ptr<WritableFile> local_file;
  std::map<std::string, BundleEntryProto> entries;
  int64_t bytes = 0;
};

struct CheckpointStore::Pending {
  std::string id;
  std::string run;
  std::string dir;
  std::string name;
  int num_shards = 0;
  RetentionPolicy retention;
  std::string meta_graph;  // Serialized; empty: none.
  absl::Time began;
  std::vector<Shard> shards;

  std::string Prefix() const { return absl::StrCat(dir, "/", name); }
  std::string TempDataFile(int shard) const {
    return absl::StrCat(DataFilename(Prefix(), shard, num_shards), kTempMarker, id);
  }
};

// Writes one shard's temp data file; reports to the store on Close or destruction.
class CheckpointStore::LocalShardWriter : public ShardWriter {
 public:
  LocalShardWriter(CheckpointStore* store, std::string id, int shard_id,
                   std::unique_ptr<DataFileWriter> writer)
      : store_(store), id_(std::move(id)), shard_id_(shard_id), writer_(std::move(writer)) {}
  ~LocalShardWriter() override {
    if (!closed_) {
      // Abandoned: forget the shard so that it can be written again.
      store_->fs_->DeleteFile(writer_->path()).IgnoreError();
      store_->ShardClosed(id_, shard_id_, false, {}, 0);
    }
  }
  absl::Status BeginTensor(const TensorHeader& header) override {
    return writer_->BeginTensor(header);
  }
  absl::Status Append(absl::string_view data) override { return writer_->Append(data); }
  absl::Status Close() override {
    if (closed_) return absl::FailedPreconditionError("shard writer already closed");
    RETURN_IF_ERROR(writer_->Finish());
    closed_ = true;
    if (store_->bytes_written_ != nullptr) {
      store_->bytes_written_->Increment(static_cast<double>(writer_->bytes_written()));
    }
    store_->ShardClosed(id_, shard_id_, true, writer_->entries(), writer_->bytes_written());
    return absl::OkStatus();
  }

 private:
  CheckpointStore* const store_;
  const std::string id_;
  const int shard_id_;
  std::unique_ptr<DataFileWriter> writer_;
  bool closed_ = false;
};

CheckpointStore::CheckpointStore(std::unique_ptr<RootedFileSystem> fs, Clock* clock,
                                 prometheus::Registry* metrics)
    : rooted_(std::move(fs)),
      fs_(rooted_.get()),
      root_(rooted_->root()),
      clock_(clock),
      incarnation_(absl::Uniform<uint32_t>(absl::BitGen())) {
  if (metrics == nullptr) return;
  auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(*metrics).Add({});
  };
  auto histogram = [&](const char* name, const char* help) {
    return &prometheus::BuildHistogram().Name(name).Help(help).Register(*metrics).Add(
        {}, prometheus::Histogram::BucketBoundaries{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                                                    10, 25, 60, 120, 300});
  };
  committed_ = counter("overseer_checkpoint_store_checkpoints_committed_total",
                       "Checkpoints published by a commit.");
  bytes_written_ =
      counter("overseer_checkpoint_store_bytes_written_total",
              "Bytes written to data files (tensors and the zeros that align large ones).");
  bytes_read_ =
      counter("overseer_checkpoint_store_bytes_read_total", "Tensor bytes read and verified.");
  crc_failures_ = counter("overseer_checkpoint_store_crc_failures_total",
                          "Tensor reads that failed CRC32C verification.");
  state_rebuilds_ =
      counter("overseer_checkpoint_store_state_file_rebuilds_total",
              "Reads of a checkpoint state file that did not parse, rebuilt from the run's "
              "checkpoints.");
  unreadable_skipped_ =
      counter("overseer_checkpoint_store_unreadable_checkpoints_skipped_total",
              "Newest checkpoints whose index was damaged, passed over for an older one.");
  save_seconds_ = histogram("overseer_checkpoint_store_save_duration_seconds",
                            "Time from BeginCheckpoint to the end of its commit.");
  restore_seconds_ = histogram("overseer_checkpoint_store_restore_duration_seconds",
                               "Time a ReadTensors call takes.");
  latest_step_ = &prometheus::BuildGauge()
                      .Name("overseer_checkpoint_store_latest_checkpoint_step")
                      .Help(
                          "The global step of each run's newest complete checkpoint (-1 if "
                          "its name has none).")
                      .Register(*metrics);
  latest_timestamp_ = &prometheus::BuildGauge()
                           .Name("overseer_checkpoint_store_latest_checkpoint_timestamp_seconds")
                           .Help(
                               "When each run's newest complete checkpoint was committed, "
                               "Unix seconds.")
                           .Register(*metrics);
}

void CheckpointStore::RecordLatest(const std::string& run,
                                   const std::optional<CheckpointInfo>& latest) {
  if (latest_step_ == nullptr) return;
  const prometheus::Labels labels = {{"run", run}};
  if (latest.has_value()) {
    latest_step_->Add(labels).Set(static_cast<double>(latest->step()));
    latest_timestamp_->Add(labels).Set(latest->timestamp());
  } else if (latest_step_->Has(labels)) {
    latest_step_->Remove(&latest_step_->Add(labels));
    latest_timestamp_->Remove(&latest_timestamp_->Add(labels));
  }
}

void CheckpointStore::RecordLatestOfRuns(const std::string& dir, const std::string& run) {
  absl::StatusOr<std::vector<std::string>> names = fs_->ListDir(dir);
  if (!names.ok()) return;  // A file, not a run directory.
  for (const std::string& name : *names) {
    std::string owner;
    if (name == kStateFilename) {
      absl::StatusOr<std::optional<CheckpointInfo>> latest = LatestCheckpoint(run);
      if (latest.ok()) RecordLatest(run, *latest);
      continue;
    }
    if (ParseDataFilename(name, &owner) || absl::EndsWith(name, ".index")) continue;
    const std::string child = run.empty() ? name : absl::StrCat(run, "/", name);
    const std::string path = absl::StrCat(dir, "/", name);
    if (ValidateRunName(child).ok() && fs_->IsDirectory(path).value_or(false)) {
      RecordLatestOfRuns(path, child);
    }
  }
}

CheckpointStore::~CheckpointStore() {
  Shutdown();
  std::thread deleter;
  {
    absl::MutexLock lock(&delete_mu_);
    destroying_ = true;
    deleter = std::move(deleter_);
  }
  // It deletes what is queued first: no retired file is left behind.
  if (deleter.joinable()) deleter.join();
}

absl::StatusOr<std::unique_ptr<CheckpointStore>> CheckpointStore::Open(
    FileSystem* fs, std::string root, Clock* clock, prometheus::Registry* metrics) {
  if (root.empty()) return absl::InvalidArgumentError("the checkpoint store root is empty");
  if (clock == nullptr) return absl::InvalidArgumentError("the checkpoint store's clock is null");
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  RETURN_IF_ERROR(fs->CreateDirs(root));
  ASSIGN_OR_RETURN(std::unique_ptr<RootedFileSystem> rooted,
                   RootedFileSystem::Create(fs, std::move(root)));
  std::unique_ptr<CheckpointStore> store(new CheckpointStore(std::move(rooted), clock, metrics));
  RETURN_IF_ERROR(store->RemoveLeftovers(store->root_));
  if (metrics != nullptr) store->RecordLatestOfRuns(store->root_, "");
  return store;
}

namespace {

// Whether `name` is a temp file that the store's own naming produces, and nothing
// else: "checkpoint.tmp<id>", "<ckpt>.index.tempstate<id>" or
// "<ckpt>.data-NNNNN-of-NNNNN.tempstate<id>" or "<ckpt>.meta.tempstate<id>", with a
// valid checkpoint name and a 16-hex-digit id.
bool IsStoreTempFile(const std::string& name) {
  if (absl::StartsWith(name, kStateTempPrefix)) {
    return IsTempId(absl::string_view(name).substr(std::strlen(kStateTempPrefix)));
  }
  const size_t marker = name.rfind(kTempMarker);
  if (marker == std::string::npos ||
      !IsTempId(absl::string_view(name).substr(marker + std::strlen(kTempMarker)))) {
    return false;
  }
  const std::string file = name.substr(0, marker);  // "<ckpt>.index", .meta or data.
  std::string ckpt;
  if (!ParseDataFilename(file, &ckpt)) {
    if (absl::EndsWith(file, ".index")) {
      ckpt = file.substr(0, file.size() - std::strlen(".index"));
    } else if (absl::EndsWith(file, ".meta")) {
      ckpt = file.substr(0, file.size() - std::strlen(".meta"));
    } else {
      return false;
    }
  }
  return ValidateCheckpointName(ckpt).ok();
}

}  // namespace

absl::Status CheckpointStore::RemoveLeftovers(const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(dir));
  bool removed = false;
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir, "/", name);
    std::string ckpt;
    if (IsStoreTempFile(name)) {
      LOG(INFO) << "removing leftover " << rooted_->Relative(path);
      RETURN_IF_ERROR(fs_->DeleteFile(path));
      removed = true;
    } else if (ParseDataFilename(name, &ckpt) && ValidateCheckpointName(ckpt).ok()) {
      const std::string index = IndexFilename(absl::StrCat(dir, "/", ckpt));
      if (absl::IsNotFound(fs_->FileExists(index))) {
        LOG(INFO) << "removing " << rooted_->Relative(path) << " (its checkpoint has no index)";
        RETURN_IF_ERROR(fs_->DeleteFile(path));
        removed = true;
      }
    } else if (ValidateRunName(name).ok() && fs_->IsDirectory(path).value_or(false)) {
      // A run's directory: never a symbolic link, so nothing outside is visited.
      RETURN_IF_ERROR(RemoveLeftovers(path));
    }
  }
  if (removed) RETURN_IF_ERROR(fs_->SyncDir(dir));
  return absl::OkStatus();
}

std::string CheckpointStore::RunDir(const std::string& run) const {
  return run.empty() ? root_ : RunDirectory(root_, run);
}

absl::Mutex* CheckpointStore::RunMutex(const std::string& dir) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<absl::Mutex>& mu = run_mutexes_[dir];
  if (mu == nullptr) mu = std::make_unique<absl::Mutex>();
  return mu.get();
}

absl::StatusOr<std::string> CheckpointStore::BeginCheckpoint(
    const BeginCheckpointRequest& request) {
  RETURN_IF_ERROR(ValidateCheckpointRun(request.run()));
  RETURN_IF_ERROR(ValidateCheckpointName(request.name()));
  if (request.num_shards() < 1 || request.num_shards() > 99999) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_shards must be in [1, 99999], got ", request.num_shards()));
  }
  const RetentionPolicy& retention = request.retention();
  if (retention.saver_checkpoints_size() > kMaxSaverCheckpoints) {
    return absl::InvalidArgumentError(
        absl::StrCat("retention lists ", retention.saver_checkpoints_size(),
                     " checkpoints of the saver; at most ", kMaxSaverCheckpoints));
  }
  for (const CheckpointInfo& listed : retention.saver_checkpoints()) {
    RETURN_IF_ERROR(Annotate(ValidateCheckpointName(listed.name()), "in the saver's list: "));
  }
  if (request.meta_graph().size() > kMaxMetaGraphBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the meta graph of checkpoint ", request.name(),
                                                   " has ", request.meta_graph().size(),
                                                   " bytes; at most ", kMaxMetaGraphBytes));
  }
  auto pending = std::make_shared<Pending>();
  pending->run = request.run();
  pending->dir = RunDir(request.run());
  pending->name = request.name();
  pending->num_shards = request.num_shards();
  pending->retention = request.retention();
  pending->meta_graph = request.meta_graph();
  pending->began = clock_->Now();
  pending->shards.resize(static_cast<size_t>(request.num_shards()));
  RETURN_IF_ERROR(fs_->CreateDirs(pending->dir));
  absl::BitGen gen;
  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::UnavailableError("the checkpoint store is shutting down");
  do {
    pending->id = absl::StrFormat("%08x%08x", incarnation_, absl::Uniform<uint32_t>(gen));
  } while (pending_.count(pending->id) > 0);
  pending_[pending->id] = pending;
  return pending->id;
}

absl::StatusOr<std::unique_ptr<ShardWriter>> CheckpointStore::OpenShard(
    const std::string& checkpoint_id, int shard_id) {
  std::shared_ptr<Pending> pending;
  bool taken_over;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(pending, FindPending(checkpoint_id));
    ASSIGN_OR_RETURN(taken_over, ClaimShard(*pending, shard_id, ""));
  }
  // A local write taken over leaves its file behind.
  if (taken_over) fs_->DeleteFile(pending->TempDataFile(shard_id)).IgnoreError();
  auto writer = DataFileWriter::Create(fs_, pending->TempDataFile(shard_id), shard_id);
  if (!writer.ok()) {
    ShardClosed(checkpoint_id, shard_id, false, {}, 0);
    return writer.status();
  }
  return std::unique_ptr<ShardWriter>(
      new LocalShardWriter(this, checkpoint_id, shard_id, *std::move(writer)));
}

absl::StatusOr<std::shared_ptr<CheckpointStore::Pending>> CheckpointStore::FindPending(
    const std::string& id) {
  auto it = pending_.find(id);
  if (it == pending_.end() && IsTempId(id) &&
      id.compare(0, 8, absl::StrFormat("%08x", incarnation_)) != 0) {
    // Begun by an earlier run of the store, which forgot its pending checkpoints when it
    // stopped: the writer should begin again, as after any interrupted save.
    return absl::AbortedError(absl::StrCat(
        "checkpoint ", id, " was begun before the checkpoint store restarted; begin it again"));
  }
  if (it == pending_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no pending checkpoint ", id, " (committed or aborted?)"));
  }
  return it->second;
}

absl::StatusOr<bool> CheckpointStore::ClaimShard(Pending& pending, int shard_id,
                                                 const std::string& local_token) {
  if (shard_id < 0 || shard_id >= pending.num_shards) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", shard_id, " of checkpoint ",
                                                   pending.name, " out of range [0, ",
                                                   pending.num_shards, ")"));
  }
  Shard& shard = pending.shards[static_cast<size_t>(shard_id)];
  // A local write that has not closed may be taken over: its writer wrote the file
  // itself, so nothing on this side notices if it died.
  if (shard.closed || (shard.open && shard.local_token.empty())) {
    return absl::FailedPreconditionError(absl::StrCat("shard ", shard_id, " of checkpoint ",
                                                      pending.name, " is already being written"));
  }
  const bool taken_over = shard.open;
  shard.open = true;
  shard.local_token = local_token;
  shard.local_file.reset();
  return taken_over;
}

bool CheckpointStore::HeldByLocalWrite(const Pending& pending, int shard_id,
                                       const std::string& token) const {
  return shard_id >= 0 && shard_id < pending.num_shards && !token.empty() &&
         pending.shards[static_cast<size_t>(shard_id)].open &&
         pending.shards[static_cast<size_t>(shard_id)].local_token == token;
}

absl::StatusOr<std::string> CheckpointStore::OpenLocalShard(const std::string& checkpoint_id,
                                                            int shard_id,
                                                            const std::string& token) {
  if (token.empty()) return absl::InvalidArgumentError("a local write needs a token");
  std::shared_ptr<Pending> pending;
  bool taken_over;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(pending, FindPending(checkpoint_id));
    ASSIGN_OR_RETURN(taken_over, ClaimShard(*pending, shard_id, token));
  }
  const std::string path = pending->TempDataFile(shard_id);
  // Created here, through the rooted file system, so that the file is under the root;
  // the writer fills it through a descriptor.
  if (taken_over) fs_->DeleteFile(path).IgnoreError();
  absl::StatusOr<std::unique_ptr<WritableFile>> file = fs_->NewWritableFile(path);
  if (!file.ok()) {
    ShardClosed(checkpoint_id, shard_id, false, {}, 0);
    return file.status();
  }
  absl::MutexLock lock(&mu_);
  Shard& shard = pending->shards[static_cast<size_t>(shard_id)];
  // Kept to make the writer's bytes durable at close (the same file: nothing is
  // appended through it).
  if (shard.local_token == token) shard.local_file = std::move(*file);
  return path;
}

absl::StatusOr<CloseLocalWriteResponse> CheckpointStore::CloseLocalShard(
    const CloseLocalWriteRequest& request) {
  const int shard_id = request.shard_id();
  std::shared_ptr<Pending> pending;
  std::shared_ptr<WritableFile> file;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(pending, FindPending(request.checkpoint_id()));
    if (HeldByLocalWrite(*pending, shard_id, request.token())) {
      file = pending->shards[static_cast<size_t>(shard_id)].local_file;
    }
    if (file == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("shard ", shard_id, " of checkpoint ", pending->name,
                       " is not held by this local write (taken over by another writer?)"));
    }
  }
  const std::string path = pending->TempDataFile(shard_id);
  ASSIGN_OR_RETURN(ShardEntries entries, LocalShardEntries(request, rooted_->Relative(path)));
  // The writer's bytes are in the file (it wrote them before asking); make them durable
  // as a streamed shard's are.
  ASSIGN_OR_RETURN(uint64_t size, fs_->GetFileSize(path));
  if (static_cast<int64_t>(size) != request.file_bytes()) {
    return absl::DataLossError(absl::StrCat("data file ", rooted_->Relative(path), " holds ", size,
                                            " bytes; its local writer reported ",
                                            request.file_bytes()));
  }
  RETURN_IF_ERROR(file->Sync());
  {
    absl::MutexLock lock(&mu_);
    if (!HeldByLocalWrite(*pending, shard_id, request.token())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "shard ", shard_id, " of checkpoint ", pending->name, " was taken over while closing"));
    }
    // Still open, held by no one: nobody takes it over before ShardClosed.
    pending->shards[static_cast<size_t>(shard_id)].local_token.clear();
  }
  if (bytes_written_ != nullptr) bytes_written_->Increment(static_cast<double>(size));
  CloseLocalWriteResponse response;
  response.set_bytes_written(request.file_bytes());
  response.set_num_tensors(static_cast<int>(entries.size()));
  ShardClosed(request.checkpoint_id(), shard_id, true, std::move(entries), request.file_bytes());
  return response;
}

void CheckpointStore::ShardClosed(const std::string& id, int shard_id, bool ok,
                                  std::map<std::string, BundleEntryProto> entries, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(id);
  if (it == pending_.end()) return;  // Aborted meanwhile.
  Shard& shard = it->second->shards[static_cast<size_t>(shard_id)];
  shard.open = false;
  shard.closed = ok;
  shard.local_token.clear();
  shard.local_file.reset();
  shard.entries = std::move(entries);
  shard.bytes = bytes;
}

absl::StatusOr<std::shared_ptr<CheckpointStore::Pending>> CheckpointStore::TakePending(
    const std::string& id, bool require_closed) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<Pending> pending, FindPending(id));
  if (require_closed) {
    std::vector<std::string> missing;
    for (size_t i = 0; i < pending->shards.size(); ++i) {
      if (!pending->shards[i].closed) missing.push_back(absl::StrCat(i));
    }
    if (!missing.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", pending->name, " cannot be committed: shard(s) ",
          absl::StrJoin(missing, ", "), " of ", pending->num_shards, " not written yet"));
    }
  }
  pending_.erase(id);
  return pending;
}

void CheckpointStore::DeleteTempFiles(const Pending& pending) {
  for (int i = 0; i < pending.num_shards; ++i) {
    fs_->DeleteFile(pending.TempDataFile(i)).IgnoreError();
  }
  fs_->DeleteFile(absl::StrCat(IndexFilename(pending.Prefix()), kTempMarker, pending.id))
      .IgnoreError();
  fs_->DeleteFile(absl::StrCat(MetaGraphFilename(pending.Prefix()), kTempMarker, pending.id))
      .IgnoreError();
}

absl::Status CheckpointStore::AbortCheckpoint(const std::string& checkpoint_id) {
  ASSIGN_OR_RETURN(std::shared_ptr<Pending> pending, TakePending(checkpoint_id, false));
  DeleteTempFiles(*pending);
  return absl::OkStatus();
}

void CheckpointStore::Shutdown() {
  std::map<std::string, std::shared_ptr<Pending>> pending;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    pending.swap(pending_);
  }
  for (const auto& [id, p] : pending) {
    LOG(INFO) << "aborting unfinished checkpoint " << p->name << " of run '" << p->run << "'";
    DeleteTempFiles(*p);
  }
  WaitForRetiredFiles();
}

void CheckpointStore::DeleteLater(std::vector<std::string> paths) {
  if (paths.empty()) return;
  absl::MutexLock lock(&delete_mu_);
  for (std::string& path : paths) to_delete_.push_back(std::move(path));
  if (!deleter_.joinable()) deleter_ = std::thread([this] { DeleteQueuedFiles(); });
}

void CheckpointStore::DeleteQueuedFiles() {
  for (;;) {
    std::string path;
    {
      absl::MutexLock lock(&delete_mu_);
      deleting_ = false;
      delete_mu_.Await(absl::Condition(
          +[](CheckpointStore* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->delete_mu_) {
            return !s->to_delete_.empty() || s->destroying_;
          },
          this));
      if (to_delete_.empty()) return;  // Destroyed, and nothing is left.
      path = std::move(to_delete_.front());
      to_delete_.pop_front();
      deleting_ = true;
    }
    const absl::Status deleted = fs_->DeleteFile(path);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) {
      LOG(WARNING) << "cannot delete a retired checkpoint's data file: " << deleted;
    }
  }
}

void CheckpointStore::WaitForRetiredFiles() {
  absl::MutexLock lock(&delete_mu_);
  delete_mu_.Await(absl::Condition(
      +[](CheckpointStore* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->delete_mu_) {
        return s->to_delete_.empty() && !s->deleting_;
      },
      this));
}

int CheckpointStore::pending_checkpoints() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(pending_.size());
}

absl::StatusOr<CheckpointInfo> CheckpointStore::CommitCheckpoint(const std::string& checkpoint_id) {
  std::string dir;
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(checkpoint_id);
    if (it != pending_.end()) dir = it->second->dir;
  }
  absl::MutexLock run_lock(RunMutex(dir));
  ASSIGN_OR_RETURN(std::shared_ptr<Pending> pending, TakePending(checkpoint_id, true));
  CheckpointInfo info;
  const absl::Status published = Publish(*pending, &info);
  if (!published.ok()) {
    DeleteTempFiles(*pending);
    return published;
  }
  if (committed_ != nullptr) committed_->Increment();
  if (save_seconds_ != nullptr) {
    save_seconds_->Observe(absl::ToDoubleSeconds(clock_->Now() - pending->began));
  }
  RecordLatest(pending->run, info);
  return info;
}

absl::Status CheckpointStore::Publish(const Pending& pending, CheckpointInfo* info) {
  std::map<std::string, BundleEntryProto> entries;
  for (const Shard& shard : pending.shards) {
    for (const auto& [name, entry] : shard.entries) {
      if (!entries.emplace(name, entry).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor ", name, " is in two shards of checkpoint ", pending.name));
      }
    }
  }
  const std::string prefix = pending.Prefix();
  const std::string index = IndexFilename(prefix);
  // 1. An older checkpoint of the same name stops being visible before its files change.
  if (fs_->FileExists(index).ok()) {
    RETURN_IF_ERROR(fs_->DeleteFile(index));
    RETURN_IF_ERROR(fs_->SyncDir(pending.dir));
  }
  RETURN_IF_ERROR(DeleteCheckpointFiles(pending.dir, pending.name));
  // 2. Data files (already fsynced by their writers) take their final names.
  for (int i = 0; i < pending.num_shards; ++i) {
    RETURN_IF_ERROR(
        fs_->RenameFile(pending.TempDataFile(i), DataFilename(prefix, i, pending.num_shards)));
  }
  // 3. The index, last: its appearance makes the checkpoint complete.
  const std::string temp_index = absl::StrCat(index, kTempMarker, pending.id);
  RETURN_IF_ERROR(WriteIndexFile(fs_, temp_index, pending.num_shards, entries));
  RETURN_IF_ERROR(fs_->RenameFile(temp_index, index));
  // The meta graph, whole, only beside a complete checkpoint: a crash before it leaves a
  // checkpoint without one, never a meta graph without a checkpoint.
  if (!pending.meta_graph.empty()) {
    const std::string meta = MetaGraphFilename(prefix);
    const std::string temp_meta = absl::StrCat(meta, kTempMarker, pending.id);
    {
      ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs_->NewWritableFile(temp_meta));
      RETURN_IF_ERROR(file->Append(pending.meta_graph));
      RETURN_IF_ERROR(file->Sync());
      RETURN_IF_ERROR(file->Close());
    }
    RETURN_IF_ERROR(fs_->RenameFile(temp_meta, meta));
  }
  RETURN_IF_ERROR(fs_->SyncDir(pending.dir));
  // 4. The state file, replaced atomically; 5. only then retired checkpoints go.
  const double timestamp = UnixSeconds(clock_->Now());
  std::vector<std::string> retired;
  RETURN_IF_ERROR(UpdateState(pending, timestamp, &retired));
  // Their data files only change names here; they are deleted after the reply.
  std::vector<std::string> data_files;
  for (const std::string& name : retired) {
    const absl::Status s = DeleteCheckpointFiles(pending.dir, name, pending.id, &data_files);
    if (!s.ok()) LOG(WARNING) << "cannot delete retired checkpoint " << name << ": " << s;
  }
  if (!retired.empty()) fs_->SyncDir(pending.dir).IgnoreError();
  DeleteLater(std::move(data_files));
  info->set_name(pending.name);
  info->set_step(CheckpointStepFromName(pending.name));
  info->set_timestamp(timestamp);
  return absl::OkStatus();
}

absl::Status CheckpointStore::UpdateState(const Pending& pending, double timestamp,
                                          std::vector<std::string>* retired) {
  auto old = ReadState(pending.dir);
  if (!old.ok()) LOG(WARNING) << "replacing unreadable state file: " << old.status();
  const RetentionPolicy& retention = pending.retention;
  std::vector<std::pair<std::string, double>> list;
  double last_preserved = timestamp - 1;
  if (old.ok() && old->has_value()) {
    const CheckpointState& state = **old;
    last_preserved = state.last_preserved_timestamp();
    const bool timed =
        state.all_model_checkpoint_timestamps_size() == state.all_model_checkpoint_paths_size();
    for (int i = 0; i < state.all_model_checkpoint_paths_size() && !retention.use_saver_list();
         ++i) {
      // Entries without timestamps (TF1's Saver) are preserved, as TF's manager does.
      list.emplace_back(Basename(state.all_model_checkpoint_paths(i)),
                        timed ? state.all_model_checkpoint_timestamps(i) : last_preserved);
    }
  }
  const int max_to_keep = retention.max_to_keep();
  // A Saver that keeps no list (TensorFlow's max_to_keep 0 or None) lists only the newest.
  if (retention.use_saver_list() && max_to_keep > 0) {
    for (const CheckpointInfo& listed : retention.saver_checkpoints()) {
      list.emplace_back(listed.name(), listed.timestamp());
    }
  }
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const auto& e) { return e.first == pending.name; }),
             list.end());
  list.emplace_back(pending.name, timestamp);
  const double keep_hours = retention.keep_checkpoint_every_n_hours();
  while (max_to_keep > 0 && static_cast<int>(list.size()) > max_to_keep) {
    const auto [name, ts] = list.front();
    list.erase(list.begin());
    if (ts <= last_preserved) continue;  // Not managed by the store: kept.
    if (keep_hours > 0 && ts - keep_hours * 3600 >= last_preserved) {
      last_preserved = ts;
      continue;
    }
    retired->push_back(name);
  }
  CheckpointState state;
  state.set_model_checkpoint_path(pending.name);
  for (const auto& [name, ts] : list) {
    state.add_all_model_checkpoint_paths(name);
    state.add_all_model_checkpoint_timestamps(ts);
  }
  state.set_last_preserved_timestamp(last_preserved);
  return WriteStateFile(fs_, pending.dir, state, pending.id);
}

absl::Status CheckpointStore::DeleteCheckpointFiles(const std::string& dir, const std::string& name,
                                                    const std::string& temp_id,
                                                    std::vector<std::string>* later) {
  ASSIGN_OR_RETURN(std::vector<std::string> files, fs_->ListDir(dir));
  // The meta graph, then the index, so that a crash midway leaves no visible partial
  // checkpoint and no meta graph without its checkpoint (the data files left without
  // an index are removed when the store next opens).
  const std::string meta = MetaGraphFilename(absl::StrCat(dir, "/", name));
  if (fs_->FileExists(meta).ok()) RETURN_IF_ERROR(fs_->DeleteFile(meta));
  const std::string index = IndexFilename(absl::StrCat(dir, "/", name));
  if (fs_->FileExists(index).ok()) RETURN_IF_ERROR(fs_->DeleteFile(index));
  for (const std::string& file : files) {
    std::string owner;
    if (!ParseDataFilename(file, &owner) || owner != name) continue;
    const std::string path = absl::StrCat(dir, "/", file);
    if (later == nullptr) {
      RETURN_IF_ERROR(fs_->DeleteFile(path));
      continue;
    }
    std::string temp = absl::StrCat(path, kTempMarker, temp_id);
    RETURN_IF_ERROR(fs_->RenameFile(path, temp));
    later->push_back(std::move(temp));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<CheckpointState>> CheckpointStore::ReadState(const std::string& dir) {
  absl::StatusOr<std::optional<CheckpointState>> read = ReadStateFile(fs_, dir);
  if (!absl::IsDataLoss(read.status())) return read;
  ASSIGN_OR_RETURN(std::vector<std::string> files, fs_->ListDir(dir));
  std::vector<std::pair<int64_t, std::string>> found;
  for (const std::string& file : files) {
    if (!absl::EndsWith(file, ".index")) continue;
    std::string name = file.substr(0, file.size() - std::strlen(".index"));
    if (ValidateCheckpointName(name).ok()) {
      found.emplace_back(CheckpointStepFromName(name), std::move(name));
    }
  }
  std::sort(found.begin(), found.end());
  LOG(WARNING) << read.status() << "; rebuilt from the " << found.size()
               << " checkpoints in its directory";
  if (state_rebuilds_ != nullptr) state_rebuilds_->Increment();
  CheckpointState state;
  // Commit times unknown: 0, after the last preserved one, so that retention applies.
  state.set_last_preserved_timestamp(-1);
  for (const auto& [step, name] : found) {
    state.add_all_model_checkpoint_paths(name);
    state.add_all_model_checkpoint_timestamps(0);
  }
  if (!found.empty()) state.set_model_checkpoint_path(found.back().second);
  return std::optional<CheckpointState>(std::move(state));
}

absl::StatusOr<std::vector<CheckpointInfo>> CheckpointStore::CompleteCheckpoints(
    const std::string& dir) {
  ASSIGN_OR_RETURN(std::optional<CheckpointState> state, ReadState(dir));
  std::vector<CheckpointInfo> out;
  if (!state.has_value()) return out;
  std::vector<std::pair<std::string, double>> listed;
  for (int i = 0; i < state->all_model_checkpoint_paths_size(); ++i) {
    const double ts = i < state->all_model_checkpoint_timestamps_size()
                          ? state->all_model_checkpoint_timestamps(i)
                          : 0;
    listed.emplace_back(Basename(state->all_model_checkpoint_paths(i)), ts);
  }
  const std::string latest = Basename(state->model_checkpoint_path());
  if (!latest.empty() && (listed.empty() || listed.back().first != latest)) {
    listed.erase(std::remove_if(listed.begin(), listed.end(),
                                [&](const auto& e) { return e.first == latest; }),
                 listed.end());
    listed.emplace_back(latest, 0);
  }
  for (const auto& [name, ts] : listed) {
    if (!ValidateCheckpointName(name).ok()) continue;
    if (!fs_->FileExists(IndexFilename(absl::StrCat(dir, "/", name))).ok()) continue;
    CheckpointInfo info;
    info.set_name(name);
    info.set_step(CheckpointStepFromName(name));
    info.set_timestamp(ts);
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<std::optional<CheckpointInfo>> CheckpointStore::LatestCheckpoint(
    const std::string& run) {
  RETURN_IF_ERROR(ValidateCheckpointRun(run));
  const std::string dir = RunDir(run);
  ASSIGN_OR_RETURN(std::vector<CheckpointInfo> all, CompleteCheckpoints(dir));
  // The newest whose index opens (its checksums verified): a damaged one is passed over
  // for an older one, never for a fresh start.
  absl::Status newest_error;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    absl::StatusOr<std::unique_ptr<BundleReader>> reader =
        BundleReader::Open(fs_, absl::StrCat(dir, "/", it->name()));
    if (reader.ok()) return std::optional<CheckpointInfo>(*it);
    if (!absl::IsDataLoss(reader.status())) return reader.status();
    LOG(WARNING) << "checkpoint " << it->name() << " of run '" << run
                 << "' is damaged, passed over: " << reader.status();
    if (unreadable_skipped_ != nullptr) unreadable_skipped_->Increment();
    if (newest_error.ok()) newest_error = reader.status();
  }
  if (!newest_error.ok()) return newest_error;
  return std::optional<CheckpointInfo>();
}

absl::StatusOr<std::vector<CheckpointInfo>> CheckpointStore::ListCheckpoints(
    const std::string& run) {
  RETURN_IF_ERROR(ValidateCheckpointRun(run));
  return CompleteCheckpoints(RunDir(run));
}

absl::StatusOr<std::vector<TensorHeader>> CheckpointStore::ListTensors(const std::string& run,
                                                                       const std::string& name) {
  RETURN_IF_ERROR(ValidateCheckpointRun(run));
  RETURN_IF_ERROR(ValidateCheckpointName(name));
  ASSIGN_OR_RETURN(std::unique_ptr<BundleReader> reader,
                   BundleReader::Open(fs_, absl::StrCat(RunDir(run), "/", name)));
  std::vector<TensorHeader> out;
  for (const auto& [tensor, entry] : reader->entries()) {
    TensorHeader header;
    header.set_name(tensor);
    header.set_dtype(entry.dtype());
    *header.mutable_shape() = entry.shape();
    header.set_size(entry.size());
    out.push_back(std::move(header));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<BundleReader>> CheckpointStore::OpenBundle(const std::string& run,
                                                                          const std::string& name) {
  RETURN_IF_ERROR(ValidateCheckpointRun(run));
  RETURN_IF_ERROR(ValidateCheckpointName(name));
  return BundleReader::Open(fs_, absl::StrCat(RunDir(run), "/", name));
}

absl::Status CheckpointStore::ReadTensorsInto(const std::string& run, const std::string& name,
                                              const std::vector<std::string>& tensor_names,
                                              TensorReceiver* receiver) {
  const absl::Time start = clock_->Now();
  ASSIGN_OR_RETURN(std::unique_ptr<BundleReader> reader, OpenBundle(run, name));
  std::vector<std::string> names = tensor_names;
  if (names.empty()) {
    for (const auto& entry : reader->entries()) names.push_back(entry.first);
  }
  for (const std::string& tensor : names) {
    ASSIGN_OR_RETURN(const BundleEntryProto* entry, reader->CheckedEntry(tensor));
    TensorHeader header;
    header.set_name(tensor);
    header.set_dtype(entry->dtype());
    *header.mutable_shape() = entry->shape();
    header.set_size(entry->size());
    ASSIGN_OR_RETURN(char* dst, receiver->Allocate(header));
    const absl::Status read = reader->ReadTensorTo(tensor, dst);
    if (!read.ok()) {
      if (crc_failures_ != nullptr && absl::IsDataLoss(read) &&
          absl::StrContains(read.message(), "checksum")) {
        crc_failures_->Increment();
      }
      return read;
    }
    if (bytes_read_ != nullptr) bytes_read_->Increment(static_cast<double>(entry->size()));
    RETURN_IF_ERROR(receiver->Received(header));
  }
  if (restore_seconds_ != nullptr) {
    restore_seconds_->Observe(absl::ToDoubleSeconds(clock_->Now() - start));
  }
  return absl::OkStatus();
}

absl::Status CheckpointStore::DeleteCheckpoint(const std::string& run, const std::string& name) {
  RETURN_IF_ERROR(ValidateCheckpointRun(run));
  RETURN_IF_ERROR(ValidateCheckpointName(name));
  const std::string dir = RunDir(run);
  absl::MutexLock run_lock(RunMutex(dir));
  ASSIGN_OR_RETURN(std::optional<CheckpointState> state, ReadState(dir));
  if (state.has_value()) {
    CheckpointState kept;
    kept.set_last_preserved_timestamp(state->last_preserved_timestamp());
    const bool timed =
        state->all_model_checkpoint_timestamps_size() == state->all_model_checkpoint_paths_size();
    for (int i = 0; i < state->all_model_checkpoint_paths_size(); ++i) {
      if (Basename(state->all_model_checkpoint_paths(i)) == name) continue;
      kept.add_all_model_checkpoint_paths(state->all_model_checkpoint_paths(i));
      if (timed)
        kept.add_all_model_checkpoint_timestamps(state->all_model_checkpoint_timestamps(i));
    }
    if (kept.all_model_checkpoint_paths_size() > 0) {
      kept.set_model_checkpoint_path(
          kept.all_model_checkpoint_paths(kept.all_model_checkpoint_paths_size() - 1));
      absl::BitGen gen;
      RETURN_IF_ERROR(
          WriteStateFile(fs_, dir, kept, absl::StrFormat("%016x", absl::Uniform<uint64_t>(gen))));
    } else {
      RETURN_IF_ERROR(fs_->DeleteFile(absl::StrCat(dir, "/", kStateFilename)));
    }
  }
  if (!fs_->FileExists(IndexFilename(absl::StrCat(dir, "/", name))).ok()) {
    return absl::NotFoundError(absl::StrCat("no checkpoint ", name, " in run '", run, "'"));
  }
  RETURN_IF_ERROR(DeleteCheckpointFiles(dir, name));
  RETURN_IF_ERROR(fs_->SyncDir(dir));
  if (latest_step_ != nullptr) {
    absl::StatusOr<std::vector<CheckpointInfo>> left = CompleteCheckpoints(dir);
    if (left.ok()) {
      RecordLatest(run, left->empty() ? std::optional<CheckpointInfo>()
                                      : std::optional<CheckpointInfo>(left->back()));
    }
  }
  return absl::OkStatus();
}

}  // namespace overseer

#ifndef OVERSEER_CHECKPOINT_STORE_CHECKPOINT_STORE_H_
#define OVERSEER_CHECKPOINT_STORE_CHECKPOINT_STORE_H_

// The checkpoint store's logic on a file system: TensorFlow V2 bundles under
// ROOT/<run>/ with the commit protocol of docs/checkpoint_format.md. It is the
// in-process CheckpointStoreInterface (embedded mode: ROOT is the checkpoint
// directory, run "") and what the gRPC service (rpc/) adapts. Never includes gRPC.
//
// With a metrics registry it exports (docs/metrics.md)
//   overseer_checkpoint_store_checkpoints_committed_total, _bytes_written_total,
//   _bytes_read_total, _crc_failures_total, _save_duration_seconds,
//   _restore_duration_seconds, and per run (label `run`, "" for the root)
//   overseer_checkpoint_store_latest_checkpoint_step{run}               gauge
//   overseer_checkpoint_store_latest_checkpoint_timestamp_seconds{run}  gauge
// the newest complete checkpoint of each run (its step, -1 if its name has none, and
// its commit time in Unix seconds): set at Open for the runs found under ROOT, by every
// commit and every delete; a run left without checkpoints has no series.

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint_store/checkpoint_store_interface.h"
#include "core/clock.h"
#include "core/io/file_system.h"
#include "core/io/rooted_file_system.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/tensor_bundle.pb.h"

namespace overseer {

class BundleReader;

// Checks a run name: "" (the root) or what ValidateRunName accepts. INVALID_ARGUMENT
// otherwise.
absl::Status ValidateCheckpointRun(absl::string_view run);
// Checks a checkpoint name: one segment of [A-Za-z0-9._-], not "." or "..", at most
// 255 bytes, not a temp or state file name. INVALID_ARGUMENT otherwise.
absl::Status ValidateCheckpointName(absl::string_view name);

// Thread-safe.
class CheckpointStore : public CheckpointStoreInterface {
 public:
  // Opens the store at `root` (created if missing) and removes what a crash left
  // behind under it: temp files and data files without an index. `fs` and `clock` are
  // borrowed and must outlive the store; `metrics` may be null.
  static absl::StatusOr<std::unique_ptr<CheckpointStore>> Open(
      FileSystem* fs, std::string root, Clock* clock, prometheus::Registry* metrics = nullptr);
  ~CheckpointStore() override;

  absl::StatusOr<std::string> BeginCheckpoint(const BeginCheckpointRequest& request) override;
  absl::StatusOr<std::unique_ptr<ShardWriter>> OpenShard(const std::string& checkpoint_id,
                                                         int shard_id) override;
  absl::StatusOr<CheckpointInfo> CommitCheckpoint(const std::string& checkpoint_id) override;
  absl::Status AbortCheckpoint(const std::string& checkpoint_id) override;
  absl::StatusOr<std::optional<CheckpointInfo>> LatestCheckpoint(const std::string& run) override;
  absl::StatusOr<std::vector<CheckpointInfo>> ListCheckpoints(const std::string& run) override;
  absl::StatusOr<std::vector<TensorHeader>> ListTensors(const std::string& run,
                                                        const std::string& name) override;
  // Reads each tensor from its data file straight into the receiver's memory.
  absl::Status ReadTensorsInto(const std::string& run, const std::string& name,
                               const std::vector<std::string>& tensor_names,
                               TensorReceiver* receiver) override;
  absl::Status DeleteCheckpoint(const std::string& run, const std::string& name) override;

  // Local writes (local_read_server.h): opens shard `shard_id` of a begun checkpoint
  // for a writer on this host that fills its data file itself through a descriptor:
  // creates the file, empty, and returns its path. CloseLocalShard with the same
  // `token` closes the shard. The errors of OpenShard, except that a shard held by a
  // local write that has not closed (its writer died or gave up) is taken over, its
  // file started again; OpenShard takes such a shard over too.
  absl::StatusOr<std::string> OpenLocalShard(const std::string& checkpoint_id, int shard_id,
                                             const std::string& token);
  // Closes a shard opened by OpenLocalShard under request.token: checks the tensors the
  // writer reports (valid headers, unique names, within request.file_bytes, none
  // overlapping; INVALID_ARGUMENT), that the file holds request.file_bytes (DATA_LOSS),
  // makes it durable (fsync) and closes the shard as ShardWriter::Close does. The
  // writer's CRC32Cs go into the index as reported: the bytes are not read back.
  // FAILED_PRECONDITION if the shard is not held under that token (taken over).
  absl::StatusOr<CloseLocalWriteResponse> CloseLocalShard(const CloseLocalWriteRequest& request);

  // The bundle of checkpoint `name` of `run`, found as every read finds it (for local
  // reads, local_read_server.h). INVALID_ARGUMENT for a bad run or name; the errors of
  // BundleReader::Open (NOT_FOUND if the checkpoint does not exist).
  absl::StatusOr<std::unique_ptr<BundleReader>> OpenBundle(const std::string& run,
                                                           const std::string& name);

  // Aborts every pending checkpoint and makes later BeginCheckpoint calls fail
  // UNAVAILABLE, and waits for the deletes of retired checkpoints' data files. Commits
  // already running finish. For SIGTERM.
  void Shutdown();

  // How many checkpoints are begun and neither committed nor aborted.
  int pending_checkpoints() const;

  // Waits until the data files of the checkpoints that commits retired are deleted. A
  // commit deletes a retired checkpoint's index and meta graph itself, so it is gone at
  // once for every reader, and leaves its data files to a thread of the store: on the
  // virtual disks we run on, unlinking 512 MiB takes a quarter of a second.
  void WaitForRetiredFiles();

 private:
  struct Shard;
  struct Pending;
  class LocalShardWriter;

  CheckpointStore(std::unique_ptr<RootedFileSystem> fs, Clock* clock,
                  prometheus::Registry* metrics);
  std::string RunDir(const std::string& run) const;
  absl::Mutex* RunMutex(const std::string& dir);
  // The pending checkpoint `id`; ABORTED if an earlier run of the store gave the id
  // (it restarted since), NOT_FOUND if there is none otherwise.
  absl::StatusOr<std::shared_ptr<Pending>> FindPending(const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks shard `shard_id` of `pending` open for a writer (a local write's if
  // `local_token` is not empty); true if it took the shard over from a local write that
  // had not closed (whose file is left behind). INVALID_ARGUMENT out of range;
  // FAILED_PRECONDITION if closed or held by a streaming writer.
  absl::StatusOr<bool> ClaimShard(Pending& pending, int shard_id, const std::string& local_token)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether shard `shard_id` of `pending` is open under local write `token`.
  bool HeldByLocalWrite(const Pending& pending, int shard_id, const std::string& token) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::shared_ptr<Pending>> TakePending(const std::string& id, bool require_closed);
  void DeleteTempFiles(const Pending& pending);
  absl::Status Publish(const Pending& pending, CheckpointInfo* info);
  absl::Status UpdateState(const Pending& pending, double timestamp,
                           std::vector<std::string>* retired);
  // The run's state file; one that does not parse is rebuilt from the checkpoints in
  // `dir` (every valid name with an index file, by step; timestamps unknown, 0), with a
  // warning and overseer_checkpoint_store_state_file_rebuilds_total, so that reads
  // still see them and the next commit's retention still retires them.
  absl::StatusOr<std::optional<CheckpointState>> ReadState(const std::string& dir);
  absl::StatusOr<std::vector<CheckpointInfo>> CompleteCheckpoints(const std::string& dir);
  // Deletes checkpoint `name`'s files in `dir`: its meta graph, then its index, then its
  // data files. With `later`, each data file is instead renamed to a temp name of id
  // `temp_id` (removed when the store next opens, if a crash comes first) and added to
  // *later, for DeleteLater.
  absl::Status DeleteCheckpointFiles(const std::string& dir, const std::string& name,
                                     const std::string& temp_id = "",
                                     std::vector<std::string>* later = nullptr);
  // Deletes `paths` on the deleter thread (started on first use), in order.
  void DeleteLater(std::vector<std::string> paths);
  // The deleter thread's loop: until destruction, and then until none is left.
  void DeleteQueuedFiles();
  absl::Status RemoveLeftovers(const std::string& dir);
  void ShardClosed(const std::string& id, int shard_id, bool ok,
                   std::map<std::string, BundleEntryProto> entries, int64_t bytes);
  // Sets the latest-checkpoint gauges of `run` from `latest`, or removes them without
  // one. Called with the run's mutex held, so that a run's updates are in order.
  void RecordLatest(const std::string& run, const std::optional<CheckpointInfo>& latest);
  // RecordLatest for every run at or under `dir` (run `run`) that has a state file.
  void RecordLatestOfRuns(const std::string& dir, const std::string& run);

  // Every file operation goes through it: nothing outside the root, symbolic links
  // included, is read, written or deleted.
  const std::unique_ptr<RootedFileSystem> rooted_;
  FileSystem* const fs_;  // rooted_.get()
  const std::string root_;
  Clock* const clock_;
  // Random per store object: the first half of every checkpoint id it gives, so that an
  // id from before a restart is told apart from one never given (FindPending).
  const uint32_t incarnation_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<absl::Mutex>> run_mutexes_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;

  // Files of retired checkpoints to delete (DeleteLater), and the thread deleting them.
  absl::Mutex delete_mu_;
  std::deque<std::string> to_delete_ ABSL_GUARDED_BY(delete_mu_);
  bool deleting_ ABSL_GUARDED_BY(delete_mu_) = false;  // One taken from to_delete_.
  bool destroying_ ABSL_GUARDED_BY(delete_mu_) = false;
  std::thread deleter_ ABSL_GUARDED_BY(delete_mu_);

  // Metrics; null without a registry.
  prometheus::Counter* committed_ = nullptr;
  prometheus::Counter* bytes_written_ = nullptr;
  prometheus::Counter* bytes_read_ = nullptr;
  prometheus::Counter* crc_failures_ = nullptr;
  prometheus::Counter* state_rebuilds_ = nullptr;
  prometheus::Counter* unreadable_skipped_ = nullptr;
  prometheus::Histogram* save_seconds_ = nullptr;
  prometheus::Histogram* restore_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* latest_step_ = nullptr;
  prometheus::Family<prometheus::Gauge>* latest_timestamp_ = nullptr;
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_CHECKPOINT_STORE_H_

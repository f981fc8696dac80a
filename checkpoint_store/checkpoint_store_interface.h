#ifndef OVERSEER_CHECKPOINT_STORE_CHECKPOINT_STORE_INTERFACE_H_
#define OVERSEER_CHECKPOINT_STORE_CHECKPOINT_STORE_INTERFACE_H_

// The checkpoint store as its clients see it (DESIGN.md 6). Implementations: the
// in-process CheckpointStore (embedded mode, a local directory) and GrpcCheckpointStore
// (a checkpoint_store_server). A save is Begin, one OpenShard/.../Close per shard (each
// from the process that holds that shard's variables), then Commit, which publishes the
// checkpoint atomically, or Abort. Runs are "" (the store's root) or names of
// [A-Za-z0-9._-] segments joined by '/'.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/checkpoint_store.pb.h"

namespace overseer {

// Streams the tensors of one shard. Not thread-safe; one writer per shard.
class ShardWriter {
 public:
  virtual ~ShardWriter() = default;
  // Starts a tensor whose header.size bytes follow through Append. INVALID_ARGUMENT for
  // a bad header (see ValidateTensorHeader) or if the previous tensor is incomplete.
  virtual absl::Status BeginTensor(const TensorHeader& header) = 0;
  virtual absl::Status Append(absl::string_view data) = 0;
  // Ends the shard; when it returns OK the shard is durable in the store. A writer
  // destroyed without Close leaves its shard missing, and the commit fails.
  virtual absl::Status Close() = 0;

  absl::Status AddTensor(const TensorHeader& header, absl::string_view data) {
    absl::Status s = BeginTensor(header);
    return s.ok() ? Append(data) : s;
  }
};

// Receives one tensor read from a checkpoint: its header and all its bytes. The bytes
// are valid only during the call (stores reuse their buffers for the next tensor).
using TensorConsumer = std::function<absl::Status(const TensorHeader&, absl::string_view data)>;

// Receives the tensors of a ReadTensorsInto call into memory it provides, so that a
// store writes each byte once, where its reader wants it (a kernel's output tensor).
// Calls come from the ReadTensorsInto caller's thread, one tensor at a time, in order.
class TensorReceiver {
 public:
  virtual ~TensorReceiver() = default;
  // Where the header.size bytes of the next tensor go: memory of at least that size
  // that stays valid until Received for it returns or ReadTensorsInto returns. An
  // error stops the read, and ReadTensorsInto returns it.
  virtual absl::StatusOr<char*> Allocate(const TensorHeader& header) = 0;
  // Every byte of the tensor is in place and its CRC32C verified. An error stops the
  // read, and ReadTensorsInto returns it.
  virtual absl::Status Received(const TensorHeader& header) = 0;
};

// Thread-safe.
class CheckpointStoreInterface {
 public:
  virtual ~CheckpointStoreInterface() = default;

  // Starts checkpoint request.name of request.run with request.num_shards shards and
  // returns its id. INVALID_ARGUMENT for a bad run or name or num_shards < 1.
  virtual absl::StatusOr<std::string> BeginCheckpoint(const BeginCheckpointRequest& request) = 0;
  // Opens shard `shard_id` of a begun checkpoint. NOT_FOUND for an unknown id, ABORTED
  // for one given before the store restarted (begin again);
  // FAILED_PRECONDITION if the shard was already opened.
  virtual absl::StatusOr<std::unique_ptr<ShardWriter>> OpenShard(const std::string& checkpoint_id,
                                                                 int shard_id) = 0;
  // Publishes the checkpoint once every shard is closed (FAILED_PRECONDITION naming the
  // missing shards otherwise, and the checkpoint stays pending), updates the state file
  // and applies the retention policy. Commits of one run are serialised.
  virtual absl::StatusOr<CheckpointInfo> CommitCheckpoint(const std::string& checkpoint_id) = 0;
  // Drops a pending checkpoint and its temp files. NOT_FOUND for an unknown id.
  virtual absl::Status AbortCheckpoint(const std::string& checkpoint_id) = 0;

  // The newest complete checkpoint of `run`, or nullopt if it has none.
  virtual absl::StatusOr<std::optional<CheckpointInfo>> LatestCheckpoint(
      const std::string& run) = 0;
  // The complete checkpoints listed in the state file, oldest first.
  virtual absl::StatusOr<std::vector<CheckpointInfo>> ListCheckpoints(const std::string& run) = 0;
  // The tensors (headers) of checkpoint `name`. NOT_FOUND if it does not exist.
  virtual absl::StatusOr<std::vector<TensorHeader>> ListTensors(const std::string& run,
                                                                const std::string& name) = 0;
  // Reads `tensor_names` (every tensor if empty) of checkpoint `name` into the memory
  // `receiver` provides, tensor by tensor in order. NOT_FOUND naming a missing
  // checkpoint or tensor; DATA_LOSS naming the tensor and file on a CRC mismatch or a
  // damaged file (the tensor is then never Received; bytes of it may have been
  // written to its memory). On any error the caller must discard what it received.
  virtual absl::Status ReadTensorsInto(const std::string& run, const std::string& name,
                                       const std::vector<std::string>& tensor_names,
                                       TensorReceiver* receiver) = 0;
  // ReadTensorsInto through a reused buffer, calling `consumer` with each tensor.
  absl::Status ReadTensors(const std::string& run, const std::string& name,
                           const std::vector<std::string>& tensor_names,
                           const TensorConsumer& consumer);
  // Deletes checkpoint `name` (its files and its state-file entry).
  virtual absl::Status DeleteCheckpoint(const std::string& run, const std::string& name) = 0;
};

// The step of a checkpoint name "<base>-<step>", or -1.
int64_t CheckpointStepFromName(absl::string_view name);

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_CHECKPOINT_STORE_INTERFACE_H_

#ifndef OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_H_
#define OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_H_

// CheckpointStoreInterface over gRPC to a checkpoint_store_server. Linking this
// library registers the "grpc" scheme of checkpoint locations (location.h):
// "grpc://host:port/<run>". Thread-safe.
//
// Reads short-circuit when the store runs on the reader's host (local_read.h): the
// store hands over read-only descriptors of the checkpoint's data files and the reader
// preads the tensors itself, verifying each CRC32C. Anything that stops that before the
// first tensor is allocated (another host or container, a store that serves no local
// reads or predates them, a refused token) falls back to the ReadTensors stream. Set
// the environment variable OVERSEER_CHECKPOINT_LOCAL_READS=0 to always stream.
//
// Writes short-circuit alike (local_write.h): OpenShard asks the store for a descriptor
// of the shard's data file and the writer fills it itself, O_DIRECT from the tensors'
// memory where the file system allows; anything that stops that before the first byte
// (as above) falls back to the WriteShard stream. Local writes are off when local reads
// are, or when OVERSEER_CHECKPOINT_LOCAL_WRITES=0.

#include <atomic>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "checkpoint_store/checkpoint_store_interface.h"
#include "checkpoint_store/local_read.h"
#include "core/clock.h"
#include "grpcpp/channel.h"
#include "grpcpp/impl/rpc_method.h"
#include "proto/checkpoint_store.grpc.pb.h"

namespace overseer {

class GrpcCheckpointStore : public CheckpointStoreInterface {
 public:
  // Reads try the local path first iff `local_reads`. `clock` (not owned, not null)
  // measures how long an unreachable local read socket is left alone.
  GrpcCheckpointStore(std::shared_ptr<grpc::Channel> channel, bool local_reads, Clock* clock);
  // A store at "host:port". A null `clock` means the real clock.
  static std::unique_ptr<GrpcCheckpointStore> Connect(
      const std::string& address, bool local_reads = LocalReadsFromEnvironment(),
      Clock* clock = nullptr);
  // False iff OVERSEER_CHECKPOINT_LOCAL_READS is "0", "false", "no" or "off".
  static bool LocalReadsFromEnvironment();

  absl::StatusOr<std::string> BeginCheckpoint(const BeginCheckpointRequest& request) override;
  absl::StatusOr<std::unique_ptr<ShardWriter>> OpenShard(const std::string& checkpoint_id,
                                                         int shard_id) override;
  absl::StatusOr<CheckpointInfo> CommitCheckpoint(const std::string& checkpoint_id) override;
  absl::Status AbortCheckpoint(const std::string& checkpoint_id) override;
  absl::StatusOr<std::optional<CheckpointInfo>> LatestCheckpoint(const std::string& run) override;
  absl::StatusOr<std::vector<CheckpointInfo>> ListCheckpoints(const std::string& run) override;
  absl::StatusOr<std::vector<TensorHeader>> ListTensors(const std::string& run,
                                                        const std::string& name) override;
  // Reads locally if it can (see above), else decodes the raw stream
  // (read_tensors_wire.h): each tensor's bytes are copied once, from gRPC's receive
  // buffers into the receiver's memory. Either way a CRC mismatch is DATA_LOSS naming
  // the tensor and the data file.
  absl::Status ReadTensorsInto(const std::string& run, const std::string& name,
                               const std::vector<std::string>& tensor_names,
                               TensorReceiver* receiver) override;
  absl::Status DeleteCheckpoint(const std::string& run, const std::string& name) override;

  // ReadTensorsInto calls that were served by the local path, and by the stream.
  int64_t local_reads() const { return local_reads_.load(); }
  int64_t streamed_reads() const { return streamed_reads_.load(); }
  // OpenShard calls that returned a local writer, and a streaming one.
  int64_t local_writes() const { return local_writes_.load(); }
  int64_t streamed_writes() const { return streamed_writes_.load(); }

 private:
  // UNAVAILABLE while the store's local socket is taken to be out of reach.
  absl::Status CheckSocketReachable();
  // Redeems `token` at `socket`; an unreachable socket is left alone for a while.
  absl::StatusOr<std::vector<UniqueFd>> Redeem(const std::string& socket, const std::string& token);
  // The local write path of OpenShard; *fall_back as for ReadLocally.
  absl::StatusOr<std::unique_ptr<ShardWriter>> OpenLocalShard(const std::string& checkpoint_id,
                                                              int shard_id, bool* fall_back);
  // The local path; *fall_back tells whether its error allows streaming instead.
  absl::Status ReadLocally(const std::string& run, const std::string& name,
                           const std::vector<std::string>& tensor_names, TensorReceiver* receiver,
                           bool* fall_back);
  absl::Status ReadStreamed(const std::string& run, const std::string& name,
                            const std::vector<std::string>& tensor_names, TensorReceiver* receiver);

  const bool local_reads_enabled_;
  const bool local_writes_enabled_;
  Clock* const clock_;
  std::atomic<int64_t> local_reads_{0};
  std::atomic<int64_t> streamed_reads_{0};
  std::atomic<int64_t> local_writes_{0};
  std::atomic<int64_t> streamed_writes_{0};
  // Until then the store's local read socket is taken to be out of reach (another
  // host), and reads stream without asking for a local read.
  absl::Mutex mu_;
  absl::Time socket_unreachable_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  const std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<CheckpointStoreService::Stub> stub_;
  // ReadTensors called with raw messages (grpc::ByteBuffer) instead of the stub's.
  const std::string read_tensors_method_name_;
  const grpc::internal::RpcMethod read_tensors_method_;
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_H_

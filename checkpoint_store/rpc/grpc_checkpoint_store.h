#ifndef OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_H_
#define OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_H_

// CheckpointStoreInterface over gRPC to a checkpoint_store_server. Linking this
// library registers the "grpc" scheme of checkpoint locations (location.h):
// "grpc://host:port/<run>". Thread-safe. Keeps up to 256 MiB of read buffers for reuse
// by later ReadTensors calls.

#include <memory>
#include <string>

#include "checkpoint_store/buffer_pool.h"
#include "checkpoint_store/checkpoint_store_interface.h"
#include "grpcpp/channel.h"
#include "proto/checkpoint_store.grpc.pb.h"

namespace overseer {

class GrpcCheckpointStore : public CheckpointStoreInterface {
 public:
  explicit GrpcCheckpointStore(std::shared_ptr<grpc::Channel> channel);
  // A store at "host:port".
  static std::unique_ptr<GrpcCheckpointStore> Connect(const std::string& address);

  absl::StatusOr<std::string> BeginCheckpoint(const BeginCheckpointRequest& request) override;
  absl::StatusOr<std::unique_ptr<ShardWriter>> OpenShard(const std::string& checkpoint_id,
                                                         int shard_id) override;
  absl::StatusOr<CheckpointInfo> CommitCheckpoint(const std::string& checkpoint_id) override;
  absl::Status AbortCheckpoint(const std::string& checkpoint_id) override;
  absl::StatusOr<std::optional<CheckpointInfo>> LatestCheckpoint(const std::string& run) override;
  absl::StatusOr<std::vector<CheckpointInfo>> ListCheckpoints(const std::string& run) override;
  absl::StatusOr<std::vector<TensorHeader>> ListTensors(const std::string& run,
                                                        const std::string& name) override;
  absl::Status ReadTensors(const std::string& run, const std::string& name,
                           const std::vector<std::string>& tensor_names,
                           const TensorConsumer& consumer) override;
  absl::Status DeleteCheckpoint(const std::string& run, const std::string& name) override;

 private:
  std::unique_ptr<CheckpointStoreService::Stub> stub_;
  // ReadTensors' message and assembly buffers, reused across calls.
  BufferPool buffers_{size_t{256} << 20};
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_H_

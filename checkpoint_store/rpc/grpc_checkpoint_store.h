#ifndef OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_H_
#define OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_H_

// CheckpointStoreInterface over gRPC to a checkpoint_store_server. Linking this
// library registers the "grpc" scheme of checkpoint locations (location.h):
// "grpc://host:port/<run>". Thread-safe.

#include <memory>
#include <string>

#include "checkpoint_store/checkpoint_store_interface.h"
#include "grpcpp/channel.h"
#include "grpcpp/impl/rpc_method.h"
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
  // Decodes the raw stream (read_tensors_wire.h): each tensor's bytes are copied once,
  // from gRPC's receive buffers into the receiver's memory.
  absl::Status ReadTensorsInto(const std::string& run, const std::string& name,
                               const std::vector<std::string>& tensor_names,
                               TensorReceiver* receiver) override;
  absl::Status DeleteCheckpoint(const std::string& run, const std::string& name) override;

 private:
  const std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<CheckpointStoreService::Stub> stub_;
  // ReadTensors called with raw messages (grpc::ByteBuffer) instead of the stub's.
  const std::string read_tensors_method_name_;
  const grpc::internal::RpcMethod read_tensors_method_;
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_H_

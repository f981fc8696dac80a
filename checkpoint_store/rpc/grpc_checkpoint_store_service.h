#ifndef OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_SERVICE_H_
#define OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_SERVICE_H_

// The gRPC adapter of a CheckpointStoreInterface: unpacks requests, calls the store,
// converts the status. Thread-safe (the store is).

#include <cstddef>

#include "checkpoint_store/buffer_pool.h"
#include "checkpoint_store/checkpoint_store_interface.h"
#include "proto/checkpoint_store.grpc.pb.h"

namespace overseer {

// The fixed HTTP/2 stream window a checkpoint_store server should use
// (ServerRunnerOptions::fixed_stream_window_bytes): with gRPC's BDP-probed window one
// WriteShard stream crawls at tens of MB/s on loopback.
constexpr int kCheckpointStoreStreamWindowBytes = 64 << 20;

class GrpcCheckpointStoreService : public CheckpointStoreService::Service {
 public:
  // `store` is borrowed and must outlive the service.
  explicit GrpcCheckpointStoreService(CheckpointStoreInterface* store) : store_(store) {}

  grpc::Status BeginCheckpoint(grpc::ServerContext*, const BeginCheckpointRequest* request,
                               BeginCheckpointResponse* response) override;
  grpc::Status WriteShard(grpc::ServerContext*, grpc::ServerReader<WriteShardRequest>* reader,
                          WriteShardResponse* response) override;
  grpc::Status CommitCheckpoint(grpc::ServerContext*, const CommitCheckpointRequest* request,
                                CommitCheckpointResponse* response) override;
  grpc::Status AbortCheckpoint(grpc::ServerContext*, const AbortCheckpointRequest* request,
                               AbortCheckpointResponse* response) override;
  grpc::Status LatestCheckpoint(grpc::ServerContext*, const LatestCheckpointRequest* request,
                                LatestCheckpointResponse* response) override;
  grpc::Status ListCheckpoints(grpc::ServerContext*, const ListCheckpointsRequest* request,
                               ListCheckpointsResponse* response) override;
  grpc::Status ListTensors(grpc::ServerContext*, const ListTensorsRequest* request,
                           ListTensorsResponse* response) override;
  grpc::Status ReadTensors(grpc::ServerContext*, const ReadTensorsRequest* request,
                           grpc::ServerWriter<ReadTensorsResponse>* writer) override;
  grpc::Status DeleteCheckpoint(grpc::ServerContext*, const DeleteCheckpointRequest* request,
                                DeleteCheckpointResponse* response) override;

 private:
  CheckpointStoreInterface* const store_;
  // The bytes fields of ReadTensors messages, reused across calls.
  BufferPool message_buffers_{size_t{256} << 20};
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_SERVICE_H_

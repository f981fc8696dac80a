#ifndef OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_SERVICE_H_
#define OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_SERVICE_H_

// The gRPC adapter of a CheckpointStoreInterface: unpacks requests, calls the store,
// converts the status, and records every method's latency and errors in rpc_metrics():
//   overseer_checkpoint_store_rpc_latency_seconds{method} (a stream: to its end),
//   overseer_checkpoint_store_rpc_errors_total{method,code}.
// Thread-safe (the store is).

#include <cstddef>
#include <memory>
#include <string>

#include "checkpoint_store/buffer_pool.h"
#include "checkpoint_store/checkpoint_store_interface.h"
#include "checkpoint_store/local_read_server.h"
#include "core/metrics/rpc_metrics.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/checkpoint_store.grpc.pb.h"

namespace overseer {

// The fixed HTTP/2 stream window a checkpoint_store server should use
// (ServerRunnerOptions::stream_window_bytes, with bdp_probe off): with gRPC's
// BDP-probed window one WriteShard stream crawls at tens of MB/s on loopback.
constexpr int kCheckpointStoreStreamWindowBytes = 64 << 20;

// ReadTensors is served by hand (read_tensors_wire.h): the service writes each
// ReadTensorsResponse as raw bytes whose tensor data are slices of its read buffers,
// and reads the next tensor from the store on another thread while it sends one.
class GrpcCheckpointStoreService : public CheckpointStoreService::Service {
 public:
  // `store` is borrowed and must outlive the service. OpenLocalRead, OpenLocalWrite and
  // CloseLocalWrite are served by `local_reads` (borrowed, must outlive the service), or
  // are UNIMPLEMENTED if it is null.
  // Errors name paths relative to `root` (the store's --root), when given.
  explicit GrpcCheckpointStoreService(CheckpointStoreInterface* store,
                                      LocalReadServer* local_reads = nullptr,
                                      std::string root = "");

  // Serve it with the registry (ServerRunner::AddCollectable).
  std::shared_ptr<RpcMetrics> rpc_metrics() const { return rpc_metrics_; }

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
  grpc::Status DeleteCheckpoint(grpc::ServerContext*, const DeleteCheckpointRequest* request,
                                DeleteCheckpointResponse* response) override;
  grpc::Status OpenLocalRead(grpc::ServerContext*, const OpenLocalReadRequest* request,
                             OpenLocalReadResponse* response) override;
  grpc::Status OpenLocalWrite(grpc::ServerContext*, const OpenLocalWriteRequest* request,
                              OpenLocalWriteResponse* response) override;
  grpc::Status CloseLocalWrite(grpc::ServerContext*, const CloseLocalWriteRequest* request,
                               CloseLocalWriteResponse* response) override;

 private:
  // `status` for the client, its paths relative to the root.
  grpc::Status Reply(const absl::Status& status) const;
  // The local read and write RPCs: `call` (which returns a StatusOr<Response>) through
  // local_reads_, UNIMPLEMENTED without one.
  template <typename Response, typename Call>
  grpc::Status ServeLocal(const grpc::ServerContext& context, RpcMetrics::Method* method,
                          absl::string_view name, const Call& call, Response* response);
  // ReadTensors: one request, then the stream of raw ReadTensorsResponse messages.
  grpc::Status StreamTensors(
      grpc::ServerContext* context,
      grpc::ServerSplitStreamer<ReadTensorsRequest, grpc::ByteBuffer>* stream);

  CheckpointStoreInterface* const store_;
  const std::string root_;
  LocalReadServer* const local_reads_;
  const std::shared_ptr<RpcMetrics> rpc_metrics_;
  RpcMetrics::Method* const begin_checkpoint_;
  RpcMetrics::Method* const write_shard_;
  RpcMetrics::Method* const commit_checkpoint_;
  RpcMetrics::Method* const abort_checkpoint_;
  RpcMetrics::Method* const latest_checkpoint_;
  RpcMetrics::Method* const list_checkpoints_;
  RpcMetrics::Method* const list_tensors_;
  RpcMetrics::Method* const read_tensors_;
  RpcMetrics::Method* const delete_checkpoint_;
  RpcMetrics::Method* const open_local_read_;
  RpcMetrics::Method* const open_local_write_;
  RpcMetrics::Method* const close_local_write_;
  // ReadTensors' read buffers, reused across tensors and calls; shared with the slices
  // that reference them, which gRPC may release after a call ends.
  const std::shared_ptr<BufferPool> read_buffers_ = std::make_shared<BufferPool>(size_t{256} << 20);
};

}  // namespace overseer

#endif  // OVERSEER_CHECKPOINT_STORE_RPC_GRPC_CHECKPOINT_STORE_SERVICE_H_

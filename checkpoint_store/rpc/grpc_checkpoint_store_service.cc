#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/rpc/grpc_status.h"

namespace overseer {
namespace {

constexpr size_t kChunkBytes = 1 << 20;

}  // namespace

grpc::Status GrpcCheckpointStoreService::BeginCheckpoint(grpc::ServerContext*,
                                                         const BeginCheckpointRequest* request,
                                                         BeginCheckpointResponse* response) {
  absl::StatusOr<std::string> id = store_->BeginCheckpoint(*request);
  if (!id.ok()) return ToGrpcStatus(id.status());
  response->set_checkpoint_id(*id);
  return grpc::Status::OK;
}

grpc::Status GrpcCheckpointStoreService::WriteShard(
    grpc::ServerContext* context, grpc::ServerReader<WriteShardRequest>* reader,
    WriteShardResponse* response) {
  WriteShardRequest request;
  if (!reader->Read(&request)) {
    return ToGrpcStatus(absl::InvalidArgumentError("WriteShard stream carried no message"));
  }
  absl::StatusOr<std::unique_ptr<ShardWriter>> writer =
      store_->OpenShard(request.checkpoint_id(), request.shard_id());
  if (!writer.ok()) return ToGrpcStatus(writer.status());
  int64_t bytes = 0;
  int tensors = 0;
  do {
    if (context->IsCancelled()) {
      return ToGrpcStatus(absl::CancelledError("WriteShard cancelled; the shard is dropped"));
    }
    if (request.has_tensor()) {
      absl::Status s = (*writer)->BeginTensor(request.tensor());
      if (!s.ok()) return ToGrpcStatus(s);
      ++tensors;
    }
    if (!request.data().empty()) {
      absl::Status s = (*writer)->Append(request.data());
      if (!s.ok()) return ToGrpcStatus(s);
      bytes += static_cast<int64_t>(request.data().size());
    }
  } while (reader->Read(&request));
  absl::Status closed = (*writer)->Close();
  if (!closed.ok()) return ToGrpcStatus(closed);
  response->set_bytes_written(bytes);
  response->set_num_tensors(tensors);
  return grpc::Status::OK;
}

grpc::Status GrpcCheckpointStoreService::CommitCheckpoint(grpc::ServerContext*,
                                                          const CommitCheckpointRequest* request,
                                                          CommitCheckpointResponse* response) {
  absl::StatusOr<CheckpointInfo> info = store_->CommitCheckpoint(request->checkpoint_id());
  if (!info.ok()) return ToGrpcStatus(info.status());
  *response->mutable_checkpoint() = *std::move(info);
  return grpc::Status::OK;
}

grpc::Status GrpcCheckpointStoreService::AbortCheckpoint(grpc::ServerContext*,
                                                         const AbortCheckpointRequest* request,
                                                         AbortCheckpointResponse*) {
  return ToGrpcStatus(store_->AbortCheckpoint(request->checkpoint_id()));
}

grpc::Status GrpcCheckpointStoreService::LatestCheckpoint(grpc::ServerContext*,
                                                          const LatestCheckpointRequest* request,
                                                          LatestCheckpointResponse* response) {
  absl::StatusOr<std::optional<CheckpointInfo>> latest = store_->LatestCheckpoint(request->run());
  if (!latest.ok()) return ToGrpcStatus(latest.status());
  response->set_found(latest->has_value());
  if (latest->has_value()) *response->mutable_checkpoint() = **latest;
  return grpc::Status::OK;
}

grpc::Status GrpcCheckpointStoreService::ListCheckpoints(grpc::ServerContext*,
                                                         const ListCheckpointsRequest* request,
                                                         ListCheckpointsResponse* response) {
  absl::StatusOr<std::vector<CheckpointInfo>> all = store_->ListCheckpoints(request->run());
  if (!all.ok()) return ToGrpcStatus(all.status());
  for (CheckpointInfo& info : *all) *response->add_checkpoints() = std::move(info);
  return grpc::Status::OK;
}

grpc::Status GrpcCheckpointStoreService::ListTensors(grpc::ServerContext*,
                                                     const ListTensorsRequest* request,
                                                     ListTensorsResponse* response) {
  absl::StatusOr<std::vector<TensorHeader>> all =
      store_->ListTensors(request->run(), request->name());
  if (!all.ok()) return ToGrpcStatus(all.status());
  for (TensorHeader& h : *all) *response->add_tensors() = std::move(h);
  return grpc::Status::OK;
}

grpc::Status GrpcCheckpointStoreService::ReadTensors(
    grpc::ServerContext*, const ReadTensorsRequest* request,
    grpc::ServerWriter<ReadTensorsResponse>* writer) {
  std::vector<std::string> names(request->tensor_names().begin(), request->tensor_names().end());
  return ToGrpcStatus(store_->ReadTensors(
      request->run(), request->name(), names,
      [&](const TensorHeader& header, std::string data) -> absl::Status {
        size_t pos = 0;
        bool first = true;
        do {
          ReadTensorsResponse chunk;
          if (first) *chunk.mutable_tensor() = header;
          const size_t n = std::min(kChunkBytes, data.size() - pos);
          chunk.set_data(data.data() + pos, n);
          pos += n;
          first = false;
          if (!writer->Write(chunk)) return absl::CancelledError("ReadTensors reader went away");
        } while (pos < data.size());
        return absl::OkStatus();
      }));
}

grpc::Status GrpcCheckpointStoreService::DeleteCheckpoint(grpc::ServerContext*,
                                                          const DeleteCheckpointRequest* request,
                                                          DeleteCheckpointResponse*) {
  return ToGrpcStatus(store_->DeleteCheckpoint(request->run(), request->name()));
}

}  // namespace overseer

#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/rpc/grpc_status.h"

namespace overseer {
namespace {

constexpr size_t kChunkBytes = 4 << 20;
// ReadTensors sends a tensor up to this size in one message, which the client hands
// over without assembling it, and larger ones in kChunkBytes chunks. Clients accept
// messages of 64 MiB plus a header (GrpcCheckpointStore::Connect).
constexpr size_t kWholeTensorBytes = 64 << 20;
// Received WriteShard messages waiting for the appender thread (4 MiB each).
constexpr size_t kMaxQueued = 4;

// Appends received WriteShard messages to a shard on its own thread. Push blocks while
// kMaxQueued messages wait. After the first failed append, Push returns false and the
// rest is dropped; Finish returns that error. Thread-safe (one pusher).
class ShardAppender {
 public:
  explicit ShardAppender(ShardWriter* writer)
      : writer_(writer), thread_([this] { Run(); }) {}
  ~ShardAppender() { Finish().IgnoreError(); }

  bool Push(std::unique_ptr<WriteShardRequest> request) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](ShardAppender* a) { return !a->status_.ok() || a->queue_.size() < kMaxQueued; },
        this));
    if (!status_.ok()) return false;
    queue_.push_back(std::move(request));
    return true;
  }

  // An appended message to receive into (its buffers keep their capacity, so a chunk
  // does not fault in fresh pages), or a new one.
  std::unique_ptr<WriteShardRequest> Recycled() {
    absl::MutexLock lock(&mu_);
    if (free_.empty()) return std::make_unique<WriteShardRequest>();
    std::unique_ptr<WriteShardRequest> request = std::move(free_.back());
    free_.pop_back();
    request->Clear();
    return request;
  }

  // Waits until every pushed message is appended; the first error, if any.
  absl::Status Finish() {
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
    }
    if (thread_.joinable()) thread_.join();
    absl::MutexLock lock(&mu_);
    return status_;
  }

  int64_t bytes() const { return bytes_; }
  int tensors() const { return tensors_; }

 private:
  void Run() {
    for (;;) {
      std::unique_ptr<WriteShardRequest> request;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](ShardAppender* a) { return a->done_ || !a->queue_.empty(); }, this));
        if (queue_.empty()) return;
        request = std::move(queue_.front());
        queue_.pop_front();
      }
      absl::Status s = Append(*request);
      absl::MutexLock lock(&mu_);
      if (!s.ok()) {
        status_ = s;
        queue_.clear();
        return;
      }
      free_.push_back(std::move(request));
    }
  }

  absl::Status Append(const WriteShardRequest& request) {
    if (request.has_tensor()) {
      absl::Status s = writer_->BeginTensor(request.tensor());
      if (!s.ok()) return s;
      ++tensors_;
    }
    if (request.data().empty()) return absl::OkStatus();
    bytes_ += static_cast<int64_t>(request.data().size());
    return writer_->Append(request.data());
  }

  ShardWriter* const writer_;
  // Written by the appender thread only; read after Finish.
  int64_t bytes_ = 0;
  int tensors_ = 0;
  absl::Mutex mu_;
  std::deque<std::unique_ptr<WriteShardRequest>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<WriteShardRequest>> free_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // Last: starts after the members it uses.
};

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
  auto first = std::make_unique<WriteShardRequest>();
  if (!reader->Read(first.get())) {
    return ToGrpcStatus(absl::InvalidArgumentError("WriteShard stream carried no message"));
  }
  absl::StatusOr<std::unique_ptr<ShardWriter>> writer =
      store_->OpenShard(first->checkpoint_id(), first->shard_id());
  if (!writer.ok()) return ToGrpcStatus(writer.status());
  // This thread receives while `appender` writes, so the network and the disk overlap.
  ShardAppender appender(writer->get());
  bool more = true;
  for (std::unique_ptr<WriteShardRequest> request = std::move(first); more;) {
    if (context->IsCancelled()) {
      appender.Finish().IgnoreError();
      return ToGrpcStatus(absl::CancelledError("WriteShard cancelled; the shard is dropped"));
    }
    if (!appender.Push(std::move(request))) break;  // The appender failed.
    request = appender.Recycled();
    more = reader->Read(request.get());
  }
  absl::Status appended = appender.Finish();
  if (!appended.ok()) return ToGrpcStatus(appended);
  absl::Status closed = (*writer)->Close();
  if (!closed.ok()) return ToGrpcStatus(closed);
  response->set_bytes_written(appender.bytes());
  response->set_num_tensors(appender.tensors());
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
  // One message for every send: its bytes field is a pooled buffer that keeps its
  // capacity, so no message faults in fresh pages.
  ReadTensorsResponse message;
  std::string buffer = message_buffers_.Take();
  message.mutable_data()->swap(buffer);
  auto send = [&](const TensorHeader* header, absl::string_view bytes) -> absl::Status {
    message.clear_tensor();
    if (header != nullptr) *message.mutable_tensor() = *header;
    ReserveBuffer(message.mutable_data(), bytes.size());
    message.mutable_data()->assign(bytes.data(), bytes.size());
    if (!writer->Write(message)) return absl::CancelledError("ReadTensors reader went away");
    return absl::OkStatus();
  };
  const absl::Status read = store_->ReadTensors(
      request->run(), request->name(), names,
      [&](const TensorHeader& header, absl::string_view data) -> absl::Status {
        if (data.size() <= kWholeTensorBytes) return send(&header, data);
        for (size_t pos = 0; pos < data.size(); pos += kChunkBytes) {
          absl::Status sent = send(pos == 0 ? &header : nullptr, data.substr(pos, kChunkBytes));
          if (!sent.ok()) return sent;
        }
        return absl::OkStatus();
      });
  buffer.swap(*message.mutable_data());
  message_buffers_.Give(std::move(buffer));
  return ToGrpcStatus(read);
}

grpc::Status GrpcCheckpointStoreService::DeleteCheckpoint(grpc::ServerContext*,
                                                          const DeleteCheckpointRequest* request,
                                                          DeleteCheckpointResponse*) {
  return ToGrpcStatus(store_->DeleteCheckpoint(request->run(), request->name()));
}

}  // namespace overseer

#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "checkpoint_store/rpc/read_tensors_wire.h"
#include "core/io/rooted_file_system.h"
#include "core/rpc/grpc_status.h"
#include "core/rpc/security.h"
#include "grpcpp/support/method_handler.h"

namespace overseer {
namespace {

// ReadTensors messages carry at most this many tensor bytes (clients accept up to
// 64 MiB plus a header), so the client copies one message's bytes into place while
// the next ones arrive.
constexpr size_t kChunkBytes = 4 << 20;
// ReadTensors' reader thread stays at most this far ahead of the sender.
constexpr int64_t kMaxBytesInFlight = int64_t{128} << 20;
// The index of ReadTensors among CheckpointStoreService's methods (their order in
// proto/checkpoint_store.proto), whose handler the constructor replaces.
constexpr int kReadTensorsMethodIndex = 7;
// Received WriteShard messages waiting for the appender thread (4 MiB each).
constexpr size_t kMaxQueued = 4;

// Appends received WriteShard messages to a shard on its own thread. Push blocks while
// kMaxQueued messages wait. After the first failed append, Push returns false and the
// rest is dropped; Finish returns that error. Thread-safe (one pusher).
class ShardAppender {
 public:
  explicit ShardAppender(ShardWriter* writer) : writer_(writer), thread_([this] { Run(); }) {}
  ~ShardAppender() { Finish().IgnoreError(); }

  bool Push(std::unique_ptr<WriteShardRequest> request) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](ShardAppender* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(a->mu_) {
          return !a->status_.ok() || a->queue_.size() < kMaxQueued;
        },
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
            +[](ShardAppender* a)
                 ABSL_EXCLUSIVE_LOCKS_REQUIRED(a->mu_) { return a->done_ || !a->queue_.empty(); },
            this));
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

// Hands tensors read by the store (a TensorReceiver on the reader thread) to the
// sending thread. Each tensor lives in a pooled buffer whose last reference (the
// sender's or a slice's that gRPC still holds) gives it back to the pool. Allocate
// waits while more than kMaxBytesInFlight are read and not yet sent (a larger tensor
// waits until nothing is in flight). Thread-safe.
class TensorPipe : public TensorReceiver {
 public:
  struct Tensor {
    TensorHeader header;
    std::shared_ptr<const std::string> buffer;
  };

  explicit TensorPipe(std::shared_ptr<BufferPool> pool) : pool_(std::move(pool)) {}

  absl::StatusOr<char*> Allocate(const TensorHeader& header) override {
    const int64_t size = header.size();
    {
      absl::MutexLock lock(&mu_);
      wanted_ = size;
      mu_.Await(absl::Condition(
          +[](TensorPipe* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
            return p->cancelled_ || p->in_flight_ == 0 ||
                   p->in_flight_ + p->wanted_ <= kMaxBytesInFlight;
          },
          this));
      if (cancelled_) return absl::CancelledError("ReadTensors reader went away");
      in_flight_ += size;
    }
    std::string buffer = pool_->Take();
    if (buffer.size() < static_cast<size_t>(size)) {
      ReserveBuffer(&buffer, static_cast<size_t>(size));
      buffer.resize(static_cast<size_t>(size));
    }
    std::shared_ptr<BufferPool> pool = pool_;
    current_ =
        std::shared_ptr<std::string>(new std::string(std::move(buffer)), [pool](std::string* b) {
          pool->Give(std::move(*b));
          delete b;
        });
    return current_->data();
  }

  absl::Status Received(const TensorHeader& header) override {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("ReadTensors reader went away");
    ready_.push_back(Tensor{header, std::move(current_)});
    return absl::OkStatus();
  }

  // The next tensor to send, or nullopt once the reader closed the pipe and every
  // tensor was taken.
  std::optional<Tensor> Next() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](TensorPipe* p)
             ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) { return p->closed_ || !p->ready_.empty(); },
        this));
    if (ready_.empty()) return std::nullopt;
    Tensor t = std::move(ready_.front());
    ready_.pop_front();
    return t;
  }

  // The sender is done with `tensor` (gRPC may still hold slices of it).
  void Sent(const Tensor& tensor) {
    absl::MutexLock lock(&mu_);
    in_flight_ -= tensor.header.size();
  }

  // The reader is done (after an error too).
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    current_.reset();
  }

  // The sender gave up: Allocate and Received fail from now on.
  void Cancel() {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    ready_.clear();
  }

 private:
  const std::shared_ptr<BufferPool> pool_;
  std::shared_ptr<std::string> current_;  // Used by the reader thread only.
  absl::Mutex mu_;
  std::deque<Tensor> ready_ ABSL_GUARDED_BY(mu_);
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t wanted_ ABSL_GUARDED_BY(mu_) = 0;  // The size Allocate waits to add.
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// The service's methods: streams and commits move or sync a checkpoint's bytes.
std::shared_ptr<RpcMetrics> CheckpointStoreRpcMetrics() {
  const std::vector<double> step = RpcMetrics::StepBuckets();
  const std::vector<double> slow = RpcMetrics::SlowBuckets();
  return std::make_shared<RpcMetrics>("checkpoint_store",
                                      std::vector<RpcMethodOptions>{{"BeginCheckpoint", step},
                                                                    {"WriteShard", slow},
                                                                    {"CommitCheckpoint", slow},
                                                                    {"AbortCheckpoint", step},
                                                                    {"LatestCheckpoint", step},
                                                                    {"ListCheckpoints", step},
                                                                    {"ListTensors", step},
                                                                    {"ReadTensors", slow},
                                                                    {"DeleteCheckpoint", slow},
                                                                    {"OpenLocalRead", step},
                                                                    {"OpenLocalWrite", step},
                                                                    {"CloseLocalWrite", slow}});
}

// Runs a handler's `body` if the caller is a member of the cluster
// (core/rpc/security.h), and records its call of `method` (named `name`).
template <typename Body>
grpc::Status Timed(const grpc::ServerContext& context, RpcMetrics::Method* method,
                   absl::string_view name, const Body& body) {
  const absl::Time start = absl::Now();
  const absl::Status denied = Authorize(context, Permission::kMember, name);
  grpc::Status status = denied.ok() ? body() : ToGrpcStatus(denied);
  // gRPC's codes are absl's.
  method->Record(absl::Now() - start, static_cast<absl::StatusCode>(status.error_code()));
  return status;
}

}  // namespace

grpc::Status GrpcCheckpointStoreService::Reply(const absl::Status& status) const {
  return ToGrpcStatus(WithPathsRelativeTo(root_, status));
}

GrpcCheckpointStoreService::GrpcCheckpointStoreService(CheckpointStoreInterface* store,
                                                       LocalReadServer* local_reads,
                                                       std::string root)
    : store_(store),
      root_(std::move(root)),
      local_reads_(local_reads),
      rpc_metrics_(CheckpointStoreRpcMetrics()),
      begin_checkpoint_(rpc_metrics_->method("BeginCheckpoint")),
      write_shard_(rpc_metrics_->method("WriteShard")),
      commit_checkpoint_(rpc_metrics_->method("CommitCheckpoint")),
      abort_checkpoint_(rpc_metrics_->method("AbortCheckpoint")),
      latest_checkpoint_(rpc_metrics_->method("LatestCheckpoint")),
      list_checkpoints_(rpc_metrics_->method("ListCheckpoints")),
      list_tensors_(rpc_metrics_->method("ListTensors")),
      read_tensors_(rpc_metrics_->method("ReadTensors")),
      delete_checkpoint_(rpc_metrics_->method("DeleteCheckpoint")),
      open_local_read_(rpc_metrics_->method("OpenLocalRead")),
      open_local_write_(rpc_metrics_->method("OpenLocalWrite")),
      close_local_write_(rpc_metrics_->method("CloseLocalWrite")) {
  MarkMethodStreamed(
      kReadTensorsMethodIndex,
      new grpc::internal::SplitServerStreamingHandler<ReadTensorsRequest, grpc::ByteBuffer>(
          [this](grpc::ServerContext* context,
                 grpc::ServerSplitStreamer<ReadTensorsRequest, grpc::ByteBuffer>* stream) {
            return StreamTensors(context, stream);
          }));
}

grpc::Status GrpcCheckpointStoreService::BeginCheckpoint(grpc::ServerContext* context,
                                                         const BeginCheckpointRequest* request,
                                                         BeginCheckpointResponse* response) {
  return Timed(*context, begin_checkpoint_, "BeginCheckpoint", [&]() -> grpc::Status {
    absl::StatusOr<std::string> id = store_->BeginCheckpoint(*request);
    if (!id.ok()) return Reply(id.status());
    response->set_checkpoint_id(*id);
    return grpc::Status::OK;
  });
}

grpc::Status GrpcCheckpointStoreService::WriteShard(grpc::ServerContext* context,
                                                    grpc::ServerReader<WriteShardRequest>* reader,
                                                    WriteShardResponse* response) {
  return Timed(*context, write_shard_, "WriteShard", [&]() -> grpc::Status {
    auto first = std::make_unique<WriteShardRequest>();
    if (!reader->Read(first.get())) {
      return Reply(absl::InvalidArgumentError("WriteShard stream carried no message"));
    }
    absl::StatusOr<std::unique_ptr<ShardWriter>> writer =
        store_->OpenShard(first->checkpoint_id(), first->shard_id());
    if (!writer.ok()) return Reply(writer.status());
    // This thread receives while `appender` writes, so the network and the disk overlap.
    ShardAppender appender(writer->get());
    bool more = true;
    for (std::unique_ptr<WriteShardRequest> request = std::move(first); more;) {
      if (context->IsCancelled()) {
        appender.Finish().IgnoreError();
        return Reply(absl::CancelledError("WriteShard cancelled; the shard is dropped"));
      }
      if (!appender.Push(std::move(request))) break;  // The appender failed.
      request = appender.Recycled();
      more = reader->Read(request.get());
    }
    absl::Status appended = appender.Finish();
    if (!appended.ok()) return Reply(appended);
    absl::Status closed = (*writer)->Close();
    if (!closed.ok()) return Reply(closed);
    response->set_bytes_written(appender.bytes());
    response->set_num_tensors(appender.tensors());
    return grpc::Status::OK;
  });
}

grpc::Status GrpcCheckpointStoreService::CommitCheckpoint(grpc::ServerContext* context,
                                                          const CommitCheckpointRequest* request,
                                                          CommitCheckpointResponse* response) {
  return Timed(*context, commit_checkpoint_, "CommitCheckpoint", [&]() -> grpc::Status {
    absl::StatusOr<CheckpointInfo> info = store_->CommitCheckpoint(request->checkpoint_id());
    if (!info.ok()) return Reply(info.status());
    *response->mutable_checkpoint() = *std::move(info);
    return grpc::Status::OK;
  });
}

grpc::Status GrpcCheckpointStoreService::AbortCheckpoint(grpc::ServerContext* context,
                                                         const AbortCheckpointRequest* request,
                                                         AbortCheckpointResponse*) {
  return Timed(*context, abort_checkpoint_, "AbortCheckpoint", [&]() -> grpc::Status {
    return Reply(store_->AbortCheckpoint(request->checkpoint_id()));
  });
}

grpc::Status GrpcCheckpointStoreService::LatestCheckpoint(grpc::ServerContext* context,
                                                          const LatestCheckpointRequest* request,
                                                          LatestCheckpointResponse* response) {
  return Timed(*context, latest_checkpoint_, "LatestCheckpoint", [&]() -> grpc::Status {
    absl::StatusOr<std::optional<CheckpointInfo>> latest = store_->LatestCheckpoint(request->run());
    if (!latest.ok()) return Reply(latest.status());
    response->set_found(latest->has_value());
    if (latest->has_value()) *response->mutable_checkpoint() = **latest;
    return grpc::Status::OK;
  });
}

grpc::Status GrpcCheckpointStoreService::ListCheckpoints(grpc::ServerContext* context,
                                                         const ListCheckpointsRequest* request,
                                                         ListCheckpointsResponse* response) {
  return Timed(*context, list_checkpoints_, "ListCheckpoints", [&]() -> grpc::Status {
    absl::StatusOr<std::vector<CheckpointInfo>> all = store_->ListCheckpoints(request->run());
    if (!all.ok()) return Reply(all.status());
    for (CheckpointInfo& info : *all) *response->add_checkpoints() = std::move(info);
    return grpc::Status::OK;
  });
}

grpc::Status GrpcCheckpointStoreService::ListTensors(grpc::ServerContext* context,
                                                     const ListTensorsRequest* request,
                                                     ListTensorsResponse* response) {
  return Timed(*context, list_tensors_, "ListTensors", [&]() -> grpc::Status {
    absl::StatusOr<std::vector<TensorHeader>> all =
        store_->ListTensors(request->run(), request->name());
    if (!all.ok()) return Reply(all.status());
    for (TensorHeader& h : *all) *response->add_tensors() = std::move(h);
    return grpc::Status::OK;
  });
}

grpc::Status GrpcCheckpointStoreService::StreamTensors(
    grpc::ServerContext* context,
    grpc::ServerSplitStreamer<ReadTensorsRequest, grpc::ByteBuffer>* stream) {
  return Timed(*context, read_tensors_, "ReadTensors", [&]() -> grpc::Status {
    ReadTensorsRequest request;
    if (!stream->Read(&request)) {
      return Reply(absl::InvalidArgumentError("ReadTensors carried no request"));
    }
    std::vector<std::string> names(request.tensor_names().begin(), request.tensor_names().end());
    TensorPipe pipe(read_buffers_);
    // The store reads (and verifies) the next tensors on this thread while the handler's
    // thread sends the ones already read.
    absl::Status read;
    std::thread reader([&] {
      read = store_->ReadTensorsInto(request.run(), request.name(), names, &pipe);
      pipe.Close();
    });
    absl::Status sent;
    while (std::optional<TensorPipe::Tensor> tensor = pipe.Next()) {
      const absl::string_view bytes(tensor->buffer->data(),
                                    static_cast<size_t>(tensor->header.size()));
      size_t pos = 0;
      do {
        const absl::string_view chunk = bytes.substr(pos, kChunkBytes);
        if (context->IsCancelled() ||
            !stream->Write(EncodeReadTensorsMessage(pos == 0 ? &tensor->header : nullptr, chunk,
                                                    tensor->buffer))) {
          sent = absl::CancelledError("ReadTensors reader went away");
          break;
        }
        pos += chunk.size();
      } while (pos < bytes.size());
      pipe.Sent(*tensor);
      if (!sent.ok()) {
        pipe.Cancel();
        break;
      }
    }
    reader.join();
    return Reply(sent.ok() ? read : sent);
  });
}

grpc::Status GrpcCheckpointStoreService::DeleteCheckpoint(grpc::ServerContext* context,
                                                          const DeleteCheckpointRequest* request,
                                                          DeleteCheckpointResponse*) {
  return Timed(*context, delete_checkpoint_, "DeleteCheckpoint", [&]() -> grpc::Status {
    return Reply(store_->DeleteCheckpoint(request->run(), request->name()));
  });
}

template <typename Response, typename Call>
grpc::Status GrpcCheckpointStoreService::ServeLocal(const grpc::ServerContext& context,
                                                    RpcMetrics::Method* method,
                                                    absl::string_view name, const Call& call,
                                                    Response* response) {
  return Timed(context, method, name, [&]() -> grpc::Status {
    if (local_reads_ == nullptr) {
      return Reply(absl::UnimplementedError(
          "this checkpoint store serves no local reads or writes (--local_read_socket=)"));
    }
    absl::StatusOr<Response> answer = call();
    if (!answer.ok()) return Reply(answer.status());
    *response = *std::move(answer);
    return grpc::Status::OK;
  });
}

grpc::Status GrpcCheckpointStoreService::OpenLocalRead(grpc::ServerContext* context,
                                                       const OpenLocalReadRequest* request,
                                                       OpenLocalReadResponse* response) {
  return ServeLocal(
      *context, open_local_read_, "OpenLocalRead", [&] { return local_reads_->Open(*request); },
      response);
}

grpc::Status GrpcCheckpointStoreService::OpenLocalWrite(grpc::ServerContext* context,
                                                        const OpenLocalWriteRequest* request,
                                                        OpenLocalWriteResponse* response) {
  return ServeLocal(
      *context, open_local_write_, "OpenLocalWrite",
      [&] { return local_reads_->OpenWrite(*request); }, response);
}

grpc::Status GrpcCheckpointStoreService::CloseLocalWrite(grpc::ServerContext* context,
                                                         const CloseLocalWriteRequest* request,
                                                         CloseLocalWriteResponse* response) {
  return ServeLocal(
      *context, close_local_write_, "CloseLocalWrite",
      [&] { return local_reads_->CloseWrite(*request); }, response);
}

}  // namespace overseer

#include "checkpoint_store/rpc/grpc_checkpoint_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/location.h"
#include "core/rpc/client_context.h"
#include "core/rpc/grpc_status.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace overseer {
namespace {

constexpr size_t kChunkBytes = 4 << 20;
// ReadTensors messages carry a whole tensor of up to 64 MiB plus its header.
constexpr size_t kMaxMessageBytes = (64 << 20) + (1 << 20);
// Streams of tensor bytes may run long; unary calls use the default deadline.
constexpr absl::Duration kStreamTimeout = absl::Hours(1);

class GrpcShardWriter : public ShardWriter {
 public:
  GrpcShardWriter(CheckpointStoreService::Stub* stub, std::string id, int shard_id)
      : context_(NewClientContext(kStreamTimeout)),
        writer_(stub->WriteShard(context_.get(), &response_)) {
    first_.set_checkpoint_id(std::move(id));
    first_.set_shard_id(shard_id);
  }
  ~GrpcShardWriter() override {
    if (!closed_) context_->TryCancel();
  }
  absl::Status BeginTensor(const TensorHeader& header) override {
    WriteShardRequest request = Next();
    *request.mutable_tensor() = header;
    return Send(request);
  }
  absl::Status Append(absl::string_view data) override {
    while (!data.empty()) {
      const size_t n = std::min(kChunkBytes, data.size());
      // One reused message: its buffer keeps its capacity, so no chunk faults in fresh
      // pages.
      if (!sent_any_) chunk_ = first_;
      chunk_.mutable_data()->assign(data.data(), n);
      absl::Status s = Send(chunk_);
      chunk_.Clear();
      if (!s.ok()) return s;
      data.remove_prefix(n);
    }
    return absl::OkStatus();
  }
  absl::Status Close() override {
    closed_ = true;
    if (!sent_any_) {
      if (!writer_->Write(first_)) return Finish();
    }
    writer_->WritesDone();
    return Finish();
  }

 private:
  WriteShardRequest Next() {
    if (sent_any_) return WriteShardRequest();
    return first_;
  }
  absl::Status Send(const WriteShardRequest& request) {
    sent_any_ = true;
    if (!writer_->Write(request)) return Finish();
    return absl::OkStatus();
  }
  absl::Status Finish() {
    absl::Status s = FromGrpcStatus(writer_->Finish());
    if (s.ok() && !closed_) return absl::UnavailableError("WriteShard stream ended early");
    return s;
  }

  std::unique_ptr<grpc::ClientContext> context_;
  WriteShardResponse response_;
  std::unique_ptr<grpc::ClientWriter<WriteShardRequest>> writer_;
  WriteShardRequest first_;
  WriteShardRequest chunk_;
  bool sent_any_ = false;
  bool closed_ = false;
};

}  // namespace

GrpcCheckpointStore::GrpcCheckpointStore(std::shared_ptr<grpc::Channel> channel)
    : stub_(CheckpointStoreService::NewStub(std::move(channel))) {}

std::unique_ptr<GrpcCheckpointStore> GrpcCheckpointStore::Connect(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
  // A fixed 64 MiB stream window for ReadTensors (gRPC's BDP probing keeps it small,
  // capping a stream at tens of MB/s on loopback).
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 20);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  return std::make_unique<GrpcCheckpointStore>(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

absl::StatusOr<std::string> GrpcCheckpointStore::BeginCheckpoint(
    const BeginCheckpointRequest& request) {
  BeginCheckpointResponse response;
  absl::Status s = FromGrpcStatus(stub_->BeginCheckpoint(NewClientContext().get(), request, &response));
  if (!s.ok()) return s;
  return response.checkpoint_id();
}

absl::StatusOr<std::unique_ptr<ShardWriter>> GrpcCheckpointStore::OpenShard(
    const std::string& checkpoint_id, int shard_id) {
  return std::unique_ptr<ShardWriter>(new GrpcShardWriter(stub_.get(), checkpoint_id, shard_id));
}

absl::StatusOr<CheckpointInfo> GrpcCheckpointStore::CommitCheckpoint(
    const std::string& checkpoint_id) {
  CommitCheckpointRequest request;
  request.set_checkpoint_id(checkpoint_id);
  CommitCheckpointResponse response;
  absl::Status s = FromGrpcStatus(
      stub_->CommitCheckpoint(NewClientContext(kStreamTimeout).get(), request, &response));
  if (!s.ok()) return s;
  return response.checkpoint();
}

absl::Status GrpcCheckpointStore::AbortCheckpoint(const std::string& checkpoint_id) {
  AbortCheckpointRequest request;
  request.set_checkpoint_id(checkpoint_id);
  AbortCheckpointResponse response;
  return FromGrpcStatus(stub_->AbortCheckpoint(NewClientContext().get(), request, &response));
}

absl::StatusOr<std::optional<CheckpointInfo>> GrpcCheckpointStore::LatestCheckpoint(
    const std::string& run) {
  LatestCheckpointRequest request;
  request.set_run(run);
  LatestCheckpointResponse response;
  absl::Status s =
      FromGrpcStatus(stub_->LatestCheckpoint(NewClientContext().get(), request, &response));
  if (!s.ok()) return s;
  if (!response.found()) return std::optional<CheckpointInfo>();
  return std::optional<CheckpointInfo>(response.checkpoint());
}

absl::StatusOr<std::vector<CheckpointInfo>> GrpcCheckpointStore::ListCheckpoints(
    const std::string& run) {
  ListCheckpointsRequest request;
  request.set_run(run);
  ListCheckpointsResponse response;
  absl::Status s =
      FromGrpcStatus(stub_->ListCheckpoints(NewClientContext().get(), request, &response));
  if (!s.ok()) return s;
  return std::vector<CheckpointInfo>(response.checkpoints().begin(), response.checkpoints().end());
}

absl::StatusOr<std::vector<TensorHeader>> GrpcCheckpointStore::ListTensors(
    const std::string& run, const std::string& name) {
  ListTensorsRequest request;
  request.set_run(run);
  request.set_name(name);
  ListTensorsResponse response;
  absl::Status s = FromGrpcStatus(stub_->ListTensors(NewClientContext().get(), request, &response));
  if (!s.ok()) return s;
  return std::vector<TensorHeader>(response.tensors().begin(), response.tensors().end());
}

absl::Status GrpcCheckpointStore::ReadTensors(const std::string& run, const std::string& name,
                                              const std::vector<std::string>& tensor_names,
                                              const TensorConsumer& consumer) {
  ReadTensorsRequest request;
  request.set_run(run);
  request.set_name(name);
  for (const std::string& t : tensor_names) request.add_tensor_names(t);
  auto context = NewClientContext(kStreamTimeout);
  auto reader = stub_->ReadTensors(context.get(), request);
  // The received message and the tensor assembled from chunks live in pooled buffers
  // (a reused message's bytes field keeps its capacity), so no tensor faults in fresh
  // pages.
  ReadTensorsResponse chunk;
  // The message's first: it takes the largest buffer, as it holds whole tensors.
  std::string message_buffer = buffers_.Take();
  // Room for a whole-tensor message up front: protobuf would grow the field piecemeal.
  ReserveBuffer(&message_buffer, kMaxMessageBytes);
  chunk.mutable_data()->swap(message_buffer);
  std::string data = buffers_.Take();
  data.clear();
  TensorHeader header;
  bool have = false;
  absl::Status consumed;
  while (consumed.ok() && reader->Read(&chunk)) {
    if (chunk.has_tensor() && have) {
      consumed = absl::DataLossError(
          absl::StrCat("tensor ", header.name(), " of ", name, " arrived incomplete"));
      break;
    }
    if (chunk.has_tensor() && static_cast<int64_t>(chunk.data().size()) == chunk.tensor().size()) {
      consumed = consumer(chunk.tensor(), chunk.data());  // A whole tensor in one message.
      continue;
    }
    if (chunk.has_tensor()) {
      header = chunk.tensor();
      data.clear();
      ReserveBuffer(&data, static_cast<size_t>(std::max<int64_t>(header.size(), 0)));
      have = true;
    }
    if (!have || static_cast<int64_t>(data.size() + chunk.data().size()) > header.size()) {
      consumed = absl::DataLossError(absl::StrCat(
          "ReadTensors of ", name, " sent bytes beyond ",
          have ? absl::StrCat("the size of tensor ", header.name()) : "any tensor"));
      break;
    }
    data.append(chunk.data());
    if (static_cast<int64_t>(data.size()) == header.size()) {
      consumed = consumer(header, data);
      have = false;
    }
  }
  message_buffer.swap(*chunk.mutable_data());
  buffers_.Give(std::move(message_buffer));
  buffers_.Give(std::move(data));
  if (!consumed.ok()) {
    context->TryCancel();
    reader->Finish().ok();
    return consumed;
  }
  absl::Status s = FromGrpcStatus(reader->Finish());
  if (s.ok() && have) {
    return absl::DataLossError(
        absl::StrCat("tensor ", header.name(), " of ", name, " arrived incomplete"));
  }
  return s;
}

absl::Status GrpcCheckpointStore::DeleteCheckpoint(const std::string& run,
                                                   const std::string& name) {
  DeleteCheckpointRequest request;
  request.set_run(run);
  request.set_name(name);
  DeleteCheckpointResponse response;
  return FromGrpcStatus(stub_->DeleteCheckpoint(NewClientContext().get(), request, &response));
}

namespace {
const bool kRegistered = [] {
  RegisterCheckpointStoreScheme(
      "grpc", [](const std::string& authority)
                  -> absl::StatusOr<std::unique_ptr<CheckpointStoreInterface>> {
        return std::unique_ptr<CheckpointStoreInterface>(GrpcCheckpointStore::Connect(authority));
      });
  return true;
}();
}  // namespace

}  // namespace overseer

#include "checkpoint_store/rpc/grpc_checkpoint_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/location.h"
#include "checkpoint_store/rpc/read_tensors_wire.h"
#include "core/rpc/client_context.h"
#include "core/rpc/grpc_status.h"
#include "core/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/sync_stream.h"

namespace overseer {
namespace {

constexpr size_t kChunkBytes = 4 << 20;
// ReadTensors messages carry at most 64 MiB of tensor bytes plus a header (servers
// before the raw encoding sent tensors up to 64 MiB whole).
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
    : channel_(std::move(channel)),
      stub_(CheckpointStoreService::NewStub(channel_)),
      read_tensors_method_name_(
          absl::StrCat("/", CheckpointStoreService::service_full_name(), "/ReadTensors")),
      read_tensors_method_(read_tensors_method_name_.c_str(),
                           grpc::internal::RpcMethod::SERVER_STREAMING, channel_) {}

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

absl::Status GrpcCheckpointStore::ReadTensorsInto(const std::string& run,
                                                  const std::string& name,
                                                  const std::vector<std::string>& tensor_names,
                                                  TensorReceiver* receiver) {
  ReadTensorsRequest request;
  request.set_run(run);
  request.set_name(name);
  for (const std::string& t : tensor_names) request.add_tensor_names(t);
  auto context = NewClientContext(kStreamTimeout);
  // Messages arrive as raw bytes (gRPC's receive slices, no protobuf parse); the
  // decoder copies their tensor bytes straight into the receiver's memory.
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
          channel_.get(), read_tensors_method_, context.get(), request));
  ReadTensorsDecoder decoder(name, receiver);
  grpc::ByteBuffer message;
  absl::Status decoded;
  while (reader->Read(&message)) {
    decoded = decoder.Add(message);
    if (!decoded.ok()) break;
  }
  if (!decoded.ok()) {
    context->TryCancel();
    reader->Finish().ok();
    return decoded;
  }
  RETURN_IF_ERROR(FromGrpcStatus(reader->Finish()));
  return decoder.Finish();
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

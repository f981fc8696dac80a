#include "checkpoint_store/rpc/grpc_checkpoint_store.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/local_read.h"
#include "checkpoint_store/local_write.h"
#include "checkpoint_store/location.h"
#include "checkpoint_store/rpc/read_tensors_wire.h"
#include "core/clock.h"
#include "core/env.h"
#include "core/logging.h"
#include "core/rpc/channel.h"
#include "core/rpc/client_context.h"
#include "core/rpc/grpc_status.h"
#include "core/rpc/grpc_target.h"
#include "core/status_macros.h"
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

// How long the client waits for the store's local read socket to answer.
constexpr absl::Duration kRedeemTimeout = absl::Seconds(10);
// How long reads stream without trying the local path after the store's socket could
// not be connected (the store is on another host or in another container).
constexpr absl::Duration kUnreachableBackoff = absl::Minutes(5);

// Logged once per process each: the first read served locally, the first fallback.
std::atomic<bool> logged_local{false};
std::atomic<bool> logged_fallback{false};
// And the first shard written locally, the first write fallback.
std::atomic<bool> logged_local_write{false};
std::atomic<bool> logged_write_fallback{false};

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

// A shard written through a descriptor of its data file (local_write.h), closed with
// CloseLocalWrite. Destroyed without Close it leaves the shard to be taken over.
class GrpcLocalShardWriter : public ShardWriter {
 public:
  GrpcLocalShardWriter(CheckpointStoreService::Stub* stub, const std::string& id, int shard_id,
                       std::string token, UniqueFd fd, std::string file)
      : stub_(stub), writer_(std::move(fd), std::move(file)) {
    request_.set_checkpoint_id(id);
    request_.set_shard_id(shard_id);
    request_.set_token(std::move(token));
  }
  absl::Status BeginTensor(const TensorHeader& header) override {
    return writer_.BeginTensor(header);
  }
  absl::Status Append(absl::string_view data) override { return writer_.Append(data); }
  absl::Status Close() override {
    RETURN_IF_ERROR(writer_.Finish());
    for (const LocalWrittenTensor& t : writer_.tensors()) *request_.add_tensors() = t;
    request_.set_file_bytes(writer_.bytes());
    CloseLocalWriteResponse response;
    // The store fsyncs the file: as long as a streamed shard's close may take.
    return FromGrpcStatus(
        stub_->CloseLocalWrite(NewClientContext(kStreamTimeout).get(), request_, &response));
  }

 private:
  CheckpointStoreService::Stub* const stub_;
  LocalDataFileWriter writer_;
  CloseLocalWriteRequest request_;
};

}  // namespace

GrpcCheckpointStore::GrpcCheckpointStore(std::shared_ptr<grpc::Channel> channel, bool local_reads,
                                         Clock* clock)
    : local_reads_enabled_(local_reads),
      local_writes_enabled_(local_reads && !EnvSwitchedOff("OVERSEER_CHECKPOINT_LOCAL_WRITES")),
      clock_(clock),
      channel_(std::move(channel)),
      stub_(CheckpointStoreService::NewStub(channel_)),
      read_tensors_method_name_(
          absl::StrCat("/", CheckpointStoreService::service_full_name(), "/ReadTensors")),
      read_tensors_method_(read_tensors_method_name_.c_str(),
                           grpc::internal::RpcMethod::SERVER_STREAMING, channel_) {}

bool GrpcCheckpointStore::LocalReadsFromEnvironment() {
  return !EnvSwitchedOff("OVERSEER_CHECKPOINT_LOCAL_READS");
}

std::unique_ptr<GrpcCheckpointStore> GrpcCheckpointStore::Connect(const std::string& address,
                                                                  bool local_reads, Clock* clock) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
  // A fixed 64 MiB stream window for ReadTensors (gRPC's BDP probing keeps it small,
  // capping a stream at tens of MB/s on loopback).
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 20);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  return std::make_unique<GrpcCheckpointStore>(NewChannel(address, args), local_reads,
                                               clock != nullptr ? clock : Clock::Real());
}

absl::StatusOr<std::string> GrpcCheckpointStore::BeginCheckpoint(
    const BeginCheckpointRequest& request) {
  BeginCheckpointResponse response;
  absl::Status s =
      FromGrpcStatus(stub_->BeginCheckpoint(NewClientContext().get(), request, &response));
  if (!s.ok()) return s;
  return response.checkpoint_id();
}

absl::StatusOr<std::unique_ptr<ShardWriter>> GrpcCheckpointStore::OpenShard(
    const std::string& checkpoint_id, int shard_id) {
  if (local_writes_enabled_) {
    bool fall_back = false;
    absl::StatusOr<std::unique_ptr<ShardWriter>> local =
        OpenLocalShard(checkpoint_id, shard_id, &fall_back);
    if (local.ok()) {
      ++local_writes_;
      return local;
    }
    if (!fall_back) return local.status();
    if (!logged_write_fallback.exchange(true)) {
      LOG(INFO) << "shard " << shard_id << " of checkpoint " << checkpoint_id
                << " streams to the store instead of being written to its file locally "
                << "(later fallbacks are not logged): " << local.status();
    }
  }
  ++streamed_writes_;
  return std::unique_ptr<ShardWriter>(new GrpcShardWriter(stub_.get(), checkpoint_id, shard_id));
}

absl::StatusOr<std::unique_ptr<ShardWriter>> GrpcCheckpointStore::OpenLocalShard(
    const std::string& checkpoint_id, int shard_id, bool* fall_back) {
  *fall_back = true;
  RETURN_IF_ERROR(CheckSocketReachable());
  OpenLocalWriteRequest request;
  request.set_checkpoint_id(checkpoint_id);
  request.set_shard_id(shard_id);
  OpenLocalWriteResponse grant;
  const absl::Status opened =
      FromGrpcStatus(stub_->OpenLocalWrite(NewClientContext().get(), request, &grant));
  if (!opened.ok()) {
    // What a stream would report too (an unknown checkpoint, a bad or busy shard).
    if (absl::IsNotFound(opened) || absl::IsInvalidArgument(opened) ||
        absl::IsFailedPrecondition(opened)) {
      *fall_back = false;
    }
    return opened;
  }
  // Refused from here on, the store lets the stream take the shard over.
  ASSIGN_OR_RETURN(std::vector<UniqueFd> files, Redeem(grant.socket(), grant.token()));
  if (files.size() != 1) {
    return absl::DataLossError(absl::StrCat("the store handed out ", files.size(),
                                            " descriptors for a local write; expected 1"));
  }
  if (!logged_local_write.exchange(true)) {
    LOG(INFO) << "checkpoint shards are written to their data files directly: the store is "
              << "on this host and handed them over at " << grant.socket()
              << " (local writes; later ones are not logged)";
  }
  return std::unique_ptr<ShardWriter>(new GrpcLocalShardWriter(
      stub_.get(), checkpoint_id, shard_id, grant.token(), std::move(files[0]), grant.file()));
}

absl::Status GrpcCheckpointStore::CheckSocketReachable() {
  absl::MutexLock lock(&mu_);
  if (clock_->Now() < socket_unreachable_until_) {
    return absl::UnavailableError(
        "the store's local socket was out of reach a moment ago (another host?)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<UniqueFd>> GrpcCheckpointStore::Redeem(const std::string& socket,
                                                                  const std::string& token) {
  absl::StatusOr<std::vector<UniqueFd>> files = RedeemLocalReadToken(socket, token, kRedeemTimeout);
  if (!files.ok() && absl::IsUnavailable(files.status())) {
    absl::MutexLock lock(&mu_);
    socket_unreachable_until_ = clock_->Now() + kUnreachableBackoff;
  }
  return files;
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

absl::Status GrpcCheckpointStore::ReadTensorsInto(const std::string& run, const std::string& name,
                                                  const std::vector<std::string>& tensor_names,
                                                  TensorReceiver* receiver) {
  if (local_reads_enabled_) {
    bool fall_back = false;
    const absl::Status local = ReadLocally(run, name, tensor_names, receiver, &fall_back);
    if (local.ok()) {
      ++local_reads_;
      return local;
    }
    if (!fall_back) return local;
    if (!logged_fallback.exchange(true)) {
      LOG(INFO) << "checkpoint " << name << " streams from the store instead of being read "
                << "from its files locally (later fallbacks are not logged): " << local;
    }
  }
  ++streamed_reads_;
  return ReadStreamed(run, name, tensor_names, receiver);
}

absl::Status GrpcCheckpointStore::ReadLocally(const std::string& run, const std::string& name,
                                              const std::vector<std::string>& tensor_names,
                                              TensorReceiver* receiver, bool* fall_back) {
  *fall_back = true;
  RETURN_IF_ERROR(CheckSocketReachable());
  OpenLocalReadRequest request;
  request.set_run(run);
  request.set_name(name);
  for (const std::string& t : tensor_names) request.add_tensor_names(t);
  OpenLocalReadResponse grant;
  const absl::Status opened =
      FromGrpcStatus(stub_->OpenLocalRead(NewClientContext().get(), request, &grant));
  if (!opened.ok()) {
    // What a stream would report too (bad names, a missing or damaged checkpoint).
    if (absl::IsNotFound(opened) || absl::IsInvalidArgument(opened) || absl::IsDataLoss(opened) ||
        absl::IsFailedPrecondition(opened)) {
      *fall_back = false;
    }
    return opened;
  }
  absl::StatusOr<std::vector<UniqueFd>> files = Redeem(grant.socket(), grant.token());
  if (!files.ok()) return files.status();
  if (!logged_local.exchange(true)) {
    LOG(INFO) << "checkpoint " << name << " is read from its data files directly: the store "
              << "is on this host and handed them over at " << grant.socket()
              << " (local reads; later ones are not logged)";
  }
  bool allocated = false;
  const absl::Status read = ReadTensorsLocally(name, grant, *files, receiver, &allocated);
  if (allocated) *fall_back = false;
  return read;
}

absl::Status GrpcCheckpointStore::ReadStreamed(const std::string& run, const std::string& name,
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
      "grpc",
      [](const std::string& store) -> absl::StatusOr<std::unique_ptr<CheckpointStoreInterface>> {
        ASSIGN_OR_RETURN(std::string address, ParseGrpcAddress(store));
        return std::unique_ptr<CheckpointStoreInterface>(GrpcCheckpointStore::Connect(address));
      });
  return true;
}();
}  // namespace

}  // namespace overseer

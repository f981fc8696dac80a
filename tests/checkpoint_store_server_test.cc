// The real checkpoint_store_server binary in its own process: started on port 0, used
// through GrpcCheckpointStore and a generated gRPC client, checked for health, metrics and bad run
// names, stopped with SIGTERM (exit 0, pending saves aborted, no temp files), and
// killed with SIGKILL in the middle of a 256 MiB save: after a restart on the same
// --root the previous checkpoint is still latest and intact, and saving works again.
// Reads from this host take the local path (descriptors over a Unix socket), unless the
// server is started with --local_read_socket=.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkpoint_store/bundle.h"
#include "checkpoint_store/local_read.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store.h"
#include "checkpoint_store/testing/tensor_headers.h"
#include "core/io/crc32c.h"
#include "core/rpc/client_context.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "core/rpc/testing/http_get.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/checkpoint_store.grpc.pb.h"
#include "testing/server_process.h"

namespace overseer {
namespace {

constexpr char kServer[] = "checkpoint_store/checkpoint_store_server";

std::string TmpDir(const std::string& name) {
  return absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
}

// Files under `root` that only an unfinished save leaves: temp data/index files and
// temp state files.
std::vector<std::string> TempLeftovers(const std::string& root) {
  std::vector<std::string> found;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(root, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (absl::StrContains(name, ".tempstate") || absl::StartsWith(name, "checkpoint.tmp")) {
      found.push_back(it->path().string());
    }
  }
  return found;
}

// Deterministic float bytes, different for every tensor.
std::string FloatBytes(int seed, int64_t floats) {
  std::string bytes(static_cast<size_t>(floats * 4), '\0');
  float* f = reinterpret_cast<float*>(bytes.data());
  for (int64_t i = 0; i < floats; ++i) f[i] = static_cast<float>(seed * 1000 + i % 997) * 0.5f;
  return bytes;
}

using test::FloatHeader;

using Tensors = std::map<std::string, std::string>;

// Saves `tensors` as checkpoint `name` of `run`, tensor k into shard k % num_shards.
absl::Status Save(CheckpointStoreInterface* store, const std::string& run, const std::string& name,
                  const Tensors& tensors, int num_shards) {
  BeginCheckpointRequest begin;
  begin.set_run(run);
  begin.set_name(name);
  begin.set_num_shards(num_shards);
  auto id = store->BeginCheckpoint(begin);
  if (!id.ok()) return id.status();
  for (int shard = 0; shard < num_shards; ++shard) {
    auto writer = store->OpenShard(*id, shard);
    if (!writer.ok()) return writer.status();
    int k = 0;
    for (const auto& [tensor, bytes] : tensors) {
      if (k++ % num_shards != shard) continue;
      absl::Status added =
          (*writer)->AddTensor(FloatHeader(tensor, static_cast<int64_t>(bytes.size() / 4)), bytes);
      if (!added.ok()) return added;
    }
    absl::Status closed = (*writer)->Close();
    if (!closed.ok()) return closed;
  }
  return store->CommitCheckpoint(*id).status();
}

absl::StatusOr<Tensors> ReadAll(CheckpointStoreInterface* store, const std::string& run,
                                const std::string& name) {
  Tensors tensors;
  absl::Status read =
      store->ReadTensors(run, name, {}, [&](const TensorHeader& header, absl::string_view data) {
        tensors[header.name()] = std::string(data);
        return absl::OkStatus();
      });
  if (!read.ok()) return read;
  return tensors;
}

TEST(CheckpointStoreServerTest, HealthMetricsBadRunsAndSigterm) {
  const std::string root = TmpDir("store_sigterm");
  test::ServerProcess server(kServer, {"--root=" + root});
  ASSERT_GT(server.port(), 0) << server.log();
  ASSERT_GT(server.metrics_port(), 0) << server.log();
  // The start-up line follows the port file.
  EXPECT_TRUE(server.WaitForLog("checkpoint_store version ")) << server.log();
  auto channel = grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials());

  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckResponse health_response;
  auto health_context = NewClientContext(absl::Seconds(10));
  ASSERT_TRUE(health->Check(health_context.get(), {}, &health_response).ok());
  EXPECT_EQ(health_response.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  auto store = GrpcCheckpointStore::Connect(server.target());
  const Tensors tensors = {{"bias", FloatBytes(1, 10)}, {"weights", FloatBytes(2, 300000)}};
  ASSERT_TRUE(Save(store.get(), "exp/train", "model.ckpt-5", tensors, 1).ok());
  auto latest = store->LatestCheckpoint("exp/train");
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->name(), "model.ckpt-5");
  EXPECT_EQ((*latest)->step(), 5);
  auto read = ReadAll(store.get(), "exp/train", "model.ckpt-5");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, tensors);

  // Bad run names are INVALID_ARGUMENT and write nothing, inside or outside --root.
  auto service = CheckpointStoreService::NewStub(channel);
  for (const std::string run : {"../escape", "/abs", "a/../../escape", "a//b", "x y"}) {
    BeginCheckpointRequest request;
    request.set_run(run);
    request.set_name("model.ckpt-1");
    request.set_num_shards(1);
    BeginCheckpointResponse response;
    auto context = NewClientContext();
    EXPECT_EQ(service->BeginCheckpoint(context.get(), request, &response).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << run;
    LatestCheckpointRequest latest_request;
    latest_request.set_run(run);
    LatestCheckpointResponse latest_response;
    auto latest_context = NewClientContext();
    EXPECT_EQ(service->LatestCheckpoint(latest_context.get(), latest_request, &latest_response)
                  .error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << run;
  }
  EXPECT_FALSE(std::filesystem::exists(TmpDir("escape")));
  EXPECT_FALSE(std::filesystem::exists(root + "/escape"));
  EXPECT_FALSE(std::filesystem::exists(root + "/a"));

  // Errors name paths within the root, never the server's directories.
  {
    auto missing = ReadAll(store.get(), "exp/train", "model.ckpt-99");
    EXPECT_FALSE(missing.ok());
    EXPECT_FALSE(absl::StrContains(missing.status().message(), root)) << missing.status();
    EXPECT_TRUE(absl::StrContains(missing.status().message(), "exp/train/model.ckpt-99"))
        << missing.status();
  }

  // A request past the store's receive limit (64 MiB by default) is refused before it
  // is read whole; the server keeps serving.
  {
    BeginCheckpointRequest request;
    request.set_run("exp/train");
    request.set_name(std::string(65 << 20, 'n'));
    request.set_num_shards(1);
    BeginCheckpointResponse response;
    auto context = NewClientContext();
    EXPECT_EQ(service->BeginCheckpoint(context.get(), request, &response).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
    auto latest_again = store->LatestCheckpoint("exp/train");
    ASSERT_TRUE(latest_again.ok()) << latest_again.status();
  }

  // Metrics name what happened.
  auto metrics = test::HttpGet(server.metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(
      absl::StrContains(*metrics, "overseer_checkpoint_store_checkpoints_committed_total 1"))
      << *metrics;
  // The data file's bytes: the tensors, and zeros that align "weights" (1.2 MB) to 4 KiB.
  const auto data_bytes =
      std::filesystem::file_size(root + "/exp/train/model.ckpt-5.data-00000-of-00001");
  EXPECT_EQ(data_bytes, 4096 + tensors.at("weights").size());
  EXPECT_TRUE(absl::StrContains(
      *metrics, absl::StrCat("overseer_checkpoint_store_bytes_written_total ", data_bytes)))
      << *metrics;
  EXPECT_TRUE(
      absl::StrContains(*metrics, "overseer_checkpoint_store_save_duration_seconds_count 1"))
      << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics, "overseer_checkpoint_store_restore_duration_seconds"))
      << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics, "overseer_checkpoint_store_crc_failures_total 0"))
      << *metrics;
  // The run's newest checkpoint, and every call by method and code (the bad runs: 5
  // refused BeginCheckpoint calls).
  EXPECT_TRUE(absl::StrContains(
      *metrics, "overseer_checkpoint_store_latest_checkpoint_step{run=\"exp/train\"} 5\n"))
      << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics,
                                "overseer_checkpoint_store_latest_checkpoint_timestamp_seconds{"
                                "run=\"exp/train\"} "));
  for (const char* line :
       {"overseer_checkpoint_store_rpc_errors_total{code=\"INVALID_ARGUMENT\","
        "method=\"BeginCheckpoint\"} 5\n",
        "overseer_checkpoint_store_rpc_errors_total{code=\"INVALID_ARGUMENT\","
        "method=\"CommitCheckpoint\"} 0\n",
        "overseer_checkpoint_store_rpc_latency_seconds_count{method=\"CommitCheckpoint\"} 1\n"}) {
    EXPECT_TRUE(absl::StrContains(*metrics, line)) << line << *metrics;
  }

  // A save whose shard is durable but not committed when SIGTERM arrives is aborted:
  // exit 0, no temp files, and model.ckpt-5 is still the only checkpoint.
  BeginCheckpointRequest begin;
  begin.set_run("exp/train");
  begin.set_name("model.ckpt-6");
  begin.set_num_shards(1);
  auto id = store->BeginCheckpoint(begin);
  ASSERT_TRUE(id.ok()) << id.status();
  {
    auto writer = store->OpenShard(*id, 0);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->AddTensor(FloatHeader("bias", 10), tensors.at("bias")).ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  EXPECT_FALSE(TempLeftovers(root).empty());
  EXPECT_EQ(server.Terminate(), 0) << server.log();
  EXPECT_TRUE(absl::StrContains(server.log(), "aborting unfinished checkpoint model.ckpt-6"))
      << server.log();
  EXPECT_TRUE(TempLeftovers(root).empty());
  EXPECT_FALSE(std::filesystem::exists(root + "/exp/train/model.ckpt-6.index"));
  EXPECT_TRUE(std::filesystem::exists(root + "/exp/train/model.ckpt-5.index"));
}

TEST(CheckpointStoreServerTest, KillDashNineDuringALargeSaveKeepsThePreviousCheckpoint) {
  const std::string root = TmpDir("store_kill");
  const std::string run = "exp/train";
  const Tensors saved = {{"layer0/bias", FloatBytes(3, 17)},
                         {"layer0/weights", FloatBytes(4, (1 << 18) + 3)},
                         {"layer1/weights", FloatBytes(5, 1 << 20)}};
  {
    test::ServerProcess server(kServer, {"--root=" + root});
    ASSERT_GT(server.port(), 0) << server.log();
    auto store = GrpcCheckpointStore::Connect(server.target());
    ASSERT_TRUE(Save(store.get(), run, "model.ckpt-1", saved, 2).ok());

    // A 256 MiB save (4 tensors of 64 MiB) streamed in 1 MiB pieces; the server is
    // killed from the streaming loop once 96 MiB went out (gRPC flow control bounds
    // what is still in flight, so the server has written most of it to temp files).
    constexpr int64_t kPiece = 1 << 20;
    constexpr int64_t kTensorFloats = 16 << 20;
    constexpr int kPiecesBeforeKill = 96;
    BeginCheckpointRequest begin;
    begin.set_run(run);
    begin.set_name("model.ckpt-2");
    begin.set_num_shards(2);
    auto id = store->BeginCheckpoint(begin);
    ASSERT_TRUE(id.ok()) << id.status();
    auto writer = store->OpenShard(*id, 0);
    ASSERT_TRUE(writer.ok());
    const std::string piece = FloatBytes(9, kPiece / 4);
    int pieces = 0;
    absl::Status streamed;
    for (int t = 0; t < 4 && streamed.ok() && pieces < kPiecesBeforeKill; ++t) {
      streamed = (*writer)->BeginTensor(FloatHeader(absl::StrCat("big", t), kTensorFloats));
      for (int64_t sent = 0; streamed.ok() && sent < kTensorFloats * 4; sent += kPiece) {
        if (pieces == kPiecesBeforeKill) break;
        streamed = (*writer)->Append(piece);
        ++pieces;
      }
    }
    ASSERT_TRUE(streamed.ok()) << streamed;
    ASSERT_EQ(pieces, kPiecesBeforeKill);
    EXPECT_FALSE(TempLeftovers(root).empty()) << "the save had not reached the server";
    server.Kill();
    // The stream fails once the server is gone; nothing is committed.
    absl::Status after = absl::OkStatus();
    for (int i = 0; i < 64 && after.ok(); ++i) after = (*writer)->Append(piece);
    EXPECT_FALSE(after.ok());
    writer->reset();
    // What the crash left: temp files, no index of the torn checkpoint.
    EXPECT_FALSE(TempLeftovers(root).empty());
    EXPECT_FALSE(std::filesystem::exists(root + "/exp/train/model.ckpt-2.index"));
  }

  test::ServerProcess restarted(kServer, {"--root=" + root});
  ASSERT_GT(restarted.port(), 0) << restarted.log();
  EXPECT_TRUE(TempLeftovers(root).empty());
  for (const auto& entry : std::filesystem::directory_iterator(root + "/exp/train")) {
    EXPECT_FALSE(absl::StartsWith(entry.path().filename().string(), "model.ckpt-2"))
        << entry.path();
  }
  auto store = GrpcCheckpointStore::Connect(restarted.target());
  auto latest = store->LatestCheckpoint(run);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->name(), "model.ckpt-1");
  auto listed = store->ListCheckpoints(run);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  auto read = ReadAll(store.get(), run, "model.ckpt-1");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, saved);

  // Independently of the server: the bundle on disk, each entry's CRC32C recomputed.
  auto bundle = BundleReader::Open(FileSystem::Posix(), root + "/exp/train/model.ckpt-1");
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_EQ(bundle->get()->header().num_shards(), 2);
  ASSERT_EQ(bundle->get()->entries().size(), saved.size());
  for (const auto& [name, bytes] : saved) {
    auto entry = bundle->get()->Lookup(name);
    ASSERT_TRUE(entry.ok()) << entry.status();
    EXPECT_EQ((*entry)->crc32c(), crc32c::Mask(crc32c::Value(bytes))) << name;
    auto data = bundle->get()->ReadTensor(name);
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_EQ(*data, bytes) << name;
  }

  // Saving works again, into the same run.
  const Tensors next = {{"layer0/bias", FloatBytes(6, 17)},
                        {"layer2/weights", FloatBytes(7, 5000)}};
  ASSERT_TRUE(Save(store.get(), run, "model.ckpt-3", next, 2).ok());
  latest = store->LatestCheckpoint(run);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->name(), "model.ckpt-3");
  read = ReadAll(store.get(), run, "model.ckpt-3");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, next);
  EXPECT_EQ(restarted.Terminate(), 0) << restarted.log();
  EXPECT_TRUE(TempLeftovers(root).empty());
}

// The client on the store's host reads locally: the store's metrics count the read and
// its bytes, and the values are bit-identical to a stream from a store that serves no
// local reads (--local_read_socket=) over the same root. Tokens taken with the
// generated client are single-use, a bogus one is refused and the server goes on serving; a
// checkpoint deleted after OpenLocalRead is still read through the descriptors.
TEST(CheckpointStoreServerTest, LocalReadsOnTheSameHost) {
  const std::string root = TmpDir("store_local");
  test::ServerProcess server(kServer, {"--root=" + root});
  ASSERT_GT(server.port(), 0) << server.log();
  auto store = GrpcCheckpointStore::Connect(server.target());
  const Tensors tensors = {
      {"a", FloatBytes(1, 700000)}, {"b", FloatBytes(2, 3)}, {"c", FloatBytes(3, 250000)}};
  ASSERT_TRUE(Save(store.get(), "exp", "model.ckpt-1", tensors, 2).ok());
  auto read = ReadAll(store.get(), "exp", "model.ckpt-1");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, tensors);
  EXPECT_EQ(store->local_reads(), 1);
  EXPECT_EQ(store->streamed_reads(), 0);
  int64_t bytes = 0;
  for (const auto& [name, t] : tensors) bytes += static_cast<int64_t>(t.size());
  auto metrics = test::HttpGet(server.metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(absl::StrContains(*metrics, "overseer_checkpoint_store_local_reads_total 1"))
      << *metrics;
  EXPECT_TRUE(absl::StrContains(
      *metrics, absl::StrCat("overseer_checkpoint_store_local_read_bytes_total ", bytes)))
      << *metrics;

  test::ServerProcess streaming(kServer, {"--root=" + root, "--local_read_socket="});
  ASSERT_GT(streaming.port(), 0) << streaming.log();
  auto streamed_store = GrpcCheckpointStore::Connect(streaming.target());
  auto streamed = ReadAll(streamed_store.get(), "exp", "model.ckpt-1");
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(*streamed, *read);
  EXPECT_EQ(streamed_store->streamed_reads(), 1);
  EXPECT_EQ(streamed_store->local_reads(), 0);

  auto service = CheckpointStoreService::NewStub(
      grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials()));
  OpenLocalReadRequest request;
  request.set_run("exp");
  request.set_name("model.ckpt-1");
  OpenLocalReadResponse grant;
  ASSERT_TRUE(service->OpenLocalRead(NewClientContext().get(), request, &grant).ok());
  ASSERT_EQ(grant.files_size(), 2);
  ASSERT_TRUE(store->DeleteCheckpoint("exp", "model.ckpt-1").ok());
  EXPECT_FALSE(std::filesystem::exists(grant.files(0)));
  auto files = RedeemLocalReadToken(grant.socket(), grant.token(), absl::Seconds(10));
  ASSERT_TRUE(files.ok()) << files.status();
  class Collect : public TensorReceiver {
   public:
    absl::StatusOr<char*> Allocate(const TensorHeader& header) override {
      std::string& t = got[header.name()];
      t.resize(static_cast<size_t>(header.size()));
      return t.data();
    }
    absl::Status Received(const TensorHeader&) override { return absl::OkStatus(); }
    Tensors got;
  } deleted;
  bool allocated;
  ASSERT_TRUE(ReadTensorsLocally("model.ckpt-1", grant, *files, &deleted, &allocated).ok());
  EXPECT_EQ(deleted.got, tensors);
  EXPECT_EQ(RedeemLocalReadToken(grant.socket(), grant.token(), absl::Seconds(10)).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(
      RedeemLocalReadToken(grant.socket(), "0123456789abcdef0123456789abcdef", absl::Seconds(10))
          .status()
          .code(),
      absl::StatusCode::kPermissionDenied);

  ASSERT_TRUE(Save(store.get(), "exp", "model.ckpt-2", tensors, 1).ok());
  read = ReadAll(store.get(), "exp", "model.ckpt-2");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, tensors);
  EXPECT_EQ(store->local_reads(), 2);
  metrics = test::HttpGet(server.metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(absl::StrContains(*metrics, "overseer_checkpoint_store_local_reads_total 3"))
      << *metrics;
  EXPECT_TRUE(
      absl::StrContains(*metrics, "overseer_checkpoint_store_local_read_tokens_refused_total 2"))
      << *metrics;
  EXPECT_EQ(server.Terminate(), 0) << server.log();
  EXPECT_EQ(streaming.Terminate(), 0) << streaming.log();
}

}  // namespace
}  // namespace overseer

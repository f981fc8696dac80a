// Benchmarks of checkpoint saving and restoring (./dev bench), for 256 MiB of float
// variables in 16 tensors of 16 MiB, split over 2 shards written by 2 threads (as two
// parameter servers would):
//   checkpoint.save_mb_per_sec_embedded: Begin, both shards streamed, Commit (durable:
//     fsync, rename, index, state file) into a local directory through the in-process
//     CheckpointStore, in MB (1e6 bytes) per second.
//   checkpoint.save_mb_per_sec_service: the same through a checkpoint_store service in
//     this process over loopback gRPC (GrpcCheckpointStore, 4 MiB chunks).
//   Baseline of both: the same bytes with the same parallelism, raw: 2 threads, each
//     writing its shard's 8 tensors into a new file of its own and fdatasyncing it.
//   checkpoint.restore_mb_per_sec_embedded: ReadTensors of every tensor (CRC32C
//     verified) from the page cache. Baseline: a raw read() of the checkpoint's data
//     files, from the page cache alike (one reader, as ReadTensors).
//   checkpoint.restore_mb_per_sec_service: the same ReadTensors through the service,
//     streamed (no local reads). Baseline: its peer, a raw gRPC stream of the same bytes
//     from a server in this process (4 MiB messages sent by reference, copied from
//     gRPC's slices into a buffer, on a channel with the store client's fixed 64 MiB
//     window), not a page-cache read at memory speed.
// Saves (with their raw baseline) run in 10 interleaved rounds, restores in 11
// (bench_util.h), after one warm-up round each; each call moves 256 MiB. The run takes
// about 30 s on a disk doing ~0.5 GB/s. Files go under $TEST_TMPDIR or /tmp.

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "core/rpc/server_runner.h"

namespace overseer {
namespace {

constexpr int kTensors = 16;
constexpr int kShards = 2;
constexpr int64_t kFloatsPerTensor = 4 << 20;  // 16 MiB.
constexpr int64_t kTensorBytes = kFloatsPerTensor * 4;
constexpr int64_t kTotalBytes = kTensorBytes * kTensors;

constexpr int kSaveRounds = 10;
constexpr int kRestoreRounds = 11;
constexpr int64_t kChunkBytes = 4 << 20;  // The service's ReadTensors messages.

double MbPerSecond(double seconds) { return kTotalBytes / seconds / 1e6; }

std::string BenchDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/overseer_checkpoint_bench.", ::getpid());
}

TensorHeader Header(int i) {
  TensorHeader header;
  header.set_name(absl::StrCat("layer", i, "/weights"));
  header.set_dtype(DT_FLOAT);
  header.mutable_shape()->add_dim()->set_size(kFloatsPerTensor / 1024);
  header.mutable_shape()->add_dim()->set_size(1024);
  header.set_size(kTensorBytes);
  return header;
}

// The variables' bytes: kTotalBytes of floats, tensor i at offset i * kTensorBytes.
std::string MakeVariables() {
  std::string bytes(static_cast<size_t>(kTotalBytes), '\0');
  float* f = reinterpret_cast<float*>(bytes.data());
  for (int64_t i = 0; i < kTotalBytes / 4; ++i) f[i] = static_cast<float>(i % 1000003) * 1e-3f;
  return bytes;
}

// Saves checkpoint "model.ckpt-<step>" of `run`: shard s holds tensors i with
// i % kShards == s and is streamed by its own thread. Keeps one checkpoint.
void Save(CheckpointStoreInterface* store, const std::string& run, int64_t step,
          const std::string& variables) {
  BeginCheckpointRequest begin;
  begin.set_run(run);
  begin.set_name(absl::StrCat("model.ckpt-", step));
  begin.set_num_shards(kShards);
  begin.mutable_retention()->set_max_to_keep(1);
  auto id = store->BeginCheckpoint(begin);
  CHECK(id.ok()) << id.status();
  std::vector<std::thread> threads;
  for (int s = 0; s < kShards; ++s) {
    threads.emplace_back([&, s] {
      auto writer = store->OpenShard(*id, s);
      CHECK(writer.ok()) << writer.status();
      for (int i = s; i < kTensors; i += kShards) {
        const absl::string_view data(variables.data() + i * kTensorBytes, kTensorBytes);
        absl::Status added = (*writer)->AddTensor(Header(i), data);
        CHECK(added.ok()) << added;
      }
      absl::Status closed = (*writer)->Close();
      CHECK(closed.ok()) << closed;
    });
  }
  for (std::thread& t : threads) t.join();
  auto info = store->CommitCheckpoint(*id);
  CHECK(info.ok()) << info.status();
}

void Restore(CheckpointStoreInterface* store, const std::string& run, int64_t step) {
  int64_t bytes = 0;
  absl::Status read = store->ReadTensors(run, absl::StrCat("model.ckpt-", step), {},
                                         [&](const TensorHeader&, absl::string_view data) {
                                           bytes += static_cast<int64_t>(data.size());
                                           return absl::OkStatus();
                                         });
  CHECK(read.ok()) << read;
  CHECK(bytes == kTotalBytes) << bytes;
}

// Writes shard s's tensors (i % kShards == s) into "<prefix>-<s>", one thread per
// shard, and fdatasyncs each file: the bytes and the parallelism of a Save.
void RawSave(const std::string& prefix, const std::string& variables) {
  std::vector<std::thread> threads;
  for (int s = 0; s < kShards; ++s) {
    threads.emplace_back([&, s] {
      const std::string path = absl::StrCat(prefix, "-", s);
      ::unlink(path.c_str());
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      CHECK(fd >= 0) << path;
      for (int i = s; i < kTensors; i += kShards) {
        CHECK(::write(fd, variables.data() + i * kTensorBytes, kTensorBytes) == kTensorBytes);
      }
      CHECK(::fdatasync(fd) == 0);
      CHECK(::close(fd) == 0);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Reads the data files of checkpoint "model.ckpt-<step>" in `dir` with read(); returns
// the bytes read.
int64_t RawRead(const std::string& dir, int64_t step, std::string* buffer) {
  const std::string prefix = absl::StrCat("model.ckpt-", step, ".data-");
  int64_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!absl::StartsWith(entry.path().filename().string(), prefix)) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY);
    CHECK(fd >= 0) << entry.path();
    for (;;) {
      const ssize_t n = ::read(fd, buffer->data(), buffer->size());
      CHECK(n >= 0);
      if (n == 0) break;
      total += n;
    }
    ::close(fd);
  }
  return total;
}

int Main() {
  SetMinLogSeverity(LogSeverity::kWarning);
  const std::string dir = BenchDir();
  CHECK(FileSystem::Posix()->CreateDirs(dir).ok());
  const std::string variables = MakeVariables();

  auto embedded = CheckpointStore::Open(FileSystem::Posix(), dir + "/embedded", Clock::Real());
  CHECK(embedded.ok()) << embedded.status();
  auto service_store = CheckpointStore::Open(FileSystem::Posix(), dir + "/service", Clock::Real());
  CHECK(service_store.ok()) << service_store.status();
  GrpcCheckpointStoreService service(service_store->get());
  ServerRunnerOptions runner_options;
  runner_options.component = "checkpoint_store";
  runner_options.host = "127.0.0.1";
  runner_options.metrics_port = -1;
  runner_options.handle_signals = false;
  runner_options.stream_window_bytes = kCheckpointStoreStreamWindowBytes;
  ServerRunner runner(runner_options);
  runner.AddService(&service);
  CHECK(runner.Start().ok());
  auto remote = GrpcCheckpointStore::Connect(runner.address(), /*local_reads=*/false);

  int64_t embedded_step = 0;
  int64_t service_step = 0;
  bench::Rounds saves("checkpoint save");
  const int save_embedded = saves.Add("embedded", [&] {
    return MbPerSecond(
        bench::SecondsOf([&] { Save(embedded->get(), "", ++embedded_step, variables); }));
  });
  const int raw_save = saves.Add("raw", [&] {
    return MbPerSecond(bench::SecondsOf([&] { RawSave(dir + "/raw", variables); }));
  });
  const int save_service = saves.Add("service", [&] {
    return MbPerSecond(
        bench::SecondsOf([&] { Save(remote.get(), "bench", ++service_step, variables); }));
  });
  saves.Run(kSaveRounds);

  const std::unique_ptr<bench::RawServer> raw_grpc = bench::RawServer::InProcess();
  bench::RawChannelOptions store_channel;
  store_channel.stream_window_bytes = 64 << 20;  // As GrpcCheckpointStore::Connect.
  store_channel.bdp_probe = false;
  const std::unique_ptr<bench::RawClient> raw_client = raw_grpc->NewClient(store_channel);
  std::string buffer(static_cast<size_t>(kTensorBytes), '\0');
  std::string received(static_cast<size_t>(kTotalBytes), '\0');
  bench::Rounds restores("checkpoint restore");
  const int raw_read = restores.Add("raw_read", [&] {
    return MbPerSecond(bench::SecondsOf(
        [&] { CHECK(RawRead(dir + "/embedded", embedded_step, &buffer) >= kTotalBytes); }));
  });
  const int restore_embedded = restores.Add("embedded", [&] {
    return MbPerSecond(bench::SecondsOf([&] { Restore(embedded->get(), "", embedded_step); }));
  });
  const int restore_service = restores.Add("service", [&] {
    return MbPerSecond(bench::SecondsOf([&] { Restore(remote.get(), "bench", service_step); }));
  });
  const int raw_stream = restores.Add("raw_grpc", [&] {
    return MbPerSecond(bench::SecondsOf(
        [&] { raw_client->TransferRawBytes(kTotalBytes, kChunkBytes, received.data()); }));
  });
  restores.Run(kRestoreRounds);

  bench::PrintFigure("checkpoint.save_mb_per_sec_embedded", "MB/s", saves.samples(save_embedded),
                     saves.samples(raw_save));
  bench::PrintFigure("checkpoint.save_mb_per_sec_service", "MB/s", saves.samples(save_service),
                     saves.samples(raw_save));
  bench::PrintFigure("checkpoint.restore_mb_per_sec_embedded", "MB/s",
                     restores.samples(restore_embedded), restores.samples(raw_read));
  bench::PrintFigure("checkpoint.restore_mb_per_sec_service", "MB/s",
                     restores.samples(restore_service), restores.samples(raw_stream));
  embedded->reset();
  runner.RequestTermination();
  runner.WaitForTermination();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return 0;
}

}  // namespace
}  // namespace overseer

int main() {
  // Measure with the settings the servers run with (docs/settings.md).
  overseer::ApplyProcessSettings();
  return overseer::Main();
}

// Benchmarks of checkpoint saving and restoring (./dev bench), for 256 MiB of float
// variables in 16 tensors of 16 MiB, split over 2 shards written by 2 threads (as two
// parameter servers would):
//   checkpoint.save_mb_per_sec_embedded: Begin, both shards streamed, Commit (durable:
//     fsync, rename, index, state file) into a local directory through the in-process
//     CheckpointStore, in MB (1e6 bytes) per second.
//   checkpoint.save_mb_per_sec_service: the same through a checkpoint_store service in
//     this process over loopback gRPC (GrpcCheckpointStore, 1 MiB chunks).
//   Baseline of both: a raw sequential write + fdatasync of the same bytes into a new file.
//   checkpoint.restore_mb_per_sec_{embedded,service}: ReadTensors of every tensor (CRC32C
//     verified). Baseline: a raw sequential read of the baseline's file. Both read what
//     was just written, so both come from the page cache alike.
// Every measurement is 1 warm-up call then the fastest of 2 (saves) or 3 (restores);
// each call moves 256 MiB. The run takes about 45 s on a disk doing ~100 MB/s. Files go under $TEST_TMPDIR or /tmp.

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"
#include "core/logging.h"
#include "core/rpc/server_runner.h"

namespace overseer {
namespace {

constexpr int kTensors = 16;
constexpr int kShards = 2;
constexpr int64_t kFloatsPerTensor = 4 << 20;  // 16 MiB.
constexpr int64_t kTensorBytes = kFloatsPerTensor * 4;
constexpr int64_t kTotalBytes = kTensorBytes * kTensors;

// One call per repeat: each call is already long. Saves (seconds each on a slow disk)
// are repeated twice, restores (from the page cache) three times.
double SecondsPerCall(const std::function<void()>& fn, int repeats) {
  return bench::SecondsPerCall(fn, 1e-9, /*warmup=*/1, repeats);
}

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

struct Figures {
  double save = 0;
  double restore = 0;
};

Figures Measure(CheckpointStoreInterface* store, const std::string& run,
                const std::string& variables) {
  int64_t step = 0;
  Figures figures;
  figures.save = MbPerSecond(SecondsPerCall([&] { Save(store, run, ++step, variables); }, 2));
  figures.restore = MbPerSecond(SecondsPerCall([&] { Restore(store, run, step); }, 3));
  return figures;
}

Figures MeasureRaw(const std::string& path, const std::string& variables) {
  Figures figures;
  figures.save = MbPerSecond(SecondsPerCall([&] {
    ::unlink(path.c_str());
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0) << path;
    for (int i = 0; i < kTensors; ++i) {
      CHECK(::write(fd, variables.data() + i * kTensorBytes, kTensorBytes) == kTensorBytes);
    }
    CHECK(::fdatasync(fd) == 0);
    CHECK(::close(fd) == 0);
  }, 2));
  std::string buffer(static_cast<size_t>(kTensorBytes), '\0');
  figures.restore = MbPerSecond(SecondsPerCall([&] {
    const int fd = ::open(path.c_str(), O_RDONLY);
    CHECK(fd >= 0) << path;
    int64_t total = 0;
    for (;;) {
      const ssize_t n = ::read(fd, buffer.data(), buffer.size());
      CHECK(n >= 0);
      if (n == 0) break;
      total += n;
    }
    CHECK(total == kTotalBytes) << total;
    ::close(fd);
  }, 3));
  return figures;
}

int Main() {
  SetMinLogSeverity(LogSeverity::kWarning);
  const std::string dir = BenchDir();
  CHECK(FileSystem::Posix()->CreateDirs(dir).ok());
  const std::string variables = MakeVariables();

  const Figures raw = MeasureRaw(dir + "/raw.bin", variables);

  auto embedded = CheckpointStore::Open(FileSystem::Posix(), dir + "/embedded");
  CHECK(embedded.ok()) << embedded.status();
  const Figures local = Measure(embedded->get(), "", variables);
  embedded->reset();

  auto service_store = CheckpointStore::Open(FileSystem::Posix(), dir + "/service");
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
  auto remote = GrpcCheckpointStore::Connect(runner.address());
  const Figures served = Measure(remote.get(), "bench", variables);

  bench::PrintFigure("checkpoint.save_mb_per_sec_embedded", local.save, "MB/s", raw.save);
  bench::PrintFigure("checkpoint.save_mb_per_sec_service", served.save, "MB/s", raw.save);
  bench::PrintFigure("checkpoint.restore_mb_per_sec_embedded", local.restore, "MB/s",
                     raw.restore);
  bench::PrintFigure("checkpoint.restore_mb_per_sec_service", served.restore, "MB/s",
                     raw.restore);
  runner.RequestTermination();
  runner.WaitForTermination();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return 0;
}

}  // namespace
}  // namespace overseer

int main() { return overseer::Main(); }

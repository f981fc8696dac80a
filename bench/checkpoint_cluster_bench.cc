// Benchmarks of sharded checkpoints over a real cluster (./dev bench): a master_server,
// two ps and one worker worker_server processes (test::LocalCluster) and a
// checkpoint_store_server process whose --root is under $TEST_TMPDIR (or /tmp). The
// model holds 1 GiB of float variables, 16 variables of 64 MiB, 8 on each ps, plus a
// 4 KiB "bias" variable on each ps. A sharded Saver saves through a GrpcSession to
// grpc://127.0.0.1:<store port>/bench: each ps writes its own variables into its
// shard's data file through a descriptor the store hands out (local writes,
// local_write.h: O_DIRECT from the variables' memory), from a thread at idle priority.
//   checkpoint.save_gbps: GB (1e9 bytes) of the big variables per second of the whole
//     Saver::Save call (snapshot, begin, both ps writing, durable commit). The Saver keeps
//     one checkpoint: each commit retires the one before, whose data files the store
//     deletes after replying; the round waits for that, untimed, as the raw write
//     unlinks its last file untimed. Baseline: the
//     same bytes with the same parallelism and the same kind of write, raw: two
//     threads, each writing 512 MiB in 64 MiB O_DIRECT writes from 2 MiB-aligned memory
//     into a new file of its own in the store's root directory (same file system) and
//     fsyncing it. 10 rounds.
//   checkpoint.restore_gbps: Saver::Restore of that checkpoint into the ps variables.
//     The ps run on the store's host, so they read the data files themselves through
//     descriptors the store hands out (local reads, docs/checkpoint_format.md): the
//     64 MiB tensors with O_DIRECT straight into the variables, four 8 MiB reads in
//     flight per ps. Baseline: the same reads, raw: two threads (one per ps) each
//     reading its raw file with O_DIRECT, four 8 MiB preads in flight each. Both start
//     cold: every file read is fsynced and dropped from the page cache
//     (POSIX_FADV_DONTNEED) first. On this virtual machine the host caches the disk
//     image, so such a read still runs at 1.5-6 GB/s. The raw reads go into 2 MiB-aligned
//     memory advised to be huge pages, as tensors are. 7 rounds.
//   checkpoint.restore_gbps_streamed: the same restore through a second
//     checkpoint_store_server on the same --root started with --local_read_socket=
//     (no local reads), so every tensor streams over gRPC on loopback TCP. Baseline: its
//     peer, raw gRPC streaming of the same bytes with the same parallelism: two streams
//     of 512 MiB at once from a child process (4 MiB messages sent by reference, copied
//     from gRPC's slices, each stream on a connection of its own with the store
//     client's fixed 64 MiB window). In the restore's 7 rounds.
//   ps.rss_after_restore_ratio: each ps's resident memory (VmRSS) over the bytes of the
//     variables it holds (512 MiB), the larger of the two ps, after each of 7 restores
//     of the latest checkpoint into the initialised variables (after the saves, before
//     the timed restores); the goal is at most 1.15: a restore must not leave the model
//     twice in memory (it writes into the variables in place). The physical floor is
//     1.0, so there is no raw baseline; the note gives the same ratio after the
//     initialisation and the saves, before any restore.
//   checkpoint.train_steps_per_sec_during_save: a trainer thread runs small training
//     steps (ApplyGradientDescent on each ps's bias, through the same cluster session)
//     without pause, as the Supervisor's training loop does while its checkpoint
//     thread saves; the figure is its steps per second during a Saver::Save and the
//     deletes of the checkpoint it retired. Baseline:
//     its steps per second during a quiet window of kQuietTraining without a save,
//     interleaved. 5 rounds. What slows the steps is CPU shared with the save on this
//     2-core host (saving holds no variable lock while writing): its CRC32C and system
//     calls, which run at idle priority.
//   checkpoint.train_steps_per_sec_during_raw_write: the same trainer's steps per second
//     while the raw write of save_gbps's baseline runs (the same bytes, two threads,
//     O_DIRECT, fsync) from threads at idle priority, as the ps's writers are, against
//     the same quiet windows, in the same interleaved rounds. What the disk writes alone
//     cost training on this host: the floor under the figure above.
//   checkpoint.train_steps_lost_per_save: the steps the trainer lost to a save, against
//     the steps it lost to the raw write in the same rounds: each window's length times
//     its round's quiet rate, less the steps it made. Unlike the rates above, it does
//     not depend on how long the work took: a save twice as slow at the same cost
//     would lose training the same steps, at a rate twice as close to the quiet one. A
//     ratio of 1: the save costs training what writing its bytes costs on this host.
//   checkpoint.train_steps_per_sec_beside_idle_thread: the same trainer's steps per
//     second while one thread at idle priority (SCHED_IDLE) spins for kIdleSpin, doing
//     no I/O and touching no shared memory, against the same quiet windows, in the same
//     rounds. What any CPU time taken beside training costs it on this host, whatever its
//     priority: on a virtual machine the hypervisor does not see the guest's priorities.
// Every group of rounds starts with an untimed warm-up round (the first GiB a run writes
// is several times slower than the next on this host, and the first save and restore
// in fresh processes fault in their buffers). Within a group each round alternates
// which side goes first (bench_util.h); values are medians of rounds, ratios medians
// of per-round ratios. The run takes about two and a half minutes at low load; progress
// goes to stderr.

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_input.h"
#include "client/graph/ops_math.h"
#include "client/graph/ops_state.h"
#include "client/graph/ops_training.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"
#include "client/session/session.h"
#include "client/training/saver.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "testing/local_cluster.h"
#include "testing/server_process.h"

namespace overseer {
namespace {

constexpr int kPsTasks = 2;
constexpr int kVariables = 16;
constexpr int64_t kFloatsPerVariable = 16 << 20;  // 64 MiB.
constexpr int64_t kVariableBytes = kFloatsPerVariable * 4;
constexpr int64_t kTotalBytes = kVariableBytes * kVariables;  // 1 GiB.
constexpr int64_t kBiasFloats = 1024;
constexpr int64_t kShardBytes = kTotalBytes / kPsTasks;
constexpr int kSaveRounds = 10;
constexpr int kRestoreRounds = 7;
constexpr int kTrainingRounds = 5;
constexpr absl::Duration kQuietTraining = absl::Seconds(2);
constexpr absl::Duration kIdleSpin = absl::Seconds(1);
// The raw direct reads: pieces and pieces in flight per file, as the ps's local reads.
constexpr int64_t kPieceBytes = 8 << 20;
constexpr int kReadersPerFile = 4;
constexpr int64_t kStreamChunkBytes = 4 << 20;     // The store's ReadTensors messages.
constexpr int kStoreStreamWindowBytes = 64 << 20;  // GrpcCheckpointStore::Connect's.

void Progress(const std::string& what) { bench::Progress(what); }

double GbPerSecond(double seconds) { return kTotalBytes / seconds / 1e9; }

std::string PsDevice(int k) { return absl::StrCat("/job:ps/replica:0/task:", k); }

struct Model {
  GraphDef graph;
  std::unique_ptr<Saver> saver;
  std::string init;
  std::string train;
  // Per big variable, computed on its ps: its largest value and its smallest negated.
  std::vector<std::string> checks;
  std::string zero;  // Sets every big variable to 0 (so that a restore must bring it back).
};

// Variable i (64 MiB of i + 1) lives on ps i % 2; bias k on ps k. A train step moves
// both biases by ApplyGradientDescent with a constant gradient made on their ps.
Model BuildModel() {
  Scope root = Scope::NewRootScope();
  Model m;
  std::vector<Operation> zeros;
  for (int i = 0; i < kVariables; ++i) {
    Scope ps = root.WithDevice(PsDevice(i % kPsTasks));
    Output initial = ops::Fill(ps, {kFloatsPerVariable}, static_cast<float>(i + 1));
    Variable v = MakeVariable(ps.WithOpName(absl::StrCat("layer", i)), initial);
    m.checks.push_back(ops::Max(ps, v.value, {0}).name());
    m.checks.push_back(ops::Max(ps, ops::Neg(ps, v.value), {0}).name());
    Output zero = ops::Fill(ps, {kFloatsPerVariable}, 0.0f);
    zeros.push_back(Operation(ops::Assign(ps, v.ref, zero).node()));
  }
  m.zero = ops::NoOp(root.WithOpName("zero").WithControlDependencies(zeros)).name();
  std::vector<Operation> updates;
  for (int k = 0; k < kPsTasks; ++k) {
    Scope ps = root.WithDevice(PsDevice(k));
    Variable bias =
        MakeVariable(ps.WithOpName(absl::StrCat("bias", k)), ops::Fill(ps, {kBiasFloats}, 0.0f));
    Output grad = ops::Fill(ps, {kBiasFloats}, 1.0f);
    updates.push_back(Operation(ops::ApplyGradientDescent(ps, bias.ref, 0.001f, grad).node()));
  }
  m.train = ops::NoOp(root.WithOpName("train").WithControlDependencies(updates)).name();
  m.init = GlobalVariablesInitializer(root).name();
  SaverOptions options;
  options.sharded = true;
  options.max_to_keep = 1;
  auto saver = Saver::Create(root, options);
  CHECK(saver.ok()) << saver.status();
  m.saver = *std::move(saver);
  absl::Status s = root.ToGraphDef(&m.graph);
  CHECK(s.ok()) << s;
  return m;
}

// Resident bytes of process `pid` (VmRSS of /proc/<pid>/status).
int64_t ResidentBytes(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    int64_t kb = 0;
    if (absl::StartsWith(line, "VmRSS:") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::StripSuffix(line.substr(6), "kB")),
                         &kb)) {
      return kb * 1024;
    }
  }
  LOG(FATAL) << "no VmRSS for process " << pid;
  return 0;
}

std::unique_ptr<Session> MakeSession(const std::string& target, const GraphDef& graph) {
  SessionOptions options;
  options.target = target;
  auto session = NewSession(options);
  CHECK(session.ok()) << session.status();
  absl::Status s = (*session)->Create(graph);
  CHECK(s.ok()) << s;
  return *std::move(session);
}

// fsyncs `path` and drops its pages from the page cache, so that the next read of it
// comes from the disk.
void DropFromPageCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  CHECK(fd >= 0) << path;
  CHECK(::fsync(fd) == 0) << path;
  CHECK(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0) << path;
  ::close(fd);
}

// Every checkpoint file (data shards and index) of the run directory.
void DropCheckpointFromPageCache(const std::string& run_dir) {
  for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
    const std::string name = entry.path().filename().string();
    if (absl::StrContains(name, ".data-") || absl::EndsWith(name, ".index")) {
      DropFromPageCache(entry.path().string());
    }
  }
}

// Memory for O_DIRECT reads as a tensor's (core/tensor.cc): 2 MiB-aligned, advised to
// be huge pages (a direct read pins 512 times fewer pages then). Freed on destruction.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes) {
    CHECK(::posix_memalign(reinterpret_cast<void**>(&data), 1 << 21, bytes) == 0);
    ::madvise(data, bytes, MADV_HUGEPAGE);  // Advice only; may be refused.
    std::memset(data, 0, bytes);            // Fault the pages in once, before any round.
  }
  ~AlignedBuffer() { std::free(data); }
  char* data = nullptr;
};

// Writes kShardBytes (kVariables / kPsTasks writes of the kVariableBytes at `buffer`)
// into each of the kPsTasks files `paths`, one thread per file, with O_DIRECT where the
// file system takes it (as the ps write their shards: local writes, local_write.h),
// fsyncs them and drops them from the page cache; returns the seconds of the writes
// and fsyncs. With `idle_priority` the threads write at the lowest CPU priority
// (SCHED_IDLE), as a ps's writer does.
double RawWrite(const std::vector<std::string>& paths, const char* buffer,
                bool idle_priority = false) {
  std::vector<int> fds;
  for (const std::string& path : paths) {
    ::unlink(path.c_str());
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_DIRECT, 0644);
    if (fd < 0 && errno == EINVAL) fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
    CHECK(fd >= 0) << path;
    fds.push_back(fd);
  }
  const double seconds = bench::SecondsOf([&] {
    std::vector<std::thread> writers;
    for (int fd : fds) {
      writers.emplace_back([buffer, fd, idle_priority] {
        if (idle_priority) {
          const sched_param param{};
          CHECK(::sched_setscheduler(0, SCHED_IDLE, &param) == 0) << std::strerror(errno);
        }
        for (int i = 0; i < kVariables / kPsTasks; ++i) {
          CHECK(::write(fd, buffer, kVariableBytes) == static_cast<ssize_t>(kVariableBytes));
        }
        CHECK(::fsync(fd) == 0);
      });
    }
    for (std::thread& t : writers) t.join();
  });
  for (int fd : fds) {
    CHECK(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    ::close(fd);
  }
  return seconds;
}

// Spins on one thread at the lowest CPU priority (SCHED_IDLE) for kIdleSpin.
void SpinAtIdlePriority() {
  std::thread spinner([] {
    const sched_param param{};
    CHECK(::sched_setscheduler(0, SCHED_IDLE, &param) == 0) << std::strerror(errno);
    const absl::Time end = absl::Now() + kIdleSpin;
    while (absl::Now() < end) {
    }
  });
  spinner.join();
}

// Returns once no file in `dir` has a temp name: the store has deleted the data files
// of the checkpoints its commits retired (renamed to temp names, deleted after the
// commit's reply). Only between saves, when no checkpoint is being written.
void WaitForRetiredFiles(const std::string& dir) {
  for (;;) {
    bool renamed = false;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      renamed = renamed || absl::StrContains(entry.path().filename().string(), ".tempstate");
    }
    if (!renamed) return;
    absl::SleepFor(absl::Milliseconds(2));
  }
}

// Reads each of `paths` (kShardBytes each) into its buffer of `dests` with O_DIRECT,
// kReadersPerFile preads of kPieceBytes in flight per file, all files at once; returns
// the seconds. The files are dropped from the page cache first.
double RawDirectRead(const std::vector<std::string>& paths, const std::vector<char*>& dests) {
  std::vector<int> fds;
  for (const std::string& path : paths) {
    DropFromPageCache(path);
    fds.push_back(::open(path.c_str(), O_RDONLY | O_DIRECT));
    CHECK(fds.back() >= 0) << path << ": " << std::strerror(errno);
  }
  const double seconds = bench::SecondsOf([&] {
    std::vector<std::atomic<int64_t>> next(fds.size());
    std::vector<std::thread> readers;
    for (size_t f = 0; f < fds.size(); ++f) {
      next[f] = 0;
      for (int r = 0; r < kReadersPerFile; ++r) {
        readers.emplace_back([&, f] {
          for (int64_t at; (at = next[f].fetch_add(kPieceBytes)) < kShardBytes;) {
            const int64_t n = std::min(kPieceBytes, kShardBytes - at);
            CHECK(::pread(fds[f], dests[f] + at, n, at) == n) << paths[f];
          }
        });
      }
    }
    for (std::thread& t : readers) t.join();
  });
  for (int fd : fds) ::close(fd);
  return seconds;
}

// Every big variable holds what the initialiser put there (after a restore).
void CheckValues(Session* session, const Model& model) {
  std::vector<Tensor> extremes;
  absl::Status s = session->Run({}, model.checks, {}, &extremes);
  CHECK(s.ok()) << s;
  for (int i = 0; i < kVariables; ++i) {
    const float max = extremes[2 * i].scalar<float>();
    const float min = -extremes[2 * i + 1].scalar<float>();
    CHECK(max == i + 1 && min == i + 1) << "layer" << i << " holds values in [" << min << ", "
                                        << max << "], not " << i + 1 << " after the restore";
  }
}

// Runs training steps on a thread of its own until destroyed, counting them.
class Trainer {
 public:
  Trainer(Session* session, const std::string& train) {
    thread_ = std::thread([this, session, train] {
      while (!stop_.load()) {
        absl::Status run = session->Run({}, {}, {train}, nullptr);
        CHECK(run.ok()) << run;
        steps_.fetch_add(1);
      }
    });
  }
  ~Trainer() {
    stop_ = true;
    thread_.join();
  }

  // A window's seconds and the steps completed in it.
  struct Window {
    double seconds = 0;
    int64_t steps = 0;
  };

  // Steps per second completed while `fn` ran; the window goes to `window` if not null.
  double StepsPerSecondDuring(const std::function<void()>& fn, Window* window = nullptr) {
    const int64_t before = steps_.load();
    const double seconds = bench::SecondsOf(fn);
    const int64_t steps = steps_.load() - before;
    if (window != nullptr) *window = Window{seconds, steps};
    return steps / seconds;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> steps_{0};
  std::thread thread_;
};

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  SetMinLogSeverity(LogSeverity::kWarning);
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/checkpoint_cluster_bench");
  const std::string root = dir + "/store";
  std::filesystem::create_directories(root);

  bench::RawServer raw(argv0);
  test::ServerProcess store("checkpoint_store/checkpoint_store_server", {"--root=" + root});
  CHECK(store.port() > 0) << store.log();
  // The same checkpoints through a store that serves no local reads: restores stream.
  test::ServerProcess streaming_store("checkpoint_store/checkpoint_store_server",
                                      {"--root=" + root, "--local_read_socket="});
  CHECK(streaming_store.port() > 0) << streaming_store.log();
  auto streamed_path = [&](const std::string& path) {
    return absl::StrReplaceAll(path, {{store.target(), streaming_store.target()}});
  };
  test::LocalClusterOptions options;
  options.num_ps = kPsTasks;
  options.num_workers = 1;
  auto cluster = test::LocalCluster::Start(options);
  CHECK(cluster.ok()) << cluster.status();

  Model model = BuildModel();
  auto session = MakeSession((*cluster)->master_target(), model.graph);
  Progress("cluster up; initialising 1 GiB of variables on 2 ps");
  absl::Status init = session->Run({}, {}, {model.init}, nullptr);
  CHECK(init.ok()) << init;
  const std::string prefix = absl::StrCat("grpc://", store.target(), "/bench/model.ckpt");

  AlignedBuffer buffer(static_cast<size_t>(kVariableBytes));
  for (int64_t i = 0; i < kVariableBytes; ++i) buffer.data[i] = static_cast<char>(i * 131);
  std::vector<std::string> raw_paths;
  for (int k = 0; k < kPsTasks; ++k) raw_paths.push_back(absl::StrCat(root, "/raw-", k, ".bin"));
  int64_t step = 0;
  std::string saved;  // The latest checkpoint.
  auto save = [&] {
    auto path = model.saver->Save(session.get(), prefix, ++step);
    CHECK(path.ok()) << path.status();
    saved = *path;
  };
  // The store deletes the data files of the checkpoint a commit retired (max_to_keep 1)
  // after replying: waits until it has, so that no later round pays for them.
  auto retired_deleted = [&] { WaitForRetiredFiles(root + "/bench"); };

  Progress("saves and raw writes");
  bench::Rounds saves("checkpoint_cluster save");
  const int raw_write =
      saves.Add("raw_write", [&] { return GbPerSecond(RawWrite(raw_paths, buffer.data)); });
  const int timed_save = saves.Add("save", [&] {
    const double seconds = bench::SecondsOf(save);
    retired_deleted();  // Untimed, as the raw write's unlink of its last file.
    return GbPerSecond(seconds);
  });
  saves.Run(kSaveRounds);

  Progress("restores, raw direct reads and raw gRPC streams");
  std::vector<std::unique_ptr<AlignedBuffer>> shards;
  std::vector<char*> dests;
  std::vector<std::unique_ptr<bench::RawClient>> streams;
  bench::RawChannelOptions store_channel;
  store_channel.stream_window_bytes = kStoreStreamWindowBytes;
  store_channel.bdp_probe = false;
  for (int k = 0; k < kPsTasks; ++k) {
    shards.push_back(std::make_unique<AlignedBuffer>(kShardBytes));
    dests.push_back(shards.back()->data);
    streams.push_back(raw.NewClient(store_channel));
  }
  // The larger of the ps tasks' resident bytes over the variable bytes each holds.
  auto ps_rss_ratio = [&] {
    double worst = 0;
    for (int k = 0; k < kPsTasks; ++k) {
      const double held = kShardBytes + kBiasFloats * sizeof(float);
      worst = std::max(worst, ResidentBytes((*cluster)->pid("ps", k)) / held);
    }
    return worst;
  };
  // Restores into the initialised variables (nothing else allocates on the ps between
  // them), each followed by a look at the ps's memory: a restore must not leave the
  // model twice in memory. Before the timed rounds, whose zeroing of the variables
  // before each restore replaces their buffers (and keeps the old ones in the ps's
  // buffer cache for the next zeroing).
  Progress("restores into the live variables, the ps's memory after each");
  const double rss_before_restores = ps_rss_ratio();
  std::vector<double> rss_after_restore;
  for (int round = 0; round < kRestoreRounds; ++round) {
    absl::Status restored = model.saver->Restore(session.get(), saved);
    CHECK(restored.ok()) << restored;
    rss_after_restore.push_back(ps_rss_ratio());
  }
  // Zeroes the variables, drops the checkpoint from the page cache, restores from
  // `path` and checks the values; returns the seconds of the restore.
  auto restore = [&](const std::string& path) {
    absl::Status zeroed = session->Run({}, {}, {model.zero}, nullptr);
    CHECK(zeroed.ok()) << zeroed;
    DropCheckpointFromPageCache(root + "/bench");
    const double seconds = bench::SecondsOf([&] {
      absl::Status restored = model.saver->Restore(session.get(), path);
      CHECK(restored.ok()) << restored;
    });
    CheckValues(session.get(), model);
    return seconds;
  };
  bench::Rounds restores("checkpoint_cluster restore");
  const int raw_read =
      restores.Add("raw_read", [&] { return GbPerSecond(RawDirectRead(raw_paths, dests)); });
  const int local_restore = restores.Add("restore", [&] { return GbPerSecond(restore(saved)); });
  const int streamed_restore =
      restores.Add("streamed", [&] { return GbPerSecond(restore(streamed_path(saved))); });
  const int raw_grpc = restores.Add("raw_grpc", [&] {
    return GbPerSecond(bench::SecondsOf([&] {
      std::vector<std::thread> threads;
      for (int k = 0; k < kPsTasks; ++k) {
        threads.emplace_back(
            [&, k] { streams[k]->TransferRawBytes(kShardBytes, kStreamChunkBytes, dests[k]); });
      }
      for (std::thread& t : threads) t.join();
    }));
  });
  restores.Run(kRestoreRounds);

  Progress("training with and without a save");
  bench::Rounds training("checkpoint_cluster training");
  int quiet = 0;
  int during_save = 0;
  int during_raw_write = 0;
  int beside_idle_thread = 0;
  // Every round's windows, the warm-up's first: quiet, saving, raw writing.
  std::vector<Trainer::Window> quiet_windows;
  std::vector<Trainer::Window> save_windows;
  std::vector<Trainer::Window> raw_windows;
  {
    Trainer trainer(session.get(), model.train);
    quiet = training.Add("quiet", [&] {
      return trainer.StepsPerSecondDuring([] { absl::SleepFor(kQuietTraining); },
                                          &quiet_windows.emplace_back());
    });
    // The window includes the deletes of the checkpoint the save retired.
    during_save = training.Add("saving", [&] {
      return trainer.StepsPerSecondDuring(
          [&] {
            save();
            retired_deleted();
          },
          &save_windows.emplace_back());
    });
    during_raw_write = training.Add("raw_writing", [&] {
      return trainer.StepsPerSecondDuring(
          [&] { RawWrite(raw_paths, buffer.data, /*idle_priority=*/true); },
          &raw_windows.emplace_back());
    });
    beside_idle_thread = training.Add(
        "idle_thread", [&] { return trainer.StepsPerSecondDuring(SpinAtIdlePriority); });
    training.Run(kTrainingRounds);
  }
  // Steps a window lost against its round's quiet rate, for each round kept (the last
  // ones: the warm-up's figures are dropped).
  auto lost_steps = [&](const std::vector<Trainer::Window>& windows) {
    std::vector<double> lost;
    for (size_t r = windows.size() - training.samples(quiet).size(); r < windows.size(); ++r) {
      const double quiet_rate = quiet_windows[r].steps / quiet_windows[r].seconds;
      lost.push_back(quiet_rate * windows[r].seconds - static_cast<double>(windows[r].steps));
    }
    return lost;
  };

  bench::PrintFigure("checkpoint.save_gbps", "GB/s", saves.samples(timed_save),
                     saves.samples(raw_write));
  bench::PrintFigure("checkpoint.restore_gbps", "GB/s", restores.samples(local_restore),
                     restores.samples(raw_read));
  bench::PrintFigure("checkpoint.restore_gbps_streamed", "GB/s", restores.samples(streamed_restore),
                     restores.samples(raw_grpc));
  bench::PrintFigure("checkpoint.train_steps_per_sec_during_save", "steps/s",
                     training.samples(during_save), training.samples(quiet));
  bench::PrintFigure("checkpoint.train_steps_per_sec_during_raw_write", "steps/s",
                     training.samples(during_raw_write), training.samples(quiet));
  bench::PrintFigure("checkpoint.train_steps_per_sec_beside_idle_thread", "steps/s",
                     training.samples(beside_idle_thread), training.samples(quiet));
  bench::PrintFigure("checkpoint.train_steps_lost_per_save", "steps", lost_steps(save_windows),
                     lost_steps(raw_windows));
  bench::PrintFigureWithoutBaseline(
      "ps.rss_after_restore_ratio", "ratio", rss_after_restore,
      absl::StrFormat("resident bytes of a ps over its variable bytes after each restore; "
                      "%.3f after initialising and saving, before any restore; goal <= 1.15",
                      rss_before_restores));

  CHECK(session->Close().ok());
  store.Terminate();
  streaming_store.Terminate();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  // Measure with the settings the servers run with (docs/settings.md).
  overseer::ApplyProcessSettings();
  if (overseer::bench::IsRawServer(argc, argv)) return overseer::bench::RawServerMain(argc, argv);
  return overseer::Run(argv[0]);
}

// Benchmarks of sharded checkpoints over a real cluster (./dev bench): a master_server,
// two ps and one worker worker_server processes (test::LocalCluster) and a
// checkpoint_store_server process whose --root is under $TEST_TMPDIR (or /tmp). The
// model holds 1 GiB of float variables, 16 variables of 64 MiB, 8 on each ps, plus a
// 4 KiB "bias" variable on each ps. A sharded Saver saves through a GrpcSession to
// grpc://127.0.0.1:<store port>/bench: each ps streams its own variables to the store.
//   checkpoint.save_gbps: GB (1e9 bytes) of the big variables per second of the whole
//     Saver::Save call (begin, both ps streaming, durable commit). Baseline: a raw
//     sequential write + fsync of the same 1 GiB into a new file in the store's root
//     directory (same file system), measured in the same run.
//   checkpoint.restore_gbps: Saver::Restore of that checkpoint into the ps variables.
//     The ps run on the store's host, so they read the data files themselves through
//     descriptors the store hands out (local reads, docs/checkpoint_format.md): the
//     64 MiB tensors with O_DIRECT straight into the variables, four 8 MiB reads in
//     flight per ps.
//     Baseline: a raw sequential read of the baseline file. Both start cold alike: the
//     baseline file and every checkpoint file (.data-*, .index) are fsynced and
//     dropped from the page cache (posix_fadvise POSIX_FADV_DONTNEED) before reading.
//     On this virtual machine the host caches the disk image, so a read that misses
//     the guest's page cache still runs at 1.5-6 GB/s.
//   checkpoint.restore_gbps_streamed: the same restore through a second
//     checkpoint_store_server on the same --root started with --local_read_socket=
//     (no local reads), so every tensor streams over gRPC on loopback TCP (four copies
//     per byte plus the TCP stack). Same baseline.
//   checkpoint.save_blocking_ms: a trainer thread runs small training steps
//     (ApplyGradientDescent on each ps's bias, through the same cluster session) while
//     another thread saves, as the Supervisor's checkpoint thread does: the longest
//     step that overlapped the save minus the median step without a save. Baseline:
//     that median. Saving holds no variable lock while streaming (the kernel takes a
//     copy-on-write snapshot of each variable), so steps go on during the save; what
//     slows them is CPU shared with the streaming on this 2-core host.
// After an untimed warm-up (raw write, save, restore), saves and raw writes (and
// restores and raw reads) alternate in kRounds rounds, each round swapping which goes
// first; each figure is total bytes over total seconds (the shared disk's write speed
// drifts from 0.1 to 1.4 GB/s within seconds). The run takes about a minute at low
// load; progress goes to stderr.

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "client/ops_array.h"
#include "client/ops_input.h"
#include "client/ops_math.h"
#include "client/ops_state.h"
#include "client/ops_training.h"
#include "client/saver.h"
#include "client/scope.h"
#include "client/session.h"
#include "client/variables.h"
#include "core/logging.h"
#include "testing/local_cluster.h"
#include "tests/server_process.h"

namespace overseer {
namespace {

constexpr int kPsTasks = 2;
constexpr int kVariables = 16;
constexpr int64_t kFloatsPerVariable = 16 << 20;  // 64 MiB.
constexpr int64_t kVariableBytes = kFloatsPerVariable * 4;
constexpr int64_t kTotalBytes = kVariableBytes * kVariables;  // 1 GiB.
constexpr int64_t kBiasFloats = 1024;
constexpr int kRounds = 2;
constexpr absl::Duration kQuietTraining = absl::Seconds(3);

// Progress lines on stderr, stamped with CLOCK_MONOTONIC seconds (the clock that
// `perf record -k CLOCK_MONOTONIC` stamps samples with, to profile one phase).
void Progress(const std::string& what) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  std::fprintf(stderr, "checkpoint_cluster_bench [%.3f]: %s\n",
               static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9, what.c_str());
}

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
    Variable bias = MakeVariable(ps.WithOpName(absl::StrCat("bias", k)),
                                 ops::Fill(ps, {kBiasFloats}, 0.0f));
    Output grad = ops::Fill(ps, {kBiasFloats}, 1.0f);
    updates.push_back(
        Operation(ops::ApplyGradientDescent(ps, bias.ref, 0.001f, grad).node()));
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

double SecondsOf(const std::function<void()>& fn) {
  const absl::Time start = absl::Now();
  fn();
  return absl::ToDoubleSeconds(absl::Now() - start);
}

// Writes kTotalBytes (kVariables writes of `buffer`) into a new file, fsyncs it and
// drops it from the page cache; returns the seconds of the write and fsync.
double RawWrite(const std::string& path, const std::string& buffer) {
  ::unlink(path.c_str());
  int fd = -1;
  const double seconds = SecondsOf([&] {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0) << path;
    for (int i = 0; i < kVariables; ++i) {
      CHECK(::write(fd, buffer.data(), buffer.size()) == static_cast<ssize_t>(buffer.size()));
    }
    CHECK(::fsync(fd) == 0);
  });
  CHECK(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  ::close(fd);
  return seconds;
}

// Reads the file sequentially into `buffer`; returns the seconds.
double RawRead(const std::string& path, std::string* buffer) {
  return SecondsOf([&] {
    const int fd = ::open(path.c_str(), O_RDONLY);
    CHECK(fd >= 0) << path;
    int64_t total = 0;
    for (;;) {
      const ssize_t n = ::read(fd, buffer->data(), buffer->size());
      CHECK(n >= 0);
      if (n == 0) break;
      total += n;
    }
    CHECK(total == kTotalBytes) << total;
    ::close(fd);
  });
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

struct Step {
  absl::Time start;
  absl::Time end;
};

// Trains on its own thread while the calling thread saves once after kQuietTraining;
// returns {longest step overlapping the save - median step before it, that median},
// in ms.
std::pair<double, double> MeasureBlocking(Session* session, Model* model,
                                          const std::string& prefix, int64_t step) {
  std::atomic<bool> stop{false};
  std::vector<Step> steps;
  std::thread trainer([&] {
    while (!stop.load()) {
      Step s;
      s.start = absl::Now();
      absl::Status run = session->Run({}, {}, {model->train}, nullptr);
      CHECK(run.ok()) << run;
      s.end = absl::Now();
      steps.push_back(s);
    }
  });
  absl::SleepFor(kQuietTraining);
  const absl::Time save_start = absl::Now();
  auto saved = model->saver->Save(session, prefix, step);
  CHECK(saved.ok()) << saved.status();
  const absl::Time save_end = absl::Now();
  absl::SleepFor(absl::Milliseconds(500));
  stop = true;
  trainer.join();
  std::vector<double> quiet;
  double longest = 0;
  double longest_at = 0;
  int during = 0;
  for (const Step& s : steps) {
    const double ms = absl::ToDoubleMilliseconds(s.end - s.start);
    if (s.end <= save_start) {
      quiet.push_back(ms);
    } else if (s.start < save_end) {
      if (ms > longest) {
        longest = ms;
        longest_at = absl::ToDoubleSeconds(s.start - save_start);
      }
      ++during;
    }
  }
  CHECK(!quiet.empty());
  std::sort(quiet.begin(), quiet.end());
  const double median = quiet[quiet.size() / 2];
  Progress(absl::StrCat("save with training: ", absl::ToDoubleSeconds(save_end - save_start),
                        " s; ", quiet.size(), " steps before it (median ", median, " ms), ",
                        during, " during it (longest ", longest, " ms, starting ", longest_at,
                        " s into the save)"));
  return {longest - median, median};
}

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  SetMinLogSeverity(LogSeverity::kWarning);
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/checkpoint_cluster_bench");
  const std::string root = dir + "/store";
  std::filesystem::create_directories(root);

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

  std::string buffer(static_cast<size_t>(kVariableBytes), '\0');
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<char>(i * 131);
  const std::string raw_path = root + "/raw.bin";
  // Totals over the rounds. The disk's speed drifts several-fold within seconds on this
  // shared host and a write slows the one after it, so each round alternates which
  // side goes first and the figures are total bytes over total time.
  double raw_write = 0, save = 0, raw_read = 0, restore = 0, streamed = 0;
  int64_t step = 0;
  // Untimed warm-up: the first GiB a run writes is several times slower than the next
  // on this host, and the first save and restore in fresh processes fault in their
  // buffers (a one-time cost; the Supervisor's periodic saves run warm).
  Progress("warm-up: raw write, save and restore");
  RawWrite(raw_path, buffer);
  {
    auto saved = model.saver->Save(session.get(), prefix, ++step);
    CHECK(saved.ok()) << saved.status();
    absl::Status restored = model.saver->Restore(session.get(), *saved);
    CHECK(restored.ok()) << restored;
    restored = model.saver->Restore(session.get(), streamed_path(*saved));
    CHECK(restored.ok()) << restored;
  }
  for (int round = 0; round < kRounds; ++round) {
    const bool raw_first = round % 2 == 0;
    double w = 0, s = 0, r = 0, t = 0, u = 0;
    std::string path;
    auto timed_save = [&] {
      return SecondsOf([&] {
        auto saved = model.saver->Save(session.get(), prefix, ++step);
        CHECK(saved.ok()) << saved.status();
        path = *saved;
      });
    };
    Progress(absl::StrCat("round ", round + 1, ": raw write and save"));
    if (raw_first) w = RawWrite(raw_path, buffer);
    s = timed_save();
    if (!raw_first) w = RawWrite(raw_path, buffer);
    absl::Status zeroed = session->Run({}, {}, {model.zero}, nullptr);
    CHECK(zeroed.ok()) << zeroed;
    DropCheckpointFromPageCache(root + "/bench");
    auto timed_restore = [&](const std::string& from) {
      return SecondsOf([&] {
        absl::Status restored = model.saver->Restore(session.get(), from);
        CHECK(restored.ok()) << restored;
      });
    };
    Progress(absl::StrCat("round ", round + 1, ": raw read and restore"));
    if (raw_first) r = RawRead(raw_path, &buffer);
    t = timed_restore(path);
    if (!raw_first) r = RawRead(raw_path, &buffer);
    CheckValues(session.get(), model);
    Progress(absl::StrCat("round ", round + 1, ": streamed restore"));
    zeroed = session->Run({}, {}, {model.zero}, nullptr);
    CHECK(zeroed.ok()) << zeroed;
    DropCheckpointFromPageCache(root + "/bench");
    u = timed_restore(streamed_path(path));
    CheckValues(session.get(), model);
    Progress(absl::StrCat("round ", round + 1, " of ", kRounds, ": raw write+fsync ", w,
                          " s, save ", s, " s, raw cold read ", r, " s, restore ", t,
                          " s, streamed restore ", u, " s"));
    raw_write += w;
    save += s;
    raw_read += r;
    restore += t;
    streamed += u;
  }

  Progress("training while saving");
  const auto [blocking, median] = MeasureBlocking(session.get(), &model, prefix, ++step);

  auto gbps = [](double seconds) { return kRounds * kTotalBytes / seconds / 1e9; };
  bench::PrintFigure("checkpoint.save_gbps", gbps(save), "GB/s", gbps(raw_write));
  bench::PrintFigure("checkpoint.restore_gbps", gbps(restore), "GB/s", gbps(raw_read));
  bench::PrintFigure("checkpoint.restore_gbps_streamed", gbps(streamed), "GB/s", gbps(raw_read));
  bench::PrintFigure("checkpoint.save_blocking_ms", blocking, "ms", median);

  CHECK(session->Close().ok());
  store.Terminate();
  streaming_store.Terminate();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int /*argc*/, char** argv) { return overseer::Run(argv[0]); }

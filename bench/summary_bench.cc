// Benchmarks of event writing (./dev bench), for scalar summaries:
//   summary.events_per_sec_embedded: SummaryWriter into a local directory, 1000
//     AddSummary calls (of prebuilt Summary protos) then Flush (durable), in events
//     per second.
//   summary.events_per_sec_service: the same through a summary_writer service in this
//     process over a loopback gRPC channel.
//   Baseline of both: raw append + fsync of the same record bytes with the same write
//     pattern (one write per max_queue = 10 records, one fdatasync per 1000 events), so
//     the ratio is what framing, serialization and (for the service) gRPC cost.
// The goals are embedded >= 0.8x raw and service >= 0.5x embedded; the third line,
// summary.events_per_sec_service_vs_embedded, is the service figure with the embedded
// one as its baseline.
// fsync latency on a shared disk drifts by several times within a second, so the three
// are measured call by call in interleaved rounds (one call of each per round, the order
// reversed every other round, bench_util.h): each value is the median over the rounds
// and each ratio the median of per-round ratios, so all three see the same disk
// conditions, and a lucky or unlucky fsync moves none of them. Each call starts after
// kIdleBeforeCall without a sync (an fsync right after another is slower here), so
// that no side's sync pays for the one before it.
// Files go under $TEST_TMPDIR or /tmp.

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "client/summary/summary_writer.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "core/rpc/server_runner.h"
#include "proto/event.pb.h"
#include "summary_writer/record.h"
#include "summary_writer/rpc/grpc_summary_writer_service.h"
#include "summary_writer/summary_writer_service.h"

namespace overseer {
namespace {

constexpr int kEventsPerCall = 1000;
constexpr int kMaxQueue = 10;
constexpr int kWarmupRounds = 5;
constexpr int kMinRounds = 100;
constexpr int kMaxRounds = 2000;
constexpr double kMinSeconds = 6;
// On this host an fdatasync that follows another within a few ms (on any file) takes
// up to four times as long as one after a pause: 3.9 ms against 1.7 ms per 30 KB
// in a python loop. Without a pause before each call, the service, whose sync comes
// about 1 ms of RPC after the previous side's, ran 2.2-4.8 times as fast as the raw
// append (ratio 0.8-1.0 with the pause).
constexpr absl::Duration kIdleBeforeCall = absl::Milliseconds(20);

Summary LossSummary(int step) {
  Summary summary;
  Summary::Value* v = summary.add_value();
  v->set_tag("loss");
  v->set_simple_value(1.0f / (step + 1));
  return summary;
}

std::string BenchDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/overseer_summary_bench.", ::getpid());
  return dir;
}

// One call writes kEventsPerCall scalars (built beforehand, as the baseline's bytes
// are) and flushes.
class WriterCall {
 public:
  explicit WriterCall(SummaryWriter* writer) : writer_(writer) {
    for (int i = 0; i < kEventsPerCall; ++i) summaries_.push_back(LossSummary(i));
  }
  void operator()() {
    for (int i = 0; i < kEventsPerCall; ++i, ++step_) {
      CHECK(writer_->AddSummary(summaries_[i], step_).ok());
    }
    CHECK(writer_->Flush().ok());
  }

 private:
  SummaryWriter* const writer_;
  std::vector<Summary> summaries_;
  int64_t step_ = 0;
};

// One call appends the framed bytes of kEventsPerCall events and fdatasyncs.
class RawCall {
 public:
  explicit RawCall(const std::string& path) {
    // The framed bytes of the events the writer produces, chunked as it writes them.
    std::string chunk;
    for (int i = 0; i < kEventsPerCall; ++i) {
      Event event;
      event.set_wall_time(1700000000.123 + i);
      event.set_step(100000 + i);
      *event.mutable_summary() = LossSummary(i);
      AppendRecord(event.SerializeAsString(), &chunk);
      if ((i + 1) % kMaxQueue == 0) {
        chunks_.push_back(std::move(chunk));
        chunk.clear();
      }
    }
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    CHECK(fd_ >= 0) << path;
  }
  ~RawCall() { ::close(fd_); }
  void operator()() {
    for (const std::string& c : chunks_) {
      CHECK(::write(fd_, c.data(), c.size()) == static_cast<ssize_t>(c.size()));
    }
    CHECK(::fdatasync(fd_) == 0);
  }

 private:
  std::vector<std::string> chunks_;
  int fd_ = -1;
};

int Main() {
  SetMinLogSeverity(LogSeverity::kWarning);
  const std::string dir = BenchDir();
  SummaryWriterOptions options;
  options.max_queue = kMaxQueue;
  options.background_flush = false;

  auto embedded = SummaryWriter::Create(dir + "/embedded", options);
  CHECK(embedded.ok()) << embedded.status();
  RawCall raw_call(dir + "/raw.bin");
  WriterCall embedded_call(embedded->get());

  SummaryWriterServiceOptions service_options;
  service_options.logdir = dir + "/service";
  service_options.default_max_queue = kMaxQueue;
  EventWriterEnv env;
  env.clock = Clock::Real();
  SummaryWriterServiceImpl impl(service_options, env, nullptr);
  GrpcSummaryWriterService service(&impl);
  ServerRunnerOptions runner_options;
  runner_options.component = "summary_writer";
  runner_options.host = "127.0.0.1";
  runner_options.metrics_port = -1;
  runner_options.handle_signals = false;
  ServerRunner runner(runner_options);
  runner.AddService(&service);
  CHECK(runner.Start().ok());
  auto remote = SummaryWriter::Create(absl::StrCat("grpc://", runner.address(), "/bench"), options);
  CHECK(remote.ok()) << remote.status();
  WriterCall service_call(remote->get());

  // Events per second of one call, started after kIdleBeforeCall without a sync.
  auto rate = [](const std::function<void()>& call) {
    absl::SleepFor(kIdleBeforeCall);
    return kEventsPerCall / bench::SecondsOf(call);
  };
  bench::Rounds rounds("summary");
  rounds.set_log_rounds(false);  // Hundreds of short rounds.
  const int raw = rounds.Add("raw", [&] { return rate(std::ref(raw_call)); });
  const int local = rounds.Add("embedded", [&] { return rate(std::ref(embedded_call)); });
  const int served = rounds.Add("service", [&] { return rate(std::ref(service_call)); });
  rounds.Run(kMinRounds, kWarmupRounds, kMinSeconds, kMaxRounds);
  CHECK((*embedded)->Close().ok());
  CHECK((*remote)->Close().ok());

  bench::PrintFigure("summary.events_per_sec_embedded", "events/s", rounds.samples(local),
                     rounds.samples(raw));
  bench::PrintFigure("summary.events_per_sec_service", "events/s", rounds.samples(served),
                     rounds.samples(raw));
  // The service's goal is against the embedded writer: the same figure, that baseline.
  bench::PrintFigure("summary.events_per_sec_service_vs_embedded", "events/s",
                     rounds.samples(served), rounds.samples(local));
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

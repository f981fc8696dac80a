// Benchmark of readiness pushed through the master (./dev bench):
//   readiness.release_ms: a non-chief waiter blocked in WaitForReady (its own
//     connection to a master_server, which runs with one worker_server; all separate
//     processes on loopback) is released by the chief's MarkReady; each round times
//     one release, from the start of the MarkReady call to the waiter's return, in
//     milliseconds. Each release starts from a withdrawn record and marks only once
//     the master's waiters gauge shows the waiter blocked. MarkReady includes the
//     master asking every task for its incarnation, so a release is at least three
//     hops (chief -> master, master -> worker and back, master -> waiter). Baseline:
//     one raw gRPC unary round trip between this process and a child process (the
//     mean of a kPingWindow window of pings), in the same rounds, interleaved
//     (bench_util.h): value and baseline are medians of kRounds rounds, the ratio the
//     median of per-round ratios. Goal: <= 100 ms (TensorFlow's non-chief polls every
//     30 s).

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "client/session/readiness.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "core/rpc/testing/http_get.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

constexpr int kRounds = 20;
constexpr double kPingWindow = 0.02;
constexpr char kKey[] = "model";

// The master's overseer_master_readiness_waiters gauge; -1 if it cannot be read.
double BlockedWaiters(int metrics_port) {
  absl::StatusOr<std::string> page = test::HttpGet(metrics_port, "/metrics");
  if (!page.ok()) return -1;
  for (absl::string_view line : absl::StrSplit(*page, '\n')) {
    if (!absl::ConsumePrefix(&line, "overseer_master_readiness_waiters ")) continue;
    double value = 0;
    if (absl::SimpleAtod(line, &value)) return value;
  }
  return -1;
}

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  bench::RawServer raw(argv0);

  test::LocalClusterOptions options;
  options.num_ps = 0;
  options.num_workers = 1;
  options.master_metrics = true;
  auto cluster = test::LocalCluster::Start(options);
  CHECK(cluster.ok()) << cluster.status();
  const std::string target = (*cluster)->master_target();
  auto chief = NewReadinessChannel(target);
  auto waiter_channel = NewReadinessChannel(target);
  CHECK(chief.ok() && waiter_channel.ok());
  // Connect both channels before measuring.
  CHECK((*waiter_channel)->WaitForReady(kKey, absl::ZeroDuration()).ok());
  CHECK((*chief)->WithdrawReady(kKey).ok());

  // One release, in ms.
  auto release = [&] {
    CHECK((*chief)->WithdrawReady(kKey).ok());
    absl::Time released;
    absl::StatusOr<bool> ready = false;
    std::thread waiter([&] {
      ready = (*waiter_channel)->WaitForReady(kKey, absl::Seconds(30));
      released = absl::Now();
    });
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (BlockedWaiters((*cluster)->master_metrics_port()) < 1) {
      CHECK(absl::Now() < give_up) << "the waiter never blocked in WaitForReady";
    }
    const absl::Time mark = absl::Now();
    const absl::Status marked = (*chief)->MarkReady(kKey);
    CHECK(marked.ok()) << marked;
    waiter.join();
    CHECK(ready.ok() && *ready) << ready.status();
    return absl::ToDoubleMilliseconds(released - mark);
  };
  bench::Rounds rounds("readiness.release_ms");
  rounds.set_log_rounds(false);
  const int ping = rounds.Add(
      "ping", [&] { return 1e3 * bench::MeanSecondsPerCall([&] { raw.Ping(); }, kPingWindow); });
  const int released = rounds.Add("release", release);
  rounds.Run(kRounds);
  bench::PrintFigure("readiness.release_ms", "ms", rounds.samples(released), rounds.samples(ping));
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

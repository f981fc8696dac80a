// Benchmark of readiness pushed through the master (./dev bench):
//   readiness.release_ms: a non-chief waiter blocked in WaitForReady (its own
//     connection to a master_server, which runs with one worker_server; all separate
//     processes on loopback) is released by the chief's MarkReady; the figure is the
//     median, over 20 runs, of the time from the start of the MarkReady call to the
//     waiter's return, in milliseconds. Each run starts from a withdrawn record and
//     marks only once the master's waiters gauge shows the waiter blocked. MarkReady
//     includes the master asking every task for its incarnation. Baseline: one raw gRPC
//     unary round trip (median) between this process and a child process, measured in
//     the same run. Goal: <= 100 ms (TensorFlow's non-chief polls every 30 s).

#include <algorithm>
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
#include "client/readiness.h"
#include "core/logging.h"
#include "core/rpc/testing/http_get.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

constexpr int kRuns = 20;
constexpr char kKey[] = "model";

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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
  std::vector<double> ping_ms;
  for (int i = 0; i < 20; ++i) raw.Ping();  // Warm-up.
  for (int i = 0; i < 200; ++i) {
    const absl::Time start = absl::Now();
    raw.Ping();
    ping_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
  }

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

  std::vector<double> release_ms;
  for (int run = 0; run < kRuns; ++run) {
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
    release_ms.push_back(absl::ToDoubleMilliseconds(released - mark));
  }
  std::sort(release_ms.begin(), release_ms.end());
  LOG(INFO) << "readiness release over " << kRuns << " runs: min " << release_ms.front()
            << " ms, median " << Median(release_ms) << " ms, max " << release_ms.back()
            << " ms; raw gRPC round trip median " << Median(ping_ms) << " ms";
  bench::PrintFigure("readiness.release_ms", Median(release_ms), "ms", Median(ping_ms));
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  if (overseer::bench::IsRawServer(argc, argv)) return overseer::bench::RawServerMain();
  return overseer::Run(argv[0]);
}

// Benchmark of a step through the distributed runtime (./dev bench):
//   grpc_session.run_step_us: Session::Run of a one-node graph (fetching a scalar
//     Const) through GrpcSession -> master_server -> one worker_server, all separate
//     processes on loopback, in microseconds per step; baseline: one raw gRPC unary
//     round trip (empty messages) between this process and a child process. Each side
//     is one client thread making one call at a time, in windows of kWindowSeconds
//     that alternate (interleaved rounds, bench_util.h): value and baseline are the
//     medians of kRounds windows, the ratio the median of per-round ratios, so that
//     both see the same load on a shared host. A step is at least two round trips
//     (client->master RunStep, master->worker RunGraph); the goal is a ratio <= 3. The
//     master's RunStep runs on a completion queue loop (its step continues on the
//     thread that reads the RunGraph reply), and so does the worker's RunGraph of this
//     quick graph: the ratio was 2.50-2.75 (median 2.56) in six runs at load 2.6-4.8 on
//     the 2-core shared host, against 2.95-3.26 (median 3.17) with the worker's
//     synchronous RunGraph interleaved with it (both then as the ratio of the fastest
//     windows). docs/performance.md section 2 says where a step's time goes.

#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "client/session/session.h"
#include "core/logging.h"
#include "core/node_def_util.h"
#include "core/process_settings.h"
#include "core/tensor.h"
#include "proto/graph.pb.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

constexpr int kRounds = 8;
constexpr double kWindowSeconds = 0.3;

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  bench::RawServer raw(argv0);

  test::LocalClusterOptions options;
  options.num_ps = 0;
  options.num_workers = 1;
  auto cluster = test::LocalCluster::Start(options);
  CHECK(cluster.ok()) << cluster.status();

  GraphDef graph;
  NodeDef* c = graph.add_node();
  c->set_name("c");
  c->set_op("Const");
  c->set_device("/job:worker/replica:0/task:0");
  SetNodeAttr(c, "dtype", DT_FLOAT);
  SetNodeAttr(c, "value", Tensor::Scalar<float>(1.0f));

  SessionOptions session_options;
  session_options.target = (*cluster)->master_target();
  auto session = NewSession(session_options);
  CHECK(session.ok()) << session.status();
  absl::Status created = (*session)->Create(graph);
  CHECK(created.ok()) << created;
  std::vector<Tensor> out;
  auto step = [&] {
    absl::Status s = (*session)->Run({}, {"c:0"}, {}, &out);
    CHECK(s.ok()) << s;
  };
  bench::Rounds rounds("grpc_session.run_step_us");
  const int ping = rounds.Add(
      "ping", [&] { return 1e6 * bench::MeanSecondsPerCall([&] { raw.Ping(); }, kWindowSeconds); });
  const int steps =
      rounds.Add("step", [&] { return 1e6 * bench::MeanSecondsPerCall(step, kWindowSeconds); });
  rounds.Run(kRounds);
  CHECK(out.size() == 1 && out[0].scalar<float>() == 1.0f);
  absl::Status closed = (*session)->Close();
  CHECK(closed.ok()) << closed;
  bench::PrintFigure("grpc_session.run_step_us", "us", rounds.samples(steps), rounds.samples(ping));
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

// Benchmark of a step through the distributed runtime (./dev bench):
//   grpc_session.run_step_us: Session::Run of a one-node graph (fetching a scalar
//     Const) through GrpcSession -> master_server -> one worker_server, all separate
//     processes on loopback, in microseconds per step; baseline: one raw gRPC unary
//     round trip (empty messages) between this process and a child process, measured
//     in the same run. A step is at least two round trips (client->master RunStep,
//     master->worker RunGraph); the goal is a ratio <= 3. It is not met on the 2-core
//     shared host: 4.4-7.4 at load 7-8 (steps of 425-490 us against pings of 66-97 us).
//     The master's CPU (about 7 context switches per step: gRPC's poller hand-offs around
//     its synchronous handler's nested RunGraph call) is the largest part; docs/design.md
//     section 2 says where the rest goes and what would remove the extra thread hop.

#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "client/session.h"
#include "core/logging.h"
#include "core/node_def_util.h"
#include "core/tensor.h"
#include "proto/graph.pb.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  bench::RawServer raw(argv0);
  const double ping_us = bench::SecondsPerCall([&] { raw.Ping(); }, 1.0, 100) * 1e6;

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
  const double step_us = bench::SecondsPerCall(
                             [&] {
                               absl::Status s = (*session)->Run({}, {"c:0"}, {}, &out);
                               CHECK(s.ok()) << s;
                             },
                             1.0, 100) *
                         1e6;
  CHECK(out.size() == 1 && out[0].scalar<float>() == 1.0f);
  absl::Status closed = (*session)->Close();
  CHECK(closed.ok()) << closed;
  bench::PrintFigure("grpc_session.run_step_us", step_us, "us", ping_us);
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  if (overseer::bench::IsRawServer(argc, argv)) return overseer::bench::RawServerMain();
  return overseer::Run(argv[0]);
}

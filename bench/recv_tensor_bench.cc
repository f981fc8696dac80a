// Benchmark of worker-to-worker tensor transfer (./dev bench):
//   recv_tensor.gbps_64MiB, recv_tensor.gbps_1GiB: GB/s (1e9 bytes) of a step that
//     moves a float tensor of that size from one worker_server process to another. The
//     tensor is a variable on /job:worker/task:0 (filled once beforehand); the step
//     fetches Shape(Identity(variable)) with the Shape on /job:worker/task:1, so task 1
//     pulls the whole tensor with RecvTensor while the master only carries the tiny
//     shape. The figure includes the step's fixed overhead (two RunGraph calls).
//   Baseline: a raw gRPC server-streaming transfer of the same bytes in 4 MiB messages
//     (as RecvTensor streams them) from a child process into a buffer of this process,
//     measured in the same run. The goal is a ratio >= 0.8.
// Memory: task 0 holds 1 GiB + 64 MiB of variables, task 1 and this process 1 GiB
// while receiving. Runs in about 80 s on a loaded 2-core machine.

#include <cstdint>
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

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";
constexpr int64_t kChunkBytes = 4 << 20;

NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op,
                 std::vector<std::string> inputs, const std::string& device) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  n->set_device(device);
  for (auto& i : inputs) n->add_input(i);
  return n;
}

// Adds variable "v<suffix>" of `floats` floats on task 0, its initializer
// "init<suffix>" (filled with 1) and "shape<suffix>" = Shape(Identity(v)) on task 1.
void AddTransfer(GraphDef* g, const std::string& suffix, int64_t floats) {
  NodeDef* v = AddNode(g, "v" + suffix, "VariableV2", {}, kTask0);
  SetNodeAttr(v, "dtype", DT_FLOAT);
  SetNodeAttr(v, "shape", TensorShape({floats}));
  NodeDef* dims = AddNode(g, "dims" + suffix, "Const", {}, kTask0);
  SetNodeAttr(dims, "dtype", DT_INT64);
  SetNodeAttr(dims, "value", Tensor::FromVector<int64_t>({floats}));
  NodeDef* one = AddNode(g, "one" + suffix, "Const", {}, kTask0);
  SetNodeAttr(one, "dtype", DT_FLOAT);
  SetNodeAttr(one, "value", Tensor::Scalar<float>(1.0f));
  NodeDef* fill = AddNode(g, "fill" + suffix, "Fill", {"dims" + suffix, "one" + suffix}, kTask0);
  SetNodeAttr(fill, "T", DT_FLOAT);
  SetNodeAttr(fill, "index_type", DT_INT64);
  NodeDef* init = AddNode(g, "init" + suffix, "Assign", {"v" + suffix, "fill" + suffix}, kTask0);
  SetNodeAttr(init, "T", DT_FLOAT);
  SetNodeAttr(AddNode(g, "read" + suffix, "Identity", {"v" + suffix}, kTask0), "T", DT_FLOAT);
  SetNodeAttr(AddNode(g, "shape" + suffix, "Shape", {"read" + suffix}, kTask1), "T",
              DT_FLOAT);
}

struct Size {
  std::string name;
  int64_t bytes;
  // Measurement loop: minimum seconds per repeat (one call when tiny), and the
  // number of repeats (the fastest counts), after one warm-up call.
  double min_seconds;
  int repeats;
};

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  const std::vector<Size> sizes = {{"64MiB", int64_t{64} << 20, 1.0, 3},
                                   {"1GiB", int64_t{1} << 30, 1e-9, 2}};

  std::vector<double> raw_gbps;
  {
    bench::RawServer raw(argv0);
    std::unique_ptr<char[]> dest(new char[sizes.back().bytes]);
    for (const Size& size : sizes) {
      const double seconds = bench::SecondsPerCall(
          [&] { raw.Transfer(size.bytes, kChunkBytes, dest.get()); }, size.min_seconds,
          /*warmup=*/1, size.repeats);
      raw_gbps.push_back(size.bytes / seconds / 1e9);
    }
  }

  test::LocalClusterOptions options;
  options.num_ps = 0;
  options.num_workers = 2;
  auto cluster = test::LocalCluster::Start(options);
  CHECK(cluster.ok()) << cluster.status();
  GraphDef graph;
  for (const Size& size : sizes) AddTransfer(&graph, size.name, size.bytes / 4);
  SessionOptions session_options;
  session_options.target = (*cluster)->master_target();
  auto session = NewSession(session_options);
  CHECK(session.ok()) << session.status();
  absl::Status s = (*session)->Create(graph);
  CHECK(s.ok()) << s;
  std::vector<Tensor> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Size& size = sizes[i];
    s = (*session)->Run({}, {}, {"init" + size.name}, &out);
    CHECK(s.ok()) << s;
    const double seconds = bench::SecondsPerCall(
        [&] {
          absl::Status run = (*session)->Run({}, {"shape" + size.name + ":0"}, {}, &out);
          CHECK(run.ok()) << run;
        },
        size.min_seconds, /*warmup=*/1, size.repeats);
    CHECK(out.size() == 1 && out[0].flat<int32_t>()(0) == size.bytes / 4);
    bench::PrintFigure("recv_tensor.gbps_" + size.name, size.bytes / seconds / 1e9, "GB/s",
                       raw_gbps[i]);
  }
  s = (*session)->Close();
  CHECK(s.ok()) << s;
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  if (overseer::bench::IsRawServer(argc, argv)) return overseer::bench::RawServerMain();
  return overseer::Run(argv[0]);
}

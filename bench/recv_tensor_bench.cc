// Benchmark of worker-to-worker tensor transfer (./dev bench):
//   recv_tensor.gbps_64MiB, recv_tensor.gbps_1GiB: GB/s (1e9 bytes) of a step that
//     moves a float tensor of that size from one worker_server process to another. The
//     tensor is a variable on /job:worker/task:0 (filled once beforehand); the step
//     fetches Shape(Identity(variable)) with the Shape on /job:worker/task:1, so task 1
//     pulls the whole tensor with RecvTensor while the master only carries the tiny
//     shape. The figure includes the step's fixed overhead (two RunGraph calls). The
//     two workers share this host, so after the first transfer (which learns task 0's
//     local transfer socket) the bytes cross a Unix socket (worker/rpc/local_transfer.h).
//     Baseline: a raw loopback TCP stream of the same bytes (write() of 4 MiB pieces in
//     a child process, read() straight into a buffer of this process): the stack bytes
//     cross between hosts, which the same-host path skips and so may outrun.
//   recv_tensor.gbps_64MiB_vs_unix, recv_tensor.gbps_1GiB_vs_unix: the same step against
//     the physical reference of that path: a raw Unix stream of the same bytes, read as
//     the TCP one and written in 64 MiB pieces (the worker send()s the whole tensor at
//     once), with the socket buffers the local transfers ask for. One copy on each side,
//     the least the transfer costs.
//   recv_tensor.gbps_64MiB_vs_stream, ..._1GiB_vs_stream: the same step against the same
//     step on a second cluster whose workers run with --local_transfer_socket=none, so
//     the tensor crosses the RecvTensor stream as between hosts: what the local path
//     gains.
//   recv_tensor.gbps_64MiB_stream_vs_grpc, ..._1GiB_stream_vs_grpc: that streamed step
//     against a raw gRPC server-streaming transfer of the same bytes in 4 MiB messages,
//     sent by reference as RecvTensor sends them, parsed and copied into a buffer as
//     RecvTensor's receiver does, on a channel with the worker's 64 MiB stream window
//     (BDP probing on, as the worker's): the stream's own overhead (between hosts).
//   recv_tensor.gbps_1MiB and its companions: the same at 1 MiB, the smallest tensor
//     that takes the local path (kLocalTransferMinBytes): _vs_stream above 1 says the
//     path pays for its extra connection there. The step's fixed cost dominates.
// The baselines read from and write into memory allocated as tensors are (huge pages).
// The five transfers run in interleaved rounds (bench_util.h): for 1 and 64 MiB, a
// window of at least 0.3 s of transfers each per round; for 1 GiB, one transfer each.
// Memory: each cluster's task 0 holds 1 GiB + 65 MiB of variables, its task 1 and this
// process 1 GiB while receiving. Runs in about two minutes on a loaded 2-core machine.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "client/session/session.h"
#include "core/logging.h"
#include "core/node_def_util.h"
#include "core/process_settings.h"
#include "core/tensor_eigen.h"
#include "proto/graph.pb.h"
#include "testing/local_cluster.h"
#include "worker/rpc/grpc_worker.h"
#include "worker/rpc/tensor_chunks.h"

namespace overseer {
namespace {

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";

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
  SetNodeAttr(AddNode(g, "shape" + suffix, "Shape", {"read" + suffix}, kTask1), "T", DT_FLOAT);
}

struct Size {
  std::string name;
  int64_t bytes;
  // Seconds of transfers per round (0: one transfer) and kept rounds.
  double window_seconds;
  int rounds;
};

double GbPerSecond(int64_t bytes, double seconds) { return bytes / seconds / 1e9; }

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  const std::vector<Size> sizes = {{"1MiB", int64_t{1} << 20, 0.3, 7},
                                   {"64MiB", int64_t{64} << 20, 0.3, 7},
                                   {"1GiB", int64_t{1} << 30, 0, 5}};
  bench::RawServer raw(argv0);
  bench::RawChannelOptions worker_channel;
  worker_channel.stream_window_bytes = kWorkerStreamWindowBytes;
  worker_channel.bdp_probe = true;
  const std::unique_ptr<bench::RawClient> grpc = raw.NewClient(worker_channel);

  // Two clusters of two workers: the first as deployed on one host (the workers share
  // it, so tensors take the local transfer socket), the second with the socket off, so
  // every tensor crosses the gRPC stream as between hosts.
  GraphDef graph;
  for (const Size& size : sizes) AddTransfer(&graph, size.name, size.bytes / 4);
  struct Cluster {
    std::unique_ptr<test::LocalCluster> cluster;
    std::unique_ptr<Session> session;
  };
  auto start = [&](std::vector<std::string> worker_flags) {
    test::LocalClusterOptions options;
    options.num_ps = 0;
    options.num_workers = 2;
    options.worker_flags = std::move(worker_flags);
    auto cluster = test::LocalCluster::Start(options);
    CHECK(cluster.ok()) << cluster.status();
    SessionOptions session_options;
    session_options.target = (*cluster)->master_target();
    auto session = NewSession(session_options);
    CHECK(session.ok()) << session.status();
    const absl::Status created = (*session)->Create(graph);
    CHECK(created.ok()) << created;
    return Cluster{*std::move(cluster), *std::move(session)};
  };
  Cluster local = start({});
  Cluster streamed = start({"--local_transfer_socket=none"});
  absl::Status s;
  // The baselines receive into memory allocated as a received tensor's (huge pages,
  // core/tensor.cc), so that they write memory of the kind the step's receiver does.
  absl::StatusOr<Tensor> dest_tensor =
      Tensor::AllocateUninitialized(DT_FLOAT, TensorShape({sizes.back().bytes / 4}));
  CHECK(dest_tensor.ok()) << dest_tensor.status();
  char* const dest = reinterpret_cast<char*>(dest_tensor->data<float>());
  std::vector<Tensor> out;
  for (const Size& size : sizes) {
    for (Cluster* c : {&local, &streamed}) {
      s = c->session->Run({}, {}, {"init" + size.name}, &out);
      CHECK(s.ok()) << s;
    }
    // GB/s of `transfer` over one round.
    auto round = [&](const std::function<void()>& transfer) {
      const double seconds = size.window_seconds > 0
                                 ? bench::MeanSecondsPerCall(transfer, size.window_seconds)
                                 : bench::SecondsOf(transfer);
      return GbPerSecond(size.bytes, seconds);
    };
    bench::Rounds rounds("recv_tensor " + size.name);
    const int tcp = rounds.Add("tcp", [&] {
      return round([&] { raw.TcpTransfer(size.bytes, kRecvTensorChunkBytes, dest); });
    });
    // One step of `c`: task 1 pulls the tensor from task 0.
    auto pull = [&](Cluster* c) {
      return round([&] {
        absl::Status run = c->session->Run({}, {"shape" + size.name + ":0"}, {}, &out);
        CHECK(run.ok()) << run;
        CHECK(out.size() == 1 && out[0].flat<int32_t>()(0) == size.bytes / 4);
      });
    };
    const int step = rounds.Add("step", [&] { return pull(&local); });
    const int stream = rounds.Add("stream", [&] { return pull(&streamed); });
    const int raw_grpc = rounds.Add("grpc", [&] {
      return round([&] { grpc->Transfer(size.bytes, kRecvTensorChunkBytes, dest); });
    });
    const int unix_stream = rounds.Add("unix", [&] {
      // In pieces as large as the source buffer (64 MiB): the worker send()s a tensor
      // in one call.
      return round([&] { raw.UnixTransfer(size.bytes, size.bytes, dest); });
    });
    rounds.Run(size.rounds);
    const std::string name = "recv_tensor.gbps_" + size.name;
    bench::PrintFigure(name, "GB/s", rounds.samples(step), rounds.samples(tcp));
    bench::PrintFigure(name + "_vs_unix", "GB/s", rounds.samples(step),
                       rounds.samples(unix_stream));
    bench::PrintFigure(name + "_vs_stream", "GB/s", rounds.samples(step), rounds.samples(stream));
    bench::PrintFigure(name + "_stream_vs_grpc", "GB/s", rounds.samples(stream),
                       rounds.samples(raw_grpc));
  }
  for (Cluster* c : {&local, &streamed}) {
    s = c->session->Close();
    CHECK(s.ok()) << s;
  }
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

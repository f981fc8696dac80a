// Benchmarks of DirectSession (./dev bench):
//   direct_session.run_overhead_us: Session::Run of a one-Const fetch, and of a
//     10-node chain, in microseconds per step; baseline: the same kernels called
//     directly, one after another, with no session or executor, on the same thread.
//   direct_session.matmul1024_gflops: a 1024x1024 float MatMul through Session::Run;
//     baseline: the same Eigen contraction on the same thread-pool device.
//   executor.fanout1000_us_per_node: a Const, 1,000 Negs of it (scalars) and their
//     AddN through Session::Run, in microseconds per node; baseline: the same kernels
//     called directly on one thread. Goal (issue 23): a ratio of at most 4.
//   executor.threads_fanout1000: the process's threads after each of those session
//     windows (no baseline; goal: at most twice the cores plus a small constant).
// Each figure and its baseline run in interleaved rounds (bench_util.h), a window of
// kOverheadWindow or kMatMulWindow seconds of calls each per round, after a warm-up
// round; values are medians of rounds, ratios medians of per-round ratios.

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "client/session/session.h"
#include "core/executor/thread_pool.h"
#include "core/logging.h"
#include "core/node_def_util.h"
#include "core/op_kernel.h"
#include "core/process_settings.h"
#include "core/tensor_eigen.h"
#include "proto/graph.pb.h"

namespace overseer {
namespace {

constexpr int kOverheadRounds = 9;
constexpr double kOverheadWindow = 0.2;
constexpr int kMatMulRounds = 7;
constexpr double kMatMulWindow = 0.5;

NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op,
                 std::vector<std::string> inputs, DataType t) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  for (auto& i : inputs) n->add_input(i);
  SetNodeAttr(n, op == "Const" ? "dtype" : "T", t);
  return n;
}

// A Const followed by `length - 1` Neg nodes.
GraphDef Chain(int length, const Tensor& value) {
  GraphDef g;
  SetNodeAttr(AddNode(&g, "n0", "Const", {}, value.dtype()), "value", value);
  for (int i = 1; i < length; ++i) {
    AddNode(&g, "n" + std::to_string(i), "Neg", {"n" + std::to_string(i - 1)}, value.dtype());
  }
  return g;
}

// Runs `graph`'s kernels in order, each on the previous one's output, with no session.
class DirectKernels {
 public:
  explicit DirectKernels(const GraphDef& graph) {
    for (const NodeDef& n : graph.node()) {
      auto k = CreateOpKernel(n);
      CHECK(k.ok()) << k.status();
      kernels_.push_back(*std::move(k));
    }
  }
  Tensor Run() {
    std::vector<TensorValue> inputs;
    for (auto& kernel : kernels_) {
      OpKernelContext::Params params;
      params.kernel = kernel.get();
      params.inputs = &inputs;
      OpKernelContext ctx(params);
      auto s = kernel->Compute(&ctx);
      CHECK(s.ok()) << s;
      inputs = std::move(*ctx.mutable_outputs());
    }
    return inputs[0].tensor;
  }

 private:
  std::vector<std::unique_ptr<OpKernel>> kernels_;
};

std::unique_ptr<Session> MakeSession(const GraphDef& graph) {
  auto session = NewSession(SessionOptions());
  CHECK(session.ok()) << session.status();
  auto s = (*session)->Create(graph);
  CHECK(s.ok()) << s;
  return *std::move(session);
}

void RunOverhead(int length, const std::string& name) {
  GraphDef graph = Chain(length, Tensor::Scalar<float>(1.0f));
  auto session = MakeSession(graph);
  const std::vector<std::string> fetches = {"n" + std::to_string(length - 1) + ":0"};
  std::vector<Tensor> outputs;
  DirectKernels direct(graph);
  bench::Rounds rounds(name);
  const int in_session = rounds.Add("session", [&] {
    return 1e6 * bench::MeanSecondsPerCall(
                     [&] {
                       auto s = session->Run({}, fetches, {}, &outputs);
                       CHECK(s.ok()) << s;
                     },
                     kOverheadWindow);
  });
  const int kernels = rounds.Add("kernels", [&] {
    return 1e6 * bench::MeanSecondsPerCall([&] { direct.Run(); }, kOverheadWindow);
  });
  rounds.Run(kOverheadRounds);
  bench::PrintFigure(name, "us", rounds.samples(in_session), rounds.samples(kernels));
}

// A Const, `width` Neg nodes of it, and an AddN of them (issue 23 §1): microseconds per
// node of a step, against the same kernels called directly (the Const, each Neg on its
// output, the AddN of theirs) on one thread; and the process's threads after the
// session's rounds.
void Fanout(int width) {
  GraphDef graph;
  SetNodeAttr(AddNode(&graph, "c", "Const", {}, DT_FLOAT), "value", Tensor::Scalar<float>(1.0f));
  std::vector<std::string> negs;
  for (int i = 0; i < width; ++i) {
    negs.push_back("neg" + std::to_string(i));
    AddNode(&graph, negs.back(), "Neg", {"c"}, DT_FLOAT);
  }
  SetNodeAttr(AddNode(&graph, "sum", "AddN", negs, DT_FLOAT), "N", static_cast<int64_t>(width));
  auto session = MakeSession(graph);
  std::vector<std::unique_ptr<OpKernel>> kernels;
  for (const NodeDef& n : graph.node()) {
    auto k = CreateOpKernel(n);
    CHECK(k.ok()) << k.status();
    kernels.push_back(*std::move(k));
  }
  auto run_kernel = [](OpKernel* kernel, std::vector<TensorValue>* inputs) {
    OpKernelContext::Params params;
    params.kernel = kernel;
    params.inputs = inputs;
    OpKernelContext ctx(params);
    auto s = kernel->Compute(&ctx);
    CHECK(s.ok()) << s;
    return std::move(ctx.mutable_outputs()->at(0));
  };
  Tensor direct_sum;
  auto direct = [&] {
    std::vector<TensorValue> none;
    std::vector<TensorValue> c = {run_kernel(kernels[0].get(), &none)};
    std::vector<TensorValue> summands;
    for (int i = 1; i <= width; ++i) summands.push_back(run_kernel(kernels[i].get(), &c));
    direct_sum = run_kernel(kernels[width + 1].get(), &summands).tensor;
  };
  std::vector<Tensor> outputs;
  const double nodes = width + 2;
  const std::string name = "executor.fanout" + std::to_string(width) + "_us_per_node";
  std::vector<double> threads;  // After each session window.
  bench::Rounds rounds(name);
  const int in_session = rounds.Add("session", [&] {
    const double us = 1e6 / nodes *
                      bench::MeanSecondsPerCall(
                          [&] {
                            auto s = session->Run({}, {"sum:0"}, {}, &outputs);
                            CHECK(s.ok()) << s;
                          },
                          kOverheadWindow);
    threads.push_back(bench::ThreadsOf(::getpid()));
    return us;
  });
  const int by_hand = rounds.Add(
      "kernels", [&] { return 1e6 / nodes * bench::MeanSecondsPerCall(direct, kOverheadWindow); });
  rounds.Run(kOverheadRounds);
  CHECK(outputs[0].scalar<float>() == -width && direct_sum.scalar<float>() == -width);
  bench::PrintFigure(name, "us", rounds.samples(in_session), rounds.samples(by_hand));
  threads.erase(threads.begin());  // The warm-up round's.
  bench::PrintFigureWithoutBaseline(
      "executor.threads_fanout" + std::to_string(width), "threads", threads,
      "threads of the benchmark process after each session window; goal <= 2 x " +
          std::to_string(DefaultMinThreads()) + " cores + a small constant");
}

void MatMulGflops() {
  constexpr int64_t kN = 1024;
  Tensor a(DT_FLOAT, TensorShape({kN, kN})), b(DT_FLOAT, TensorShape({kN, kN}));
  for (int64_t i = 0; i < kN * kN; ++i) {
    a.flat<float>()(i) = static_cast<float>(i % 7) * 0.25f;
    b.flat<float>()(i) = static_cast<float>(i % 5) * 0.5f;
  }
  GraphDef graph;
  SetNodeAttr(AddNode(&graph, "a", "Const", {}, DT_FLOAT), "value", a);
  SetNodeAttr(AddNode(&graph, "b", "Const", {}, DT_FLOAT), "value", b);
  AddNode(&graph, "product", "MatMul", {"a", "b"}, DT_FLOAT);
  auto session = MakeSession(graph);
  std::vector<Tensor> outputs;
  const double gflop = 2.0 * kN * kN * kN / 1e9;
  Tensor c(DT_FLOAT, TensorShape({kN, kN}));
  // The MatMul kernel's own contraction (core/kernels/math/matmul_op.cc).
  const Eigen::array<Eigen::IndexPair<Eigen::DenseIndex>, 1> dims = {
      Eigen::IndexPair<Eigen::DenseIndex>(1, 0)};
  const auto& device = DefaultEigenDevice();
  bench::Rounds rounds("direct_session.matmul1024_gflops");
  const int in_session = rounds.Add("session", [&] {
    return gflop / bench::MeanSecondsPerCall(
                       [&] {
                         auto s = session->Run({}, {"product:0"}, {}, &outputs);
                         CHECK(s.ok()) << s;
                       },
                       kMatMulWindow);
  });
  const int eigen = rounds.Add("eigen", [&] {
    return gflop / bench::MeanSecondsPerCall(
                       [&] {
                         c.matrix<float>().device(device) =
                             a.matrix<float>().contract(b.matrix<float>(), dims);
                       },
                       kMatMulWindow);
  });
  rounds.Run(kMatMulRounds);
  CHECK(c.Equals(outputs[0])) << "session and Eigen products differ";
  bench::PrintFigure("direct_session.matmul1024_gflops", "GFLOP/s", rounds.samples(in_session),
                     rounds.samples(eigen));
}

}  // namespace
}  // namespace overseer

int main() {
  // Measure with the settings the servers run with (docs/settings.md).
  overseer::ApplyProcessSettings();
  overseer::RunOverhead(1, "direct_session.run_overhead_us.const");
  overseer::RunOverhead(10, "direct_session.run_overhead_us.chain10");
  overseer::Fanout(1000);
  overseer::MatMulGflops();
  return 0;
}

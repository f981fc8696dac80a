// Benchmark of parameter-server training across processes (./dev bench):
//   replicated_training.steps_per_sec: training steps per second of the example
//     classifier (examples/classifier.h: 784-128-10 MLP, Adam, batches of 100) through
//     GrpcSession on a local cluster of separate processes: master_server, one ps and
//     one worker worker_server. Every variable (and so its Adam slots and updates) is
//     on /job:ps/task:0; the rest of the step runs on the worker, so each step moves
//     the weights ps->worker and the gradients worker->ps, and the batch client->master
//     ->worker. Baseline: the same graph (devices cleared) in a DirectSession in this
//     process, measured in the same run.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "client/scope.h"
#include "client/session.h"
#include "core/logging.h"
#include "examples/classifier.h"
#include "examples/mnist_data.h"
#include "proto/graph.pb.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

constexpr int64_t kBatch = 100;
constexpr int kBatches = 20;

struct Model {
  GraphDef graph;
  std::string loss, train, init;
};

Model BuildModel() {
  Scope root = Scope::NewRootScope();
  auto classifier = examples::BuildClassifier(root, examples::ClassifierOptions());
  CHECK(classifier.ok()) << classifier.status();
  Model m;
  absl::Status s = root.ToGraphDef(&m.graph);
  CHECK(s.ok()) << s;
  m.loss = classifier->loss.name();
  m.train = classifier->train.name();
  m.init = classifier->init.name();
  return m;
}

// Steps per second of `session` training on `batches` (feeds of images and labels).
double StepsPerSecond(Session* session, const Model& model,
                      const std::vector<std::pair<Tensor, Tensor>>& batches) {
  absl::Status s = session->Run({}, {}, {model.init}, nullptr);
  CHECK(s.ok()) << s;
  size_t next = 0;
  std::vector<Tensor> out;
  const double seconds = bench::SecondsPerCall(
      [&] {
        const auto& [x, y] = batches[next++ % batches.size()];
        absl::Status run =
            session->Run({{"images:0", x}, {"labels:0", y}}, {model.loss}, {model.train}, &out);
        CHECK(run.ok()) << run;
      },
      2.0, /*warmup=*/5, /*repeats=*/2);
  return 1.0 / seconds;
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

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  const examples::TrainTest data = examples::MakeSynthetic(kBatch * kBatches, 1, 1);
  std::vector<std::pair<Tensor, Tensor>> batches(kBatches);
  for (int i = 0; i < kBatches; ++i) {
    data.train.Batch(i * kBatch, kBatch, &batches[i].first, &batches[i].second);
  }
  const Model model = BuildModel();

  auto local = MakeSession("", model.graph);
  const double direct = StepsPerSecond(local.get(), model, batches);
  CHECK(local->Close().ok());

  GraphDef placed = model.graph;
  for (NodeDef& node : *placed.mutable_node()) {
    if (node.op() == "VariableV2") node.set_device("/job:ps/replica:0/task:0");
  }
  test::LocalClusterOptions options;
  options.num_ps = 1;
  options.num_workers = 1;
  auto cluster = test::LocalCluster::Start(options);
  CHECK(cluster.ok()) << cluster.status();
  auto remote = MakeSession((*cluster)->master_target(), placed);
  const double distributed = StepsPerSecond(remote.get(), model, batches);
  CHECK(remote->Close().ok());

  bench::PrintFigure("replicated_training.steps_per_sec", distributed, "steps/s", direct);
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int /*argc*/, char** argv) { return overseer::Run(argv[0]); }

// Benchmark of between-graph replicated training across processes (./dev bench):
//   replicated_training.steps_per_sec: training steps per second, summed over two
//     replicas, of the example classifier (examples/classifier.h: 784-128-10 MLP,
//     Adam, batches of 100) on a local cluster of separate processes: master_server,
//     two ps and two worker worker_servers. Each replica is a trainer thread with a
//     GrpcSession of its own whose graph places the variables (and so their Adam
//     slots and updates) round-robin over the two ps (ReplicaDeviceSetter) and every
//     other op on its own worker task, as cluster_trainer does; both update the same
//     variables. Each step moves the weights ps->worker and the gradients worker->ps,
//     and the batch client->master->worker.
//   Baseline: the same work with the same parallelism in this process: two trainer
//     threads stepping the same graph (no devices) in one DirectSession, whose
//     variables they share.
//   sync_replicas.steps_per_sec: global steps per second of the same two replicas on the
//     same cluster training synchronously (SyncReplicasOptimizer, each update the mean
//     of both replicas' gradients, so a global step takes two batches; the chief's
//     aggregation runs in a thread of its own as the hook runs it).
//   Baseline: global steps per second of asynchronous training on the same cluster
//     (each replica's step is a global step), interleaved.
// All train in interleaved windows of kWindowSeconds (bench_util.h): value and baseline
// are the medians of kRounds windows, the ratio the median of per-round ratios.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/multiprocess.h"
#include "client/graph/device_setter.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"
#include "client/session/session.h"
#include "client/training/sync_replicas_optimizer.h"
#include "core/logging.h"
#include "core/process_settings.h"
#include "examples/classifier.h"
#include "examples/mnist_data.h"
#include "proto/graph.pb.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

constexpr int64_t kBatch = 100;
constexpr int kBatches = 20;
constexpr int kReplicas = 2;
constexpr int kRounds = 7;
constexpr double kWindowSeconds = 1.5;

struct Model {
  GraphDef graph;
  std::string loss, train, init;
  // Synchronous training only: the global step, the local step's initialisers, the
  // chief's aggregation op, its initial tokens and the op cancelling its takes.
  std::string global_step, local_init, chief_init, take_op, sync_op, init_tokens, cancel_takes;
};

// The classifier; with `worker` >= 0, placed for replica `worker` of a cluster with
// kReplicas ps tasks; with `sync`, trained synchronously.
Model BuildModel(int worker, bool sync = false) {
  Scope root = Scope::NewRootScope();
  examples::ClassifierOptions options;
  std::unique_ptr<ReplicaDeviceSetter> setter;
  if (worker >= 0) {
    ReplicaDeviceSetterOptions setter_options;
    setter_options.num_ps_tasks = kReplicas;
    setter_options.worker_device = absl::StrCat("/job:worker/task:", worker);
    auto created = ReplicaDeviceSetter::Create(setter_options);
    CHECK(created.ok()) << created.status();
    setter = std::make_unique<ReplicaDeviceSetter>(*std::move(created));
    options.device_setter = setter.get();
  }
  if (sync) options.replicas_to_aggregate = kReplicas;
  auto classifier = examples::BuildClassifier(root, options);
  CHECK(classifier.ok()) << classifier.status();
  Model m;
  if (sync) {
    SyncReplicasOptimizer& opt = *classifier->sync_replicas;
    m.global_step = classifier->global_step.value.name();
    m.local_init = LocalVariablesInitializer(root).name();
    m.chief_init = opt.chief_init_op().name();
    m.take_op = opt.take_op().name();
    m.sync_op = opt.sync_op().name();
    auto tokens = opt.GetInitTokensOp(root);
    CHECK(tokens.ok()) << tokens.status();
    m.init_tokens = tokens->name();
    m.cancel_takes = opt.chief_queue_runner()->cancel_op_name();
  }
  absl::Status s = root.ToGraphDef(&m.graph);
  CHECK(s.ok()) << s;
  m.loss = classifier->loss.name();
  m.train = classifier->train.name();
  m.init = classifier->init.name();
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

using Batches = std::vector<std::pair<Tensor, Tensor>>;

// One window of training: the steps the replicas ran and its seconds.
struct Window {
  int64_t steps;
  double seconds;
};

// kReplicas threads, thread r training `sessions[r]` (one session may serve several) on
// `batches` for kWindowSeconds.
// `on_stop` (may be null) runs once the threads are told to stop, before they are joined.
Window TrainWindow(const std::vector<Session*>& sessions, const Model& model,
                   const Batches& batches, const std::function<void()>& on_stop = nullptr) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> steps{0};
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int r = 0; r < kReplicas; ++r) {
    threads.emplace_back([&, r] {
      std::vector<Tensor> out;
      for (size_t next = r; !stop.load(); next += kReplicas) {
        const auto& [x, y] = batches[next % batches.size()];
        absl::Status run =
            sessions[r]->Run({{"images:0", x}, {"labels:0", y}}, {model.loss}, {model.train}, &out);
        CHECK(run.ok()) << run;
        steps.fetch_add(1);
      }
    });
  }
  absl::SleepFor(absl::Seconds(kWindowSeconds));
  stop = true;
  if (on_stop) on_stop();
  for (std::thread& t : threads) t.join();
  return {steps.load(), absl::ToDoubleSeconds(absl::Now() - start)};
}

// The replicas' steps per second (each a global step when training asynchronously).
double StepsPerSecond(const std::vector<Session*>& sessions, const Model& model,
                      const Batches& batches) {
  const Window w = TrainWindow(sessions, model, batches);
  return w.steps / w.seconds;
}

// The global step of the cluster, read through `session`.
int64_t GlobalStep(Session* session, const Model& model) {
  std::vector<Tensor> out;
  absl::Status s = session->Run({}, {model.global_step}, {}, &out);
  CHECK(s.ok()) << s;
  return out[0].scalar<int64_t>();
}

// Global steps per second of synchronous training: thread r steps `sessions[r]` for
// kWindowSeconds while the chief's aggregation thread (started by the caller) applies.
double SyncGlobalStepsPerSecond(const std::vector<Session*>& sessions, const Model& model,
                                const Batches& batches) {
  const int64_t before = GlobalStep(sessions[0], model);
  // A replica that stops first may leave the other waiting for a token that needs its
  // gradient: one token per replica releases every last step (fresh, so harmless).
  const Window w = TrainWindow(sessions, model, batches, [&] {
    absl::Status s = sessions[0]->Run({}, {}, {model.init_tokens}, nullptr);
    CHECK(s.ok()) << s;
  });
  return (GlobalStep(sessions[0], model) - before) / w.seconds;
}

int Run(const char* argv0) {
  bench::UseRunfilesOf(argv0);
  const examples::TrainTest data = examples::MakeSynthetic(kBatch * kBatches, 1, 1);
  Batches batches(kBatches);
  for (int i = 0; i < kBatches; ++i) {
    data.train.Batch(i * kBatch, kBatch, &batches[i].first, &batches[i].second);
  }

  const Model local_model = BuildModel(-1);
  auto local = MakeSession("", local_model.graph);
  absl::Status s = local->Run({}, {}, {local_model.init}, nullptr);
  CHECK(s.ok()) << s;

  test::LocalClusterOptions options;
  options.num_ps = kReplicas;
  options.num_workers = kReplicas;
  auto cluster = test::LocalCluster::Start(options);
  CHECK(cluster.ok()) << cluster.status();
  std::vector<Model> replica_models;
  std::vector<std::unique_ptr<Session>> replicas;
  for (int r = 0; r < kReplicas; ++r) {
    replica_models.push_back(BuildModel(r));
    replicas.push_back(MakeSession((*cluster)->master_target(), replica_models.back().graph));
  }
  // The variables live on the ps: one initialisation serves both replicas.
  s = replicas[0]->Run({}, {}, {replica_models[0].init}, nullptr);
  CHECK(s.ok()) << s;
  CHECK(replica_models[0].train == replica_models[1].train &&
        replica_models[0].train == local_model.train);

  // Synchronous replicas on the same cluster (the same variables): each sets its local
  // step; the chief sets the accumulators' steps, puts the first tokens in and runs the
  // aggregation in a thread until its takes are cancelled at the end.
  std::vector<Model> sync_models;
  std::vector<std::unique_ptr<Session>> sync_replicas;
  for (int r = 0; r < kReplicas; ++r) {
    sync_models.push_back(BuildModel(r, /*sync=*/true));
    sync_replicas.push_back(MakeSession((*cluster)->master_target(), sync_models.back().graph));
    s = sync_replicas[r]->Run({}, {}, {sync_models[r].local_init}, nullptr);
    CHECK(s.ok()) << s;
  }
  const Model& sync_model = sync_models[0];
  for (const std::string& op : {sync_model.chief_init, sync_model.init_tokens}) {
    s = sync_replicas[0]->Run({}, {}, {op}, nullptr);
    CHECK(s.ok()) << s;
  }
  std::thread aggregation([&] {
    for (;;) {
      // As the chief's queue runner: the take step, then the update step.
      absl::Status run = sync_replicas[0]->Run({}, {}, {sync_model.take_op}, nullptr);
      if (absl::IsCancelled(run)) return;
      CHECK(run.ok()) << run;
      run = sync_replicas[0]->Run({}, {}, {sync_model.sync_op}, nullptr);
      CHECK(run.ok()) << run;
    }
  });

  bench::Rounds rounds("replicated_training.steps_per_sec");
  const int direct = rounds.Add("direct", [&] {
    return StepsPerSecond({local.get(), local.get()}, local_model, batches);
  });
  const int distributed = rounds.Add("cluster", [&] {
    return StepsPerSecond({replicas[0].get(), replicas[1].get()}, replica_models[0], batches);
  });
  const int sync = rounds.Add("sync", [&] {
    return SyncGlobalStepsPerSecond({sync_replicas[0].get(), sync_replicas[1].get()}, sync_model,
                                    batches);
  });
  rounds.Run(kRounds);
  s = sync_replicas[0]->Run({}, {}, {sync_model.cancel_takes}, nullptr);
  CHECK(s.ok()) << s;
  aggregation.join();
  for (auto& session : sync_replicas) CHECK(session->Close().ok());
  for (auto& session : replicas) CHECK(session->Close().ok());
  CHECK(local->Close().ok());

  bench::PrintFigure("replicated_training.steps_per_sec", "steps/s", rounds.samples(distributed),
                     rounds.samples(direct));
  // Asynchronous global steps are the cluster rounds' replica steps.
  bench::PrintFigure("sync_replicas.steps_per_sec", "global steps/s", rounds.samples(sync),
                     rounds.samples(distributed));
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int /*argc*/, char** argv) {
  // Measure with the settings the servers run with (docs/settings.md).
  overseer::ApplyProcessSettings();
  return overseer::Run(argv[0]);
}

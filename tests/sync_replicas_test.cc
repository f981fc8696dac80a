// SyncReplicasOptimizer on a real cluster in one process: a ps Server and two worker
// Servers (real gRPC servers on loopback ports they bind), a chief and a non-chief each
// training in its own thread through MonitoredTrainingSession with the optimizer's hook.
// Both compute the gradient of the same full batch, so if each global step applies the
// mean of exactly two gradients of the current variables (stale ones dropped), the
// variables after N global steps are those of N steps of plain gradient descent, which
// the test computes in-process and compares bit for bit.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/graph/ops.h"
#include "client/graph/ops_queue.h"
#include "client/graph/optimizers.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "client/session/job.h"
#include "client/training/basic_session_run_hooks.h"
#include "client/training/monitored_training_session.h"
#include "client/training/sync_replicas_optimizer.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "server/server.h"

namespace overseer {
namespace {

constexpr float kLearningRate = 0.05f;

struct Model {
  Variable w, b, global_step;
  Output loss;
};

// Least squares on fixed data: y = x w + b. Variables on `ps` (if not empty).
Model BuildModel(const Scope& root, const std::string& ps, const std::string& worker) {
  Model m;
  const Scope on_ps = ps.empty() ? root : root.WithDevice(ps);
  const Scope ops_scope = worker.empty() ? root : root.WithDevice(worker);
  m.w = MakeVariable(on_ps.WithOpName("w"), Tensor::FromVector<float>({0.5f, -0.25f}, {2, 1}));
  m.b = MakeVariable(on_ps.WithOpName("b"), Tensor::Scalar(0.1f));
  m.global_step = *CreateGlobalStep(on_ps);
  Output x =
      ops::Const(ops_scope, Tensor::FromVector<float>({1, 2, 3, -1, 0.5f, 4, -2, 1}, {4, 2}));
  Output y = ops::Const(ops_scope, Tensor::FromVector<float>({1, -2, 3, 0.5f}, {4, 1}));
  Output pred = ops::Add(ops_scope, ops::MatMul(ops_scope, x, m.w.value), m.b.value);
  Output err = ops::Sub(ops_scope, pred, y);
  m.loss = ops::Mean(ops_scope.WithOpName("loss"), ops::Mul(ops_scope, err, err), {0, 1});
  return m;
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements());
}

// `steps` steps of plain gradient descent in-process: w then b, flattened.
std::vector<float> PlainDescent(int64_t steps) {
  Scope root = Scope::NewRootScope();
  Model m = BuildModel(root, "", "");
  GradientDescentOptimizer gd(kLearningRate);
  auto train = gd.Minimize(root, m.loss, &m.global_step);
  EXPECT_TRUE(train.ok()) << train.status();
  auto session = ClientSession::Create(root);
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  EXPECT_TRUE((*session)->Run({}, {}, {GlobalVariablesInitializer(root)}, &out).ok());
  for (int64_t i = 0; i < steps; ++i) EXPECT_TRUE((*session)->Run({}, {}, {*train}, &out).ok());
  EXPECT_TRUE((*session)->Run({m.w.value, m.b.value}, &out).ok());
  std::vector<float> values = Values(out[0]);
  values.push_back(out[1].scalar<float>());
  return values;
}

class SyncReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions ps_options;
    ASSERT_TRUE(ps_options.cluster.AddJob("ps", {"127.0.0.1:1"}).ok());
    ASSERT_TRUE(ps_options.cluster.AddJob("worker", {"127.0.0.1:1", "127.0.0.1:1"}).ok());
    ps_options.job_name = "ps";
    ps_options.port = 0;
    auto ps = Server::Create(ps_options);
    ASSERT_TRUE(ps.ok()) << ps.status();
    ps_ = std::move(*ps);
    const std::string ps_address = *ps_->cluster().TaskAddress("ps", 0);
    for (int task = 0; task < 2; ++task) {
      ServerOptions options;
      ASSERT_TRUE(options.cluster.AddJob("ps", {ps_address}).ok());
      ASSERT_TRUE(options.cluster.AddJob("worker", {"127.0.0.1:1", "127.0.0.1:1"}).ok());
      options.job_name = "worker";
      options.task_index = task;
      options.port = 0;
      auto worker = Server::Create(options);
      ASSERT_TRUE(worker.ok()) << worker.status();
      workers_.push_back(std::move(*worker));
    }
  }
  void TearDown() override {
    for (auto& worker : workers_) worker->Stop();
    if (ps_ != nullptr) ps_->Stop();
  }

  // One worker's training until global step `last_step`; returns its end.
  absl::Status Train(int task, int64_t last_step, int replicas_to_aggregate) {
    Scope root = Scope::NewRootScope();
    Model m = BuildModel(root, "/job:ps/task:0", absl::StrCat("/job:worker/task:", task));
    GradientDescentOptimizer gd(kLearningRate);
    SyncReplicasOptimizer sync(&gd, replicas_to_aggregate, 2);
    ASSIGN_OR_RETURN(Operation train,
                     sync.Minimize(root.WithDevice(absl::StrCat("/job:worker/task:", task)), m.loss,
                                   m.global_step));
    ASSIGN_OR_RETURN(std::unique_ptr<SessionRunHook> sync_hook, sync.MakeSessionRunHook(task == 0));
    StopAtStepHookOptions stop_options;
    stop_options.last_step = last_step;
    ASSIGN_OR_RETURN(std::unique_ptr<StopAtStepHook> stop, StopAtStepHook::Create(stop_options));
    MonitoredTrainingSessionOptions options;
    options.master = workers_[task]->target();
    options.is_chief = task == 0;
    options.hooks = {stop.get(), sync_hook.get()};
    options.save_summaries_steps = 0;
    options.signal_job_done_on_end = false;  // The test reads the model afterwards.
    options.clock = Clock::Real();
    // Each worker's master knows the ps and itself only (the classic shape).
    options.config.add_device_filters("/job:ps");
    options.config.add_device_filters(absl::StrCat("/job:worker/task:", task));
    ASSIGN_OR_RETURN(std::unique_ptr<MonitoredSession> session,
                     MonitoredTrainingSession(root, options));
    while (!session->ShouldStop()) {
      absl::Status s = session->Run({}, {}, {train}, nullptr);
      if (absl::IsOutOfRange(s)) break;  // The chief closed the token queue: done.
      RETURN_IF_ERROR(s);
    }
    return session->Close();
  }

  // w, b and the global step, read on the chief's server.
  std::vector<float> ReadModel(int64_t* global_step) {
    Scope root = Scope::NewRootScope();
    Model m = BuildModel(root, "/job:ps/task:0", "/job:worker/task:0");
    SessionOptions options;
    options.target = workers_[0]->target();
    options.config.add_device_filters("/job:ps");
    options.config.add_device_filters("/job:worker/task:0");
    auto session = ClientSession::Create(root, options);
    EXPECT_TRUE(session.ok()) << session.status();
    std::vector<Tensor> out;
    EXPECT_TRUE((*session)->Run({m.w.value, m.b.value, m.global_step.value}, &out).ok());
    std::vector<float> values = Values(out[0]);
    values.push_back(out[1].scalar<float>());
    *global_step = out[2].scalar<int64_t>();
    EXPECT_TRUE((*session)->Close().ok());
    return values;
  }

  std::unique_ptr<Server> ps_;
  std::vector<std::unique_ptr<Server>> workers_;
};

TEST_F(SyncReplicasTest, EachGlobalStepAppliesTheMeanOfTwoFreshGradients) {
  constexpr int64_t kLastStep = 30;
  absl::Status chief, non_chief;
  std::thread chief_thread([&] { chief = Train(0, kLastStep, 2); });
  std::thread non_chief_thread([&] { non_chief = Train(1, kLastStep, 2); });
  chief_thread.join();
  non_chief_thread.join();
  ASSERT_TRUE(chief.ok()) << chief;
  ASSERT_TRUE(non_chief.ok()) << non_chief;

  int64_t global_step = 0;
  std::vector<float> trained = ReadModel(&global_step);
  EXPECT_GE(global_step, kLastStep);
  std::vector<float> expected = PlainDescent(global_step);
  ASSERT_EQ(trained.size(), expected.size());
  for (size_t i = 0; i < trained.size(); ++i) {
    EXPECT_EQ(trained[i], expected[i])
        << "parameter " << i << " after " << global_step << " global steps";
  }
  // And it learned: not the initial values.
  EXPECT_NE(trained, PlainDescent(0));
}

TEST_F(SyncReplicasTest, BadCountsAndUseBeforeApplyAreErrors) {
  Scope root = Scope::NewRootScope();
  Model m = BuildModel(root, "", "");
  GradientDescentOptimizer gd(kLearningRate);
  SyncReplicasOptimizer zero(&gd, 0);
  EXPECT_EQ(zero.Minimize(root, m.loss, m.global_step).status().code(),
            absl::StatusCode::kInvalidArgument);
  SyncReplicasOptimizer early(&gd, 2, 4);
  EXPECT_EQ(early.MakeSessionRunHook(true).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(early.Minimize(root, m.loss, m.global_step).ok());
  EXPECT_EQ(early.Minimize(root, m.loss, m.global_step).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // 4 replicas aggregating 2 need at least 2 initial tokens.
  EXPECT_EQ(early.MakeSessionRunHook(true, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(early.MakeSessionRunHook(true, 2).ok());
  EXPECT_TRUE(early.MakeSessionRunHook(false).ok());
}

}  // namespace
}  // namespace overseer

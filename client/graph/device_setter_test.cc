#include "client/graph/device_setter.h"

#include <functional>
#include <string>

#include "client/graph/ops.h"
#include "client/graph/optimizers.h"
#include "client/graph/variables.h"
#include "client/graph/variables_init.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

ReplicaDeviceSetter MakeSetter(int num_ps, PsStrategy strategy,
                               std::string worker = "/job:worker/task:1") {
  ReplicaDeviceSetterOptions options;
  options.num_ps_tasks = num_ps;
  options.strategy = strategy;
  options.worker_device = std::move(worker);
  auto setter = ReplicaDeviceSetter::Create(options);
  EXPECT_TRUE(setter.ok()) << setter.status();
  return *std::move(setter);
}

std::string DeviceOf(const Scope& root, const std::string& node) {
  Node* n = root.graph()->FindNode(node);
  EXPECT_NE(n, nullptr) << node;
  return n == nullptr ? "" : n->def().device();
}

TEST(ReplicaDeviceSetterTest, RoundRobinCyclesOverThePsTasks) {
  ReplicaDeviceSetter setter = MakeSetter(2, PsStrategy::kRoundRobin);
  EXPECT_EQ(setter.NextPsDevice(TensorShape({1000})), "/job:ps/task:0");
  EXPECT_EQ(setter.NextPsDevice(TensorShape({1})), "/job:ps/task:1");
  EXPECT_EQ(setter.NextPsDevice(TensorShape({1})), "/job:ps/task:0");
  EXPECT_EQ(setter.BytesPerTask(), (std::vector<int64_t>{4004, 4}));
}

TEST(ReplicaDeviceSetterTest, GreedyPutsEachVariableOnTheLightestTask) {
  ReplicaDeviceSetter setter = MakeSetter(3, PsStrategy::kGreedyBySize);
  EXPECT_EQ(setter.NextPsDevice(TensorShape({100, 10})), "/job:ps/task:0");  // 4000 B
  EXPECT_EQ(setter.NextPsDevice(TensorShape({10})), "/job:ps/task:1");       // 40 B
  EXPECT_EQ(setter.NextPsDevice(TensorShape({10, 10}), DT_DOUBLE), "/job:ps/task:2");
  EXPECT_EQ(setter.NextPsDevice(TensorShape({20})), "/job:ps/task:1");   // 40 < 800
  EXPECT_EQ(setter.NextPsDevice(TensorShape({500})), "/job:ps/task:1");  // 120 < 800
  EXPECT_EQ(setter.NextPsDevice(TensorShape({1})), "/job:ps/task:2");    // 800 < 2120
  EXPECT_EQ(setter.BytesPerTask(), (std::vector<int64_t>{4000, 2120, 804}));
}

TEST(ReplicaDeviceSetterTest, BadOptionsAreInvalidArgument) {
  ReplicaDeviceSetterOptions options;
  options.num_ps_tasks = 0;
  auto setter = ReplicaDeviceSetter::Create(options);
  EXPECT_EQ(setter.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(setter.status().message().find("num_ps_tasks"), std::string::npos);
  options.num_ps_tasks = 1;
  options.ps_job = "";
  EXPECT_EQ(ReplicaDeviceSetter::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Builds a model with Adam through `model`, each variable's scope given by
// `for_variable`, and checks that the variables land on the ps tasks (round-robin over
// two) with everything that reads or updates them in place (initializer, snapshot,
// optimizer slots and updates), and the other ops on the worker.
void ExpectShardedModel(
    const ReplicaDeviceSetter& setter, const Scope& root, const Scope& model,
    const std::function<Scope(const Scope&, TensorShape, DataType)>& for_variable) {
  Output x = ops::Placeholder(model.WithOpName("x"), DT_FLOAT, PartialShape({-1, 3}));
  Variable w = MakeVariable(for_variable(model.WithOpName("w"), TensorShape({3, 2}), DT_FLOAT),
                            GlorotUniformInitializer(TensorShape({3, 2}), 1));
  Variable b = MakeVariable(for_variable(model.WithOpName("b"), TensorShape({2}), DT_FLOAT),
                            ZerosInitializer(TensorShape({2})));
  auto step = GetOrCreateGlobalStep(for_variable(model, TensorShape(), DT_INT64));
  ASSERT_TRUE(step.ok()) << step.status();
  Output y = ops::Add(model.WithOpName("y"), ops::MatMul(model, x, w.value), b.value);
  Output loss = ops::Mean(model.WithOpName("loss"), ops::Square(model, y), {0, 1});
  AdamOptimizer adam(0.01);
  auto train = adam.Minimize(model.WithOpName("train"), loss, &*step);
  ASSERT_TRUE(train.ok()) << train.status();
  ASSERT_TRUE(root.ok()) << root.status();

  EXPECT_EQ(DeviceOf(root, "w"), "/job:ps/task:0");
  EXPECT_EQ(DeviceOf(root, "b"), "/job:ps/task:1");
  EXPECT_EQ(DeviceOf(root, "global_step"), "/job:ps/task:0");
  EXPECT_EQ(setter.BytesPerTask(), (std::vector<int64_t>{24 + 8, 8}));
  for (const char* node : {"w/Assign", "w/read", "w/Adam", "w/Adam_1"}) {
    EXPECT_EQ(DeviceOf(root, node), "/job:ps/task:0") << node;
  }
  for (const char* node : {"b/Assign", "b/read", "b/Adam", "b/Adam_1"}) {
    EXPECT_EQ(DeviceOf(root, node), "/job:ps/task:1") << node;
  }
  for (const char* node : {"x", "y", "loss"}) {
    EXPECT_EQ(DeviceOf(root, node), "/job:worker/task:1") << node;
  }
  // Every ApplyAdam sits with its variable.
  int applies = 0;
  for (int i = 0; i < root.graph()->num_nodes(); ++i) {
    const Node* n = root.graph()->node(i);
    if (n->op() != "ApplyAdam") continue;
    ++applies;
    const std::string var = n->input(0).node()->name();
    EXPECT_EQ(n->def().device(), DeviceOf(root, var)) << n->name();
  }
  EXPECT_EQ(applies, 2);
}

TEST(ReplicaDeviceSetterTest, ShardsAModelAndItsOptimizerState) {
  ReplicaDeviceSetter setter = MakeSetter(2, PsStrategy::kRoundRobin);
  Scope root = Scope::NewRootScope();
  ExpectShardedModel(setter, root, setter.ForOps(root),
                     [&](const Scope& scope, TensorShape shape, DataType dtype) {
                       return setter.ForVariable(scope, shape, dtype);
                     });
}

// TensorFlow's `with tf.device(replica_device_setter(...))`: one device function for
// the whole model places the same way, with no per-variable call.
TEST(ReplicaDeviceSetterTest, DeviceFunctionShardsAModelAndItsOptimizerState) {
  ReplicaDeviceSetter setter = MakeSetter(2, PsStrategy::kRoundRobin);
  Scope root = Scope::NewRootScope();
  ExpectShardedModel(setter, root, root.WithDeviceFunction(setter.DeviceFunction()),
                     [](const Scope& scope, TensorShape, DataType) { return scope; });
}

// A device the code requests is merged in (its components win), as TensorFlow's
// merge_devices; without merging it is kept as it is.
TEST(ReplicaDeviceSetterTest, DeviceFunctionMergesRequestedDevices) {
  ReplicaDeviceSetter setter = MakeSetter(2, PsStrategy::kRoundRobin);
  Scope root = Scope::NewRootScope();
  Scope model = root.WithDeviceFunction(setter.DeviceFunction());
  MakeVariable(model.WithDevice("/task:1").WithOpName("on_task1"), 1.0f);
  MakeVariable(model.WithDevice("/job:worker/task:0").WithOpName("local"), 1.0f);
  MakeVariable(model.WithOpName("next"), 1.0f);
  ops::Const(model.WithDevice("/device:CPU:0").WithOpName("c"), 1.0f);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(DeviceOf(root, "on_task1"), "/job:ps/task:1");
  EXPECT_EQ(DeviceOf(root, "local"), "/job:worker/task:0");  // Another job: no ps task.
  EXPECT_EQ(DeviceOf(root, "next"), "/job:ps/task:1");       // The second ps op.
  EXPECT_EQ(DeviceOf(root, "c"), "/job:worker/task:1/device:CPU:0");

  ReplicaDeviceSetterOptions keep;
  keep.num_ps_tasks = 2;
  keep.merge_devices = false;
  ReplicaDeviceSetter keeping = *ReplicaDeviceSetter::Create(keep);
  Scope other = Scope::NewRootScope();
  Scope kept = other.WithDeviceFunction(keeping.DeviceFunction());
  ops::Const(kept.WithDevice("/device:CPU:0").WithOpName("c"), 1.0f);
  ops::Const(kept.WithOpName("d"), 1.0f);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(DeviceOf(other, "c"), "/device:CPU:0");
  EXPECT_EQ(DeviceOf(other, "d"), "/job:worker");
}

TEST(ReplicaDeviceSetterTest, DeviceFunctionBalancesBySize) {
  ReplicaDeviceSetter setter = MakeSetter(2, PsStrategy::kGreedyBySize);
  Scope root = Scope::NewRootScope();
  Scope model = root.WithDeviceFunction(setter.DeviceFunction());
  MakeVariable(model.WithOpName("big"), ZerosInitializer(TensorShape({100})));
  MakeVariable(model.WithOpName("small"), ZerosInitializer(TensorShape({10})));
  MakeVariable(model.WithOpName("small2"), ZerosInitializer(TensorShape({10})));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(DeviceOf(root, "big"), "/job:ps/task:0");
  EXPECT_EQ(DeviceOf(root, "small"), "/job:ps/task:1");
  EXPECT_EQ(DeviceOf(root, "small2"), "/job:ps/task:1");
  EXPECT_EQ(setter.BytesPerTask(), (std::vector<int64_t>{400, 80}));
}

// TensorFlow's replica_device_setter(cluster=...): the ps count from the cluster, and
// no setter for a cluster without ps tasks.
TEST(ReplicaDeviceSetterTest, ForClusterCountsThePsTasks) {
  auto cluster = ClusterSpec::Parse("ps=h:1,h:2,h:3;worker=h:4");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto setter = ReplicaDeviceSetter::ForCluster(*cluster, {});
  ASSERT_TRUE(setter.ok()) << setter.status();
  ASSERT_TRUE(setter->has_value());
  EXPECT_EQ((*setter)->options().num_ps_tasks, 3);
  auto workers_only = ClusterSpec::Parse("worker=h:4");
  ASSERT_TRUE(workers_only.ok());
  auto none = ReplicaDeviceSetter::ForCluster(*workers_only, {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  ReplicaDeviceSetterOptions bad;
  bad.worker_device = "job:worker";  // No leading slash.
  EXPECT_EQ(ReplicaDeviceSetter::ForCluster(*cluster, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReplicaDeviceSetterTest, EmptyWorkerDeviceLeavesOpsUnconstrained) {
  ReplicaDeviceSetter setter = MakeSetter(1, PsStrategy::kRoundRobin, "");
  Scope root = Scope::NewRootScope();
  ops::Const(setter.ForOps(root).WithOpName("c"), 1.0f);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(DeviceOf(root, "c"), "");
}

}  // namespace
}  // namespace overseer

// Between-graph replicated training across real processes: 2 ps + 2 worker
// worker_servers and a master_server (LocalCluster), and two replicated_trainer
// processes, a chief and a non-chief, each with its own GrpcSession. Variables are
// sharded over both ps tasks and the global step is shared; both trainers reach the
// local run's accuracy and the global step counts both trainers' steps.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/graph/device_setter.h"
#include "client/session/client_session.h"
#include "examples/classifier.h"
#include "gtest/gtest.h"
#include "testing/local_cluster.h"
#include "testing/trainer_process.h"

namespace overseer {
namespace {

constexpr char kTrainer[] = "tests/replicated_trainer";
constexpr int kSteps = 300;

TEST(ReplicatedTrainingTest, ChiefAndNonChiefTrainTheShardedClassifier) {
  test::LocalClusterOptions options;
  options.num_ps = 2;
  options.num_workers = 2;
  auto cluster = test::LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string master = "--master=" + (*cluster)->master_target();
  const std::string steps = absl::StrCat("--steps=", kSteps);

  // The non-chief starts first, so it must wait for the chief's initialisation.
  TrainerProcess non_chief(kTrainer, "trainer_1", {master, "--task_index=1", steps});
  TrainerProcess chief(kTrainer, "trainer_0", {master, "--task_index=0", "--is_chief", steps});
  ASSERT_EQ(chief.Wait(), 0) << chief.Log();
  ASSERT_EQ(non_chief.Wait(), 0) << non_chief.Log();

  std::printf("chief:\n%snon-chief:\n%s", chief.Log().c_str(), non_chief.Log().c_str());
  EXPECT_GE(chief.Value("final accuracy"), 0.97) << chief.Log();
  EXPECT_GE(non_chief.Value("final accuracy"), 0.97) << non_chief.Log();
  // Each trainer saw at least its own steps when it finished.
  EXPECT_GE(chief.Value("global_step"), kSteps) << chief.Log();
  EXPECT_GE(non_chief.Value("global_step"), kSteps) << non_chief.Log();

  // A third client with the same sharded graph sees every step of both trainers, and
  // both ps tasks hold variables.
  ReplicaDeviceSetterOptions setter_options;
  setter_options.num_ps_tasks = 2;
  setter_options.worker_device = "/job:worker/task:0";
  auto setter = ReplicaDeviceSetter::Create(setter_options);
  ASSERT_TRUE(setter.ok());
  Scope root = Scope::NewRootScope();
  examples::ClassifierOptions model_options;
  model_options.hidden_units = 64;
  model_options.device_setter = &*setter;
  auto model = examples::BuildClassifier(root, model_options);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<int64_t> bytes = setter->BytesPerTask();
  EXPECT_GT(bytes[0], 0);
  EXPECT_GT(bytes[1], 0);
  SessionOptions session_options;
  session_options.target = (*cluster)->master_target();
  auto session = ClientSession::Create(root, session_options);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  auto s = (*session)->Run({model->global_step.value}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<int64_t>(), 2 * kSteps);
}

}  // namespace
}  // namespace overseer

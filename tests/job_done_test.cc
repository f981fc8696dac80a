// The end of a job over real processes (LocalCluster): SignalJobDone through the
// master tells every task; with --exit_when_job_done every ps and worker drains and
// exits 0, without it they log it and serve on; a task that cannot be told is named.

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/session/job.h"
#include "client/session/session.h"
#include "core/node_def_util.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

std::unique_ptr<test::LocalCluster> StartCluster(std::vector<std::string> worker_flags) {
  test::LocalClusterOptions options;
  options.num_ps = 2;
  options.num_workers = 1;
  options.worker_flags = std::move(worker_flags);
  auto cluster = test::LocalCluster::Start(options);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? *std::move(cluster) : nullptr;
}

// Runs a one-Const step on worker 0 through the master.
absl::Status RunStep(const test::LocalCluster& cluster) {
  GraphDef graph;
  NodeDef* c = graph.add_node();
  c->set_name("c");
  c->set_op("Const");
  c->set_device("/job:worker/replica:0/task:0");
  SetNodeAttr(c, "dtype", DT_FLOAT);
  SetNodeAttr(c, "value", Tensor::Scalar<float>(1.0f));
  SessionOptions options;
  options.target = cluster.master_target();
  auto session = NewSession(options);
  if (!session.ok()) return session.status();
  if (absl::Status s = (*session)->Create(graph); !s.ok()) return s;
  std::vector<Tensor> out;
  return (*session)->Run({}, {"c:0"}, {}, &out);
}

const std::vector<std::pair<std::string, int>> kTasks = {{"ps", 0}, {"ps", 1}, {"worker", 0}};

TEST(JobDoneTest, WithExitWhenJobDoneEveryTaskExitsZero) {
  auto cluster = StartCluster({"--exit_when_job_done"});
  ASSERT_NE(cluster, nullptr);
  ASSERT_TRUE(RunStep(*cluster).ok());
  const absl::Status done = SignalJobDone(cluster->master_target(), "training finished");
  ASSERT_TRUE(done.ok()) << done;
  for (const auto& [job, index] : kTasks) {
    absl::StatusOr<int> code = cluster->WaitForExit(job, index, absl::Seconds(60));
    ASSERT_TRUE(code.ok()) << job << ":" << index << " " << code.status();
    EXPECT_EQ(*code, 0) << job << ":" << index;
    const std::string log = cluster->Log(job, index);
    EXPECT_TRUE(absl::StrContains(log, "job done: training finished")) << log;
    EXPECT_TRUE(absl::StrContains(log, "exiting 0 (the job is done")) << log;
  }
  EXPECT_TRUE(cluster->IsRunning("master", 0));
}

TEST(JobDoneTest, WithoutTheFlagTasksServeOn) {
  auto cluster = StartCluster({});
  ASSERT_NE(cluster, nullptr);
  ASSERT_TRUE(SignalJobDone(cluster->master_target()).ok());
  for (const auto& [job, index] : kTasks) {
    EXPECT_TRUE(cluster->IsRunning(job, index)) << job << ":" << index;
    const std::string log = cluster->Log(job, index);
    EXPECT_TRUE(absl::StrContains(log, "serving on (--exit_when_job_done is off)")) << log;
  }
  EXPECT_TRUE(RunStep(*cluster).ok());
}

TEST(JobDoneTest, ATaskThatCannotBeToldIsNamed) {
  auto cluster = StartCluster({"--exit_when_job_done"});
  ASSERT_NE(cluster, nullptr);
  ASSERT_TRUE(cluster->Stop("ps", 1, SIGKILL).ok());
  const absl::Status done = SignalJobDone(cluster->master_target());
  EXPECT_EQ(done.code(), absl::StatusCode::kUnavailable) << done;
  EXPECT_TRUE(absl::StrContains(done.message(), "/job:ps/replica:0/task:1")) << done;
  // The others were told and exited.
  for (const auto& [job, index] : {std::make_pair("ps", 0), std::make_pair("worker", 0)}) {
    absl::StatusOr<int> code = cluster->WaitForExit(job, index, absl::Seconds(60));
    ASSERT_TRUE(code.ok()) << job << ":" << index << " " << code.status();
    EXPECT_EQ(*code, 0);
  }
}

TEST(JobDoneTest, TargetForms) {
  EXPECT_TRUE(SignalJobDone("").ok());
  EXPECT_EQ(SignalJobDone("localhost:2222").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SignalJobDone("grpc://").code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

// Direct steps across real processes (client/session/grpc_session.h): a master_server,
// a ps and a worker worker_server started by LocalCluster, driven through GrpcSession.
// A step whose signature runs on one task and writes nothing runs there without the
// master after its first step; the master's /metrics say which steps it ran
// (overseer_master_steps_total) and how many the client reports it ran itself
// (overseer_master_direct_steps_total, told with the client's next step through the
// master).
//
// No timing is asserted: a direct route lasts up to a second, so on a slow machine more
// steps may go through the master; the tests count both kinds together and ask only
// that some went direct.

#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/session/grpc_session.h"
#include "core/clock.h"
#include "core/node_def_util.h"
#include "core/rpc/testing/http_get.h"
#include "core/tensor_eigen.h"
#include "gtest/gtest.h"
#include "master/placement_test_util.h"
#include "master/rpc/grpc_master.h"
#include "testing/fake_clock.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

using test::AddBinary;
using test::AddConst;
using test::AddNode;
using test::AddVariable;

constexpr char kWorker[] = "/job:worker/replica:0/task:0";
constexpr int kSteps = 100;

// w on the ps, set to 3 by "init" and raised by 1 by "bump"; a queue "q" of floats on the
// ps, "enqueue" putting 1 in it and "dequeue" taking one out; on the worker, y = x * 2 for
// a fed float x of shape [2].
GraphDef Model() {
  GraphDef g;
  AddVariable(&g, "w", "/job:ps");
  AddConst(&g, "w0", 3, "/job:ps");
  AddBinary(&g, "init", "Assign", "w", "w0");
  AddConst(&g, "one", 1, "/job:ps");
  AddBinary(&g, "bump", "AssignAdd", "w", "one");
  NodeDef* q = AddNode(&g, "q", "FIFOQueue", {}, "/job:ps");
  SetNodeAttr(q, "component_types", std::vector<DataType>{DT_FLOAT});
  NodeDef* enqueue = AddNode(&g, "enqueue", "QueueEnqueue", {"q", "one"}, "/job:ps");
  SetNodeAttr(enqueue, "Tcomponents", std::vector<DataType>{DT_FLOAT});
  NodeDef* dequeue = AddNode(&g, "dequeue", "QueueDequeue", {"q"}, "/job:ps");
  SetNodeAttr(dequeue, "component_types", std::vector<DataType>{DT_FLOAT});
  NodeDef* x = AddNode(&g, "x", "Placeholder", {}, kWorker);
  SetNodeAttr(x, "dtype", DT_FLOAT);
  SetNodeAttr(x, "shape", PartialShape({2}));
  AddConst(&g, "two", 2, kWorker);
  AddBinary(&g, "y", "Mul", "x", "two", kWorker);
  return g;
}

// The master of `address`, except that the DirectSteps it gives name another
// incarnation of their task than the one serving at their address: as when the
// address means another process from where the client runs.
class MisdirectingMaster : public GrpcMaster {
 public:
  explicit MisdirectingMaster(const std::string& address)
      : GrpcMaster(NewMasterChannel(address), absl::Seconds(60)) {}

  absl::Status RunStep(const RunStepRequest& request, RunStepResponse* response) override {
    absl::Status s = GrpcMaster::RunStep(request, response);
    if (response->has_direct()) {
      response->mutable_direct()->set_incarnation(response->direct().incarnation() + 1);
    }
    return s;
  }
};

class DirectStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::LocalClusterOptions options;
    options.master_metrics = true;
    auto cluster = test::LocalCluster::Start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    SessionOptions session_options;
    session_options.target = cluster_->master_target();
    auto session = GrpcSession::Connect(session_options);
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = *std::move(session);
    ASSERT_TRUE(session_->Create(Model()).ok());
    ASSERT_TRUE(session_->Run({}, {}, {"init"}, nullptr).ok());
  }

  // A counter of the master's /metrics page (-1 if it cannot be read).
  double MasterCounter(const std::string& name) {
    return test::UnlabelledMetric(cluster_->master_metrics_port(), name);
  }

  float ReadW() {
    std::vector<Tensor> out;
    absl::Status s = session_->Run({}, {"w:0"}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() && out.size() == 1 ? out[0].scalar<float>() : -1;
  }

  std::unique_ptr<test::LocalCluster> cluster_;
  std::unique_ptr<GrpcSession> session_;
};

TEST_F(DirectStepTest, ReadsRunOnTheirTaskAndTheMasterCountsThem) {
  const double steps_before = MasterCounter("overseer_master_steps_total");
  const double direct_before = MasterCounter("overseer_master_direct_steps_total");
  ASSERT_GE(steps_before, 0);
  ASSERT_GE(direct_before, 0);
  for (int i = 0; i < kSteps; ++i) ASSERT_EQ(ReadW(), 3.0f) << "step " << i;
  // Evaluations with feeds: each value fed reaches the task.
  for (int i = 0; i < kSteps; ++i) {
    Tensor x(DT_FLOAT, TensorShape({2}));
    x.flat<float>()(0) = static_cast<float>(i);
    x.flat<float>()(1) = -1;
    std::vector<Tensor> out;
    absl::Status s = session_->Run({{"x", x}}, {"y:0"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flat<float>()(0), 2.0f * i);
    EXPECT_EQ(out[0].flat<float>()(1), -2.0f);
  }
  // A write goes through the master, and tells it how many steps ran directly.
  ASSERT_TRUE(session_->Run({}, {}, {"bump"}, nullptr).ok());
  const double through_master = MasterCounter("overseer_master_steps_total") - steps_before - 1;
  const double direct = MasterCounter("overseer_master_direct_steps_total") - direct_before;
  EXPECT_EQ(through_master + direct, 2 * kSteps);
  EXPECT_GT(direct, 0) << "no step ran directly";
  EXPECT_EQ(ReadW(), 4.0f);
}

TEST_F(DirectStepTest, AnAddressThatAnswersAsAnotherTaskIsNeverSentSteps) {
  SessionOptions options;
  options.target = cluster_->master_target();
  GrpcSession misled(options, std::make_unique<MisdirectingMaster>(cluster_->master_address()),
                     Clock::Real());
  ASSERT_TRUE(misled.Create(Model()).ok());
  const double steps_before = MasterCounter("overseer_master_steps_total");
  for (int i = 0; i < kSteps; ++i) {
    std::vector<Tensor> out;
    absl::Status s = misled.Run({}, {"w:0"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(out[0].scalar<float>(), 3.0f);
  }
  ASSERT_TRUE(misled.Run({}, {}, {"bump"}, nullptr).ok());
  EXPECT_EQ(MasterCounter("overseer_master_steps_total") - steps_before, kSteps + 1);
  EXPECT_EQ(MasterCounter("overseer_master_direct_steps_total"), 0);
  EXPECT_TRUE(misled.Close().ok());
}

TEST_F(DirectStepTest, WritesWaitsAndTracedStepsGoThroughTheMaster) {
  const double steps_before = MasterCounter("overseer_master_steps_total");
  for (int i = 0; i < kSteps; ++i) ASSERT_TRUE(session_->Run({}, {}, {"bump"}, nullptr).ok());
  // A queue's kernels may wait (a dequeue from an empty queue blocks until its session
  // is aborted or cancelled, which only the master knows).
  for (int i = 0; i < kSteps; ++i) ASSERT_TRUE(session_->Run({}, {}, {"enqueue"}, nullptr).ok());
  for (int i = 0; i < kSteps; ++i) {
    std::vector<Tensor> out;
    ASSERT_TRUE(session_->Run({}, {"dequeue:0"}, {}, &out).ok());
    ASSERT_EQ(out[0].scalar<float>(), 1.0f);
  }
  RunOptions traced;
  traced.set_trace_level(RunOptions::FULL_TRACE);
  for (int i = 0; i < kSteps; ++i) {
    std::vector<Tensor> out;
    RunMetadata metadata;
    ASSERT_TRUE(session_->Run(traced, {}, {"w:0"}, {}, &out, &metadata).ok());
    ASSERT_EQ(out[0].scalar<float>(), 3.0f + kSteps);
    EXPECT_GT(metadata.step_stats().dev_stats_size(), 0) << "step " << i;
  }
  EXPECT_EQ(MasterCounter("overseer_master_steps_total") - steps_before, 4 * kSteps);
  EXPECT_EQ(MasterCounter("overseer_master_direct_steps_total"), 0);
}

TEST_F(DirectStepTest, AWrongFeedIsRefusedAsThroughTheMaster) {
  Tensor x(DT_FLOAT, TensorShape({2}));
  std::vector<Tensor> out;
  // Enough steps that the route is learnt and the channel to the worker connected.
  for (int i = 0; i < kSteps; ++i) ASSERT_TRUE(session_->Run({{"x", x}}, {"y:0"}, {}, &out).ok());
  absl::Status wrong_dtype = session_->Run({{"x", Tensor::Scalar<int32_t>(1)}}, {"y:0"}, {}, &out);
  EXPECT_EQ(wrong_dtype.code(), absl::StatusCode::kInvalidArgument) << wrong_dtype;
  EXPECT_TRUE(absl::StrContains(wrong_dtype.message(), "x:0")) << wrong_dtype;
  absl::Status wrong_shape =
      session_->Run({{"x", Tensor(DT_FLOAT, TensorShape({3}))}}, {"y:0"}, {}, &out);
  EXPECT_EQ(wrong_shape.code(), absl::StatusCode::kInvalidArgument) << wrong_shape;
  // The session goes on.
  EXPECT_TRUE(session_->Run({{"x", x}}, {"y:0"}, {}, &out).ok());
}

TEST_F(DirectStepTest, ATaskThatRestartedEndsTheSessionWithAborted) {
  for (int i = 0; i < kSteps; ++i) ASSERT_EQ(ReadW(), 3.0f);
  ASSERT_TRUE(cluster_->Stop("ps", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->Restart("ps", 0).ok());
  // Whether the route still held (the task no longer knows the session, so the step
  // goes on to the master) or not, the master finds the restart, for every step.
  for (int i = 0; i < 3; ++i) {
    std::vector<Tensor> out;
    absl::Status s = session_->Run({}, {"w:0"}, {}, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << "step " << i << ": " << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "restarted and lost its state")) << s;
  }
}

// A session aborted by one task's restart ends its direct steps on the others at once,
// not when their route expires: the master has those tasks forget the session. The
// client's clock stands still, so its routes never expire by time.
TEST_F(DirectStepTest, AnAbortedSessionEndsItsDirectStepsOnOtherTasksAtOnce) {
  test::FakeClock clock(absl::Now());
  SessionOptions options;
  options.target = cluster_->master_target();
  GrpcSession session(
      options,
      std::make_unique<GrpcMaster>(NewMasterChannel(cluster_->master_address()), absl::Seconds(60)),
      &clock);
  ASSERT_TRUE(session.Create(Model()).ok());
  const double direct_before = MasterCounter("overseer_master_direct_steps_total");
  std::vector<Tensor> out;
  for (int i = 0; i < kSteps; ++i) ASSERT_TRUE(session.Run({}, {"w:0"}, {}, &out).ok());
  // Through the master (a write), which hears how many reads went direct.
  ASSERT_TRUE(session.Run({}, {}, {"bump"}, nullptr).ok());
  ASSERT_GT(MasterCounter("overseer_master_direct_steps_total"), direct_before)
      << "no read went direct: nothing to end";
  ASSERT_TRUE(cluster_->Stop("worker", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->Restart("worker", 0).ok());
  // A traced step goes through the master, which finds the worker restarted.
  RunOptions traced;
  traced.set_trace_level(RunOptions::FULL_TRACE);
  Tensor x(DT_FLOAT, TensorShape({2}));
  RunMetadata metadata;
  absl::Status on_worker = session.Run(traced, {{"x", x}}, {"y:0"}, {}, &out, &metadata);
  ASSERT_EQ(on_worker.code(), absl::StatusCode::kAborted) << on_worker;
  // The read's route to the ps still holds; the ps no longer knows the session, and
  // the error says why the session ended, as the master's.
  absl::Status read = session.Run({}, {"w:0"}, {}, &out);
  EXPECT_EQ(read.code(), absl::StatusCode::kAborted) << read;
  EXPECT_TRUE(absl::StrContains(read.message(), std::string(kWorker) + " (incarnation")) << read;
}

}  // namespace
}  // namespace overseer

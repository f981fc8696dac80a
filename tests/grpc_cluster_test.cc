// Parameter-server training and failures across real processes: a master_server, a ps
// and a worker worker_server started by LocalCluster, driven through GrpcSession.

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/session/session.h"
#include "core/node_def_util.h"
#include "gtest/gtest.h"
#include "master/placement_test_util.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

using test::AddBinary;
using test::AddConst;
using test::AddNode;
using test::AddVariable;

constexpr char kPs[] = "/job:ps/replica:0/task:0";

// Fits w in y = w * x to (x=2, y=6) by gradient descent: w lives on the ps, the loss
// and gradient are computed on the worker, and the update crosses back to the ps.
GraphDef LinearModel() {
  GraphDef g;
  AddVariable(&g, "w", "/job:ps");
  AddConst(&g, "w0", 0);
  AddBinary(&g, "init", "Assign", "w", "w0");
  AddConst(&g, "x", 2, "/job:worker");
  AddConst(&g, "y", 6, "/job:worker");
  AddConst(&g, "lr_2x", 0.1f * 2 * 2, "/job:worker");  // lr * d(err^2)/d(err) * x.
  AddBinary(&g, "pred", "Mul", "w", "x", "/job:worker");
  AddBinary(&g, "err", "Sub", "pred", "y", "/job:worker");
  AddBinary(&g, "loss", "Mul", "err", "err", "/job:worker");
  AddBinary(&g, "step", "Mul", "err", "lr_2x", "/job:worker");
  AddBinary(&g, "train", "AssignSub", "w", "step");
  return g;
}

class GrpcClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = test::LocalCluster::Start(test::LocalClusterOptions());
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }

  std::unique_ptr<Session> NewSessionWith(int64_t timeout_ms = 0) {
    SessionOptions options;
    options.target = cluster_->master_target();
    options.config.set_operation_timeout_in_ms(timeout_ms);
    auto session = NewSession(options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

  float Loss(Session* session) {
    std::vector<Tensor> out;
    absl::Status s = session->Run({}, {"loss:0"}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out[0].scalar<float>() : -1;
  }

  std::unique_ptr<test::LocalCluster> cluster_;
};

TEST_F(GrpcClusterTest, PsTrainingAcrossProcessesReducesTheLoss) {
  auto session = NewSessionWith();
  {
    absl::Status created = session->Create(LinearModel());
    ASSERT_TRUE(created.ok()) << created;
  }
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  const float first = Loss(session.get());
  EXPECT_FLOAT_EQ(first, 36);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(session->Run({}, {}, {"train"}, &out).ok());
  const float last = Loss(session.get());
  EXPECT_LT(last, first * 1e-3) << "loss " << first << " -> " << last;
  // A second session (another trainer) sees the trained variable on the ps.
  auto other = NewSessionWith();
  ASSERT_TRUE(other->Create(LinearModel()).ok());
  EXPECT_FLOAT_EQ(Loss(other.get()), last);
}

TEST_F(GrpcClusterTest, RestartedPsAbortsTheSessionNamingTheTask) {
  auto session = NewSessionWith();
  {
    absl::Status created = session->Create(LinearModel());
    ASSERT_TRUE(created.ok()) << created;
  }
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(cluster_->Stop("ps", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->Restart("ps", 0).ok());
  absl::Status s = session->Run({}, {"loss:0"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), kPs)) << s;
  // A new session works again (and must re-initialise the lost variable).
  auto fresh = NewSessionWith();
  ASSERT_TRUE(fresh->Create(LinearModel()).ok());
  ASSERT_TRUE(fresh->Run({}, {}, {"init"}, &out).ok());
  EXPECT_FLOAT_EQ(Loss(fresh.get()), 36);
}

TEST_F(GrpcClusterTest, DeadTaskIsUnavailableWithinTheDeadline) {
  auto session = NewSessionWith(/*timeout_ms=*/10000);
  {
    absl::Status created = session->Create(LinearModel());
    ASSERT_TRUE(created.ok()) << created;
  }
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(cluster_->Stop("ps", 0, SIGKILL).ok());
  absl::Status s = session->Run({}, {"loss:0"}, {}, &out);
  EXPECT_TRUE(s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kAborted)
      << s;
  EXPECT_TRUE(absl::StrContains(s.message(), kPs)) << s;
}

TEST_F(GrpcClusterTest, MasterSigtermExitsZero) {
  auto session = NewSessionWith();
  {
    absl::Status created = session->Create(LinearModel());
    ASSERT_TRUE(created.ok()) << created;
  }
  auto code = cluster_->Stop("master", 0, SIGTERM);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << cluster_->Log("master", 0);
}

}  // namespace
}  // namespace overseer

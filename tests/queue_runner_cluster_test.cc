// QueueRunner and Coordinator over GrpcSession, against a real master_server, ps and
// worker started by LocalCluster: the queues live on the servers, every enqueue is a
// RunStep through the master, and the coordinator's stop wakes an enqueue blocked on
// the ps.

#include <memory>
#include <string>
#include <vector>

#include "client/graph/ops.h"
#include "client/session/client_session.h"
#include "client/training/coordinator.h"
#include "client/training/queue_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

constexpr char kPs[] = "/job:ps/replica:0/task:0";
constexpr char kWorker[] = "/job:worker/replica:0/task:0";

class QueueRunnerClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cluster = test::LocalCluster::Start(test::LocalClusterOptions());
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    SessionOptions options;
    options.target = cluster_->master_target();
    auto session = ClientSession::Create(root_, options);
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = *std::move(session);
  }

  // A float queue on `device`, named after the test so that tests sharing the servers'
  // resources do not share queues.
  Output Queue(const std::string& name, const std::string& device, int64_t capacity) {
    ops::FIFOQueueAttrs attrs;
    attrs.capacity = capacity;
    attrs.shapes = {PartialShape::Scalar()};
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    return ops::FIFOQueue(root_.WithDevice(device).WithOpName(test + "_" + name), {DT_FLOAT},
                          attrs);
  }
  void Run(const Operation& op) {
    std::vector<Tensor> out;
    absl::Status s = session_->Run({}, {}, {op}, &out);
    ASSERT_TRUE(s.ok()) << s;
  }

  static test::LocalCluster* cluster_;
  Scope root_ = Scope::NewRootScope();
  std::unique_ptr<ClientSession> session_;
};

test::LocalCluster* QueueRunnerClusterTest::cluster_ = nullptr;

TEST_F(QueueRunnerClusterTest, RealDequeueEnqueueAcrossTasks) {
  Output q0 = Queue("q0", kPs, 3);
  Operation enqueue0 = ops::QueueEnqueue(root_.WithDevice(kPs), q0, {10.0f});
  Operation close0 = ops::QueueClose(root_.WithDevice(kPs), q0);
  Output q1 = Queue("q1", kWorker, 30);
  Operation enqueue1 = ops::QueueEnqueue(
      root_.WithDevice(kWorker), q1, {ops::QueueDequeue(root_.WithDevice(kPs), q0, {DT_FLOAT})[0]});
  std::vector<Output> dequeue1 = ops::QueueDequeue(root_.WithDevice(kWorker), q1, {DT_FLOAT});
  absl::StatusOr<std::unique_ptr<QueueRunner>> runner = QueueRunner::Create(root_, q1, {enqueue1});
  ASSERT_TRUE(runner.ok()) << runner.status();
  auto threads = (*runner)->CreateThreads(session_.get());
  ASSERT_TRUE(threads.ok()) << threads.status();
  Run(enqueue0);
  Run(enqueue0);
  Run(close0);
  for (const auto& t : *threads) t->WaitUntilFinished(Clock::Real(), absl::InfiniteFuture());
  EXPECT_TRUE((*runner)->exceptions_raised().empty());
  std::vector<Tensor> out;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(session_->Run(dequeue1, &out).ok());
    EXPECT_FLOAT_EQ(out[0].scalar<float>(), 10.0f);
  }
  // The runner's last thread closed q1 when q0 ran dry.
  absl::Status s = session_->Run(dequeue1, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
}

TEST_F(QueueRunnerClusterTest, StopWakesAnEnqueueBlockedOnTheServer) {
  Output queue = Queue("queue", kPs, 2);
  Operation enqueue = ops::QueueEnqueue(root_.WithDevice(kPs), queue, {1.0f});
  Output size = ops::QueueSize(root_.WithDevice(kPs), queue);
  absl::StatusOr<std::unique_ptr<QueueRunner>> runner =
      QueueRunner::Create(root_, queue, {enqueue});
  ASSERT_TRUE(runner.ok()) << runner.status();
  Coordinator coord;
  ASSERT_TRUE((*runner)->CreateThreads(session_.get(), &coord).ok());
  // Once the queue is full, the runner's next RunStep blocks inside the ps.
  std::vector<Tensor> out;
  do {
    ASSERT_TRUE(session_->Run({size}, &out).ok());
  } while (out[0].scalar<int32_t>() < 2);
  ASSERT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join({}, absl::Seconds(60)).ok());
}

TEST_F(QueueRunnerClusterTest, EnqueueErrorsReachTheCoordinator) {
  Output queue = Queue("queue", kWorker, 10);
  absl::StatusOr<std::unique_ptr<QueueRunner>> runner =
      QueueRunner::Create(root_, queue, {ops::NoOp(root_.WithDevice(kWorker))});
  ASSERT_TRUE(runner.ok()) << runner.status();
  QueueRunnerDef def = (*runner)->ToProto();
  def.set_enqueue_op_name(0, "no_such_op");
  auto bad = QueueRunner::FromProto(def);
  ASSERT_TRUE(bad.ok()) << bad.status();
  Coordinator coord;
  ASSERT_TRUE((*bad)->CreateThreads(session_.get(), &coord).ok());
  absl::Status joined = coord.Join({}, absl::Seconds(60));
  EXPECT_FALSE(joined.ok());
  EXPECT_THAT(joined.message(), HasSubstr("no_such_op"));
}

TEST_F(QueueRunnerClusterTest, StartQueueRunnersFromTheGraphsCollection) {
  Output source = Queue("source", kPs, -1);
  Run(ops::QueueEnqueueMany(root_.WithDevice(kPs), source,
                            {Tensor::FromVector<float>({1, 2, 3, 4, 5})}));
  Run(ops::QueueClose(root_.WithDevice(kPs), source));
  Output queue = Queue("queue", kWorker, 10);
  Operation enqueue =
      ops::QueueEnqueue(root_.WithDevice(kWorker), queue,
                        {ops::QueueDequeue(root_.WithDevice(kPs), source, {DT_FLOAT})[0]});
  absl::StatusOr<std::unique_ptr<QueueRunner>> runner =
      QueueRunner::Create(root_, queue, {enqueue});
  ASSERT_TRUE(runner.ok()) << runner.status();
  AddQueueRunner(root_.graph(), **runner);
  Coordinator coord;
  absl::StatusOr<StartedQueueRunners> started = StartQueueRunners(session_.get(), &coord);
  ASSERT_TRUE(started.ok()) << started.status();
  std::vector<Output> dequeue = ops::QueueDequeue(root_.WithDevice(kWorker), queue, {DT_FLOAT});
  std::vector<Tensor> out;
  float sum = 0;
  absl::Status s;
  while ((s = session_->Run(dequeue, &out)).ok()) sum += out[0].scalar<float>();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_FLOAT_EQ(sum, 15.0f);
  ASSERT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join({}, absl::Seconds(60)).ok());
}

}  // namespace
}  // namespace overseer

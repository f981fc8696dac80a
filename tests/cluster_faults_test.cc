// Faults across real processes (LocalCluster: a master, a ps and a worker): a worker
// killed (kill -9) while a step is blocked on it, the same worker restarted (a new
// incarnation), a worker that stops answering (SIGSTOP) under a step without timeout,
// an unknown session handle, and bad graphs and feeds, which are refused while the
// servers keep serving; and a step that runs longer than the client's rpc_timeout.

#include <signal.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/graph/ops.h"
#include "client/graph/scope.h"
#include "client/session/grpc_session.h"
#include "client/session/session.h"
#include "core/tensor_eigen.h"
#include "gtest/gtest.h"
#include "master/rpc/grpc_master.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

constexpr char kWorker[] = "/job:worker/replica:0/task:0";

// "wait" enqueues to the shared queue "started" and then blocks dequeuing the shared
// queue "gate", which nothing fills; its value crosses to the ps ("y"). Another session
// dequeuing "started" ("probe") returns once such a step is running on the worker.
// "x" (float [2] placeholder) feeds "x_plus_1" on the ps; "c" is a constant on the worker;
// "open" enqueues to "gate", which lets one blocked "wait" through.
GraphDef FaultsGraph() {
  Scope root = Scope::NewRootScope();
  Scope worker = root.WithDevice("/job:worker/task:0");
  Scope ps = root.WithDevice("/job:ps/task:0");
  ops::FIFOQueueAttrs started_attrs;
  started_attrs.shared_name = "started";
  ops::FIFOQueueAttrs gate_attrs;
  gate_attrs.shared_name = "gate";
  Output started = ops::FIFOQueue(worker.WithOpName("started"), {DT_FLOAT}, started_attrs);
  Output gate = ops::FIFOQueue(worker.WithOpName("gate"), {DT_FLOAT}, gate_attrs);
  Operation signal = ops::QueueEnqueue(worker.WithOpName("signal"), started, {1.0f});
  std::vector<Output> wait = ops::QueueDequeue(
      worker.WithOpName("wait").WithControlDependencies({signal}), gate, {DT_FLOAT});
  ops::Add(ps.WithOpName("y"), wait[0], 1.0f);
  ops::QueueDequeue(worker.WithOpName("probe"), started, {DT_FLOAT});
  ops::QueueEnqueue(worker.WithOpName("open"), gate, {2.0f});
  ops::Const(worker.WithOpName("c"), 3.0f);
  Output x = ops::Placeholder(worker.WithOpName("x"), DT_FLOAT, PartialShape({2}));
  ops::Add(ps.WithOpName("x_plus_1"), x, 1.0f);
  GraphDef def;
  EXPECT_TRUE(root.ToGraphDef(&def).ok()) << root.status();
  return def;
}

class ClusterFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override { StartCluster(test::LocalClusterOptions()); }

  void StartCluster(test::LocalClusterOptions options) {
    auto cluster = test::LocalCluster::Start(std::move(options));
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }

  // A session with FaultsGraph created; null on failure. `timeout_ms` 0: steps have no
  // timeout.
  std::unique_ptr<Session> NewSessionWith(int64_t timeout_ms = 30000,
                                          GrpcSessionOptions grpc_options = {}) {
    SessionOptions options;
    options.target = cluster_->master_target();
    options.config.set_operation_timeout_in_ms(timeout_ms);
    auto session = GrpcSession::Connect(options, grpc_options);
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return nullptr;
    absl::Status created = (*session)->Create(FaultsGraph());
    EXPECT_TRUE(created.ok()) << created;
    return created.ok() ? std::unique_ptr<Session>(*std::move(session)) : nullptr;
  }

  // Starts the step that fetches "y" on a thread (its status lands in *status, its
  // value in *out) and returns once the step is blocked on "gate" (`probe` dequeued
  // what it enqueued to "started").
  static std::thread StartBlockedStep(Session* session, Session* probe, absl::Status* status,
                                      std::vector<Tensor>* out) {
    std::thread step([=] { *status = session->Run({}, {"y:0"}, {}, out); });
    std::vector<Tensor> signalled;
    absl::Status probed = probe->Run({}, {"probe:0"}, {}, &signalled);
    EXPECT_TRUE(probed.ok()) << probed;
    return step;
  }

  // Whether the master sends its RunGraph calls to task job:0, as it runs now, over the
  // task's local call socket (worker/rpc/local_calls.h), whose address names its pid.
  bool MasterCallsLocally(const std::string& job) {
    const pid_t pid = cluster_->pid(job, 0);
    return pid > 0 && absl::StrContains(cluster_->Log("master", 0),
                                        absl::StrCat("serves @overseer-calls-", pid, "-"));
  }

  // Runs the good step (fetch "c"); OK when the cluster serves.
  static absl::Status GoodStep(Session* session) {
    std::vector<Tensor> out;
    absl::Status s = session->Run({}, {"c:0"}, {}, &out);
    if (s.ok() && out[0].scalar<float>() != 3.0f) return absl::InternalError("c != 3");
    return s;
  }

  std::unique_ptr<test::LocalCluster> cluster_;
};

TEST_F(ClusterFaultsTest, WorkerKilledMidStepThenRestartedAbortsTheSession) {
  auto session = NewSessionWith(/*timeout_ms=*/20000);
  auto probe = NewSessionWith();
  ASSERT_TRUE(session && probe);
  ASSERT_TRUE(GoodStep(session.get()).ok());
  // The blocked step's RunGraph goes over the worker's local call socket, whose
  // connection the kill ends.
  ASSERT_TRUE(MasterCallsLocally("worker"));

  absl::Status blocked;
  std::vector<Tensor> out;
  std::thread step = StartBlockedStep(session.get(), probe.get(), &blocked, &out);
  ASSERT_TRUE(cluster_->Stop("worker", 0, SIGKILL).ok());
  step.join();
  EXPECT_TRUE(blocked.code() == absl::StatusCode::kUnavailable ||
              blocked.code() == absl::StatusCode::kAborted)
      << blocked;
  EXPECT_TRUE(absl::StrContains(blocked.message(), kWorker)) << blocked;

  // The restarted worker is a new incarnation: the session that used it is aborted.
  ASSERT_TRUE(cluster_->Restart("worker", 0).ok());
  absl::Status after = GoodStep(session.get());
  EXPECT_EQ(after.code(), absl::StatusCode::kAborted) << after;
  EXPECT_TRUE(absl::StrContains(after.message(), kWorker)) << after;
  // A new session works.
  auto fresh = NewSessionWith();
  ASSERT_TRUE(fresh);
  absl::Status fresh_step = GoodStep(fresh.get());
  EXPECT_TRUE(fresh_step.ok()) << fresh_step;
  // Over gRPC first, whose reply named the new incarnation's socket.
  EXPECT_TRUE(MasterCallsLocally("worker")) << cluster_->Log("master", 0);
}

// A step without a timeout may run longer than the client's rpc_timeout (a QueueRunner's
// enqueue waiting for room, a long computation): only the step's own timeout, or a
// peer that stops answering, ends it.
TEST_F(ClusterFaultsTest, AStepWithoutTimeoutOutlivesTheClientsRpcTimeout) {
  GrpcSessionOptions impatient;
  impatient.rpc_timeout = absl::Seconds(2);
  auto session = NewSessionWith(/*timeout_ms=*/0, impatient);
  auto other = NewSessionWith();
  ASSERT_TRUE(session && other);
  absl::Status blocked;
  std::vector<Tensor> waited;
  std::thread step = StartBlockedStep(session.get(), other.get(), &blocked, &waited);
  // Twice the rpc_timeout: before, the step failed DEADLINE_EXCEEDED after 2 s.
  absl::SleepFor(absl::Seconds(4));
  ASSERT_TRUE(other->Run({}, {}, {"open"}, nullptr).ok());
  step.join();
  ASSERT_TRUE(blocked.ok()) << blocked;
  ASSERT_EQ(waited.size(), 1u);
  EXPECT_EQ(waited[0].scalar<float>(), 3.0f);  // 2 from "open", plus 1 on the ps.
}

// A worker that stops answering without closing its connections (its host froze or
// died; here SIGSTOP) under a step without timeout, whose deadlines are a day away:
// keepalive pings find it, and the step fails naming the task instead of hanging.
TEST_F(ClusterFaultsTest, AWorkerThatStopsAnsweringMidStepFailsTheStepNamingIt) {
  test::LocalClusterOptions options;
  options.master_flags = {"--keepalive_seconds=1"};
  options.worker_flags = {"--keepalive_seconds=1"};
  StartCluster(std::move(options));
  auto session = NewSessionWith(/*timeout_ms=*/0);
  auto probe = NewSessionWith();
  ASSERT_TRUE(session && probe);
  // The blocked step goes over the worker's local call socket, whose keepalive finds
  // the stopped worker.
  ASSERT_TRUE(GoodStep(session.get()).ok());
  ASSERT_TRUE(MasterCallsLocally("worker"));
  absl::Status blocked;
  std::vector<Tensor> out;
  std::thread step = StartBlockedStep(session.get(), probe.get(), &blocked, &out);
  const pid_t worker = cluster_->pid("worker", 0);
  ASSERT_GT(worker, 0);
  ASSERT_EQ(::kill(worker, SIGSTOP), 0);
  step.join();
  ::kill(worker, SIGCONT);
  EXPECT_TRUE(blocked.code() == absl::StatusCode::kUnavailable ||
              blocked.code() == absl::StatusCode::kAborted)
      << blocked;
  EXPECT_TRUE(absl::StrContains(blocked.message(), kWorker)) << blocked;
}

TEST_F(ClusterFaultsTest, UnknownSessionHandleIsAborted) {
  GrpcMaster master(NewMasterChannel(cluster_->master_address()), absl::Seconds(30));
  RunStepRequest request;
  request.set_session_handle("no-such-session");
  request.add_fetch("c:0");
  RunStepResponse response;
  absl::Status s = master.RunStep(request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "no-such-session")) << s;

  // A master restart forgets every session: the client's next step is ABORTED.
  auto session = NewSessionWith();
  ASSERT_TRUE(session);
  ASSERT_TRUE(GoodStep(session.get()).ok());
  ASSERT_TRUE(cluster_->Stop("master", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->Restart("master", 0).ok());
  absl::Status after = GoodStep(session.get());
  EXPECT_EQ(after.code(), absl::StatusCode::kAborted) << after;
}

TEST_F(ClusterFaultsTest, BadGraphsAreInvalidArgumentNamingTheNode) {
  auto good = NewSessionWith();
  ASSERT_TRUE(good);
  SessionOptions options;
  options.target = cluster_->master_target();

  GraphDef dangling = FaultsGraph();
  NodeDef* bad_input = dangling.add_node();
  bad_input->set_name("bad_input");
  bad_input->set_op("Identity");
  bad_input->add_input("no_such_node:0");
  (*bad_input->mutable_attr())["T"].set_type(DT_FLOAT);

  GraphDef unknown_op = FaultsGraph();
  NodeDef* mystery = unknown_op.add_node();
  mystery->set_name("mystery");
  mystery->set_op("NoSuchOpAnywhere");

  GraphDef missing_attr = FaultsGraph();
  NodeDef* no_dtype = missing_attr.add_node();
  no_dtype->set_name("no_dtype");
  no_dtype->set_op("Placeholder");

  const std::vector<std::pair<GraphDef, std::string>> cases = {
      {dangling, "bad_input"}, {unknown_op, "mystery"}, {missing_attr, "no_dtype"}};
  for (const auto& [graph, node] : cases) {
    auto session = NewSession(options);
    ASSERT_TRUE(session.ok());
    absl::Status s = (*session)->Create(graph);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << node << ": " << s;
    EXPECT_TRUE(absl::StrContains(s.message(), node)) << s;
    // Extending a good session with the bad node is refused the same way.
    GraphDef extension;
    *extension.add_node() = graph.node(graph.node_size() - 1);
    s = good->Extend(extension);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << node << ": " << s;
    EXPECT_TRUE(absl::StrContains(s.message(), node)) << s;
    // The servers keep serving.
    absl::Status ok = GoodStep(good.get());
    EXPECT_TRUE(ok.ok()) << ok;
  }
}

TEST_F(ClusterFaultsTest, WrongFeedDtypeOrShapeIsInvalidArgumentNamingTheNode) {
  auto session = NewSessionWith();
  ASSERT_TRUE(session);
  std::vector<Tensor> out;
  const std::vector<Tensor> bad_feeds = {Tensor::FromVector<int32_t>({1, 2}),
                                         Tensor::FromVector<float>({1, 2, 3})};
  for (const Tensor& feed : bad_feeds) {
    absl::Status s = session->Run({{"x:0", feed}}, {"x_plus_1:0"}, {}, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "'x")) << s;
    // The session and the servers keep working.
    absl::Status ok =
        session->Run({{"x:0", Tensor::FromVector<float>({1, 2})}}, {"x_plus_1:0"}, {}, &out);
    ASSERT_TRUE(ok.ok()) << ok;
    EXPECT_EQ(out[0].vec<float>()(1), 3.0f);
  }
}

}  // namespace
}  // namespace overseer

// The master over real in-process workers (the Worker logic with every kernel, _Send
// and _Recv included): placement, partitioning and cross-task Send/Recv end to end.

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/cluster/cluster_spec.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "gtest/gtest.h"
#include "master/cluster_worker_cache.h"
#include "master/master.h"
#include "master/placement_test_util.h"
#include "master/step_runner.h"
#include "worker/worker.h"
#include "worker/worker_cache.h"

namespace overseer {
namespace {

using test::AddBinary;
using test::AddConst;
using test::AddNode;
using test::AddVariable;

constexpr char kPs[] = "/job:ps/replica:0/task:0";
constexpr char kWorker[] = "/job:worker/replica:0/task:0";

// Reaches the current ps and worker objects, so a test can replace (restart) one.
class Tasks {
 public:
  std::unique_ptr<LocalWorkerCache> NewCache() {
    auto cache = std::make_unique<LocalWorkerCache>();
    cache->Add(kPs, &ps_proxy_);
    cache->Add(kWorker, &worker_proxy_);
    return cache;
  }

  // Forwards to whatever worker is current.
  class Proxy : public WorkerInterface {
   public:
    std::unique_ptr<Worker> target;
#define OVERSEER_FORWARD(Method, Req, Resp) \
  absl::Status Method(const Req& q, Resp* r) override { return target->Method(q, r); }
    OVERSEER_FORWARD(GetStatus, GetStatusRequest, GetStatusResponse)
    OVERSEER_FORWARD(CreateWorkerSession, CreateWorkerSessionRequest, CreateWorkerSessionResponse)
    OVERSEER_FORWARD(DeleteWorkerSession, DeleteWorkerSessionRequest, DeleteWorkerSessionResponse)
    OVERSEER_FORWARD(RegisterGraph, RegisterGraphRequest, RegisterGraphResponse)
    OVERSEER_FORWARD(DeregisterGraph, DeregisterGraphRequest, DeregisterGraphResponse)
    OVERSEER_FORWARD(RunGraph, RunGraphRequest, RunGraphResponse)
    OVERSEER_FORWARD(CleanupAll, CleanupAllRequest, CleanupAllResponse)
    OVERSEER_FORWARD(JobDone, JobDoneRequest, JobDoneResponse)
#undef OVERSEER_FORWARD
    absl::Status RecvTensor(const RecvTensorRequest& q, CancellationManager* c,
                            Tensor* t) override {
      ++recvs;
      return target->RecvTensor(q, c, t);
    }
    absl::Status CleanupGraph(const CleanupGraphRequest& q, CleanupGraphResponse* r) override {
      ++cleanups;
      return target->CleanupGraph(q, r);
    }
    std::atomic<int> cleanups{0};
    std::atomic<int> recvs{0};  // RecvTensor calls this task answered.
  };

  void Start(Proxy* proxy, const std::string& job) {
    WorkerOptions options;
    options.job_name = job;
    WorkerEnv env;
    env.worker_cache_factory =
        [this](const ClusterDef&) -> absl::StatusOr<std::unique_ptr<WorkerCacheInterface>> {
      return NewCache();
    };
    proxy->target = std::make_unique<Worker>(options, env);
  }

  Proxy ps_proxy_;
  Proxy worker_proxy_;
};

class MasterWorkerTest : public ::testing::Test {
 protected:
  MasterWorkerTest() {
    tasks_.Start(&tasks_.ps_proxy_, "ps");
    tasks_.Start(&tasks_.worker_proxy_, "worker");
    cache_ = std::make_unique<ClusterWorkerCache>(
        *ClusterSpec::Parse("ps=localhost:1;worker=localhost:2"), tasks_.NewCache());
    MasterOptions options;
    options.gc_thread = false;
    options.create_session_wait = absl::Seconds(5);
    master_ = std::make_unique<Master>(MasterEnv{cache_.get(), Clock::Real()}, options);
  }

  // w (variable) on the ps; y = w * x and the update w += x * 0.5 computed on the
  // worker, so both directions cross tasks.
  static GraphDef TrainGraph() {
    GraphDef g;
    AddVariable(&g, "w", "/job:ps");
    AddConst(&g, "w0", 2);
    AddNode(&g, "init", "Assign", {"w", "w0"});
    SetNodeAttr(g.mutable_node(g.node_size() - 1), "T", DT_FLOAT);
    NodeDef* x = AddNode(&g, "x", "Placeholder", {});
    SetNodeAttr(x, "dtype", DT_FLOAT);
    SetNodeAttr(x, "shape", TensorShape({}));
    AddBinary(&g, "y", "Mul", "w", "x");
    AddConst(&g, "half", 0.5f);
    AddBinary(&g, "delta", "Mul", "x", "half");
    AddNode(&g, "update", "AssignAdd", {"w", "delta"});
    SetNodeAttr(g.mutable_node(g.node_size() - 1), "T", DT_FLOAT);
    return g;
  }

  std::string Create() {
    CreateSessionRequest req;
    *req.mutable_graph_def() = TrainGraph();
    CreateSessionResponse resp;
    absl::Status s = master_->CreateSession(req, &resp);
    EXPECT_TRUE(s.ok()) << s;
    return resp.session_handle();
  }

  absl::Status Step(const std::string& handle, const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets, float x, std::vector<float>* out) {
    RunStepRequest req;
    req.set_session_handle(handle);
    for (const std::string& f : fetches) req.add_fetch(f);
    for (const std::string& t : targets) req.add_target(t);
    NamedTensorProto* feed = req.add_feed();
    feed->set_name("x:0");
    Tensor::Scalar<float>(x).ToProto(feed->mutable_tensor());
    req.mutable_options()->set_timeout_in_ms(20000);
    RunStepResponse resp;
    absl::Status s = master_->RunStep(req, &resp);
    if (!s.ok()) return s;
    for (const NamedTensorProto& t : resp.tensor()) {
      absl::StatusOr<Tensor> value = Tensor::FromProto(t.tensor());
      if (!value.ok()) return value.status();
      out->push_back(value->scalar<float>());
    }
    return absl::OkStatus();
  }

  Tasks tasks_;
  std::unique_ptr<ClusterWorkerCache> cache_;
  std::unique_ptr<Master> master_;
};

TEST_F(MasterWorkerTest, VariableOnPsComputeOnWorker) {
  const std::string h = Create();
  std::vector<float> out;
  ASSERT_TRUE(Step(h, {}, {"init"}, 0, &out).ok());
  ASSERT_TRUE(Step(h, {"y:0"}, {}, 3, &out).ok());
  EXPECT_FLOAT_EQ(out[0], 6);  // w (ps) crossed to the worker.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Step(h, {}, {"update"}, 2, &out).ok());
  out.clear();
  ASSERT_TRUE(Step(h, {"y:0", "w:0"}, {}, 1, &out).ok());
  EXPECT_FLOAT_EQ(out[1], 5);  // 2 + 3 * (2 * 0.5): delta crossed to the ps.
  EXPECT_FLOAT_EQ(out[0], 5);
  // Every step's state is cleaned up on both tasks (in the background; closing the
  // session sends what is still queued).
  CloseSessionRequest close;
  close.set_session_handle(h);
  CloseSessionResponse closed;
  ASSERT_TRUE(master_->CloseSession(close, &closed).ok());
  EXPECT_EQ(tasks_.worker_proxy_.target->num_steps(), 0);
  EXPECT_EQ(tasks_.ps_proxy_.target->num_steps(), 0);
}

TEST_F(MasterWorkerTest, TracingReportsTheNodesOfEveryPartitionUnderItsDevice) {
  const std::string h = Create();
  std::vector<float> out;
  ASSERT_TRUE(Step(h, {}, {"init"}, 0, &out).ok());
  RunStepRequest req;
  req.set_session_handle(h);
  req.add_fetch("y:0");
  req.add_target("update");
  NamedTensorProto* feed = req.add_feed();
  feed->set_name("x:0");
  Tensor::Scalar<float>(1).ToProto(feed->mutable_tensor());
  req.mutable_options()->set_trace_level(RunOptions::FULL_TRACE);
  RunStepResponse resp;
  ASSERT_TRUE(master_->RunStep(req, &resp).ok());
  // device -> node names recorded there.
  std::map<std::string, std::set<std::string>> nodes;
  for (const DeviceStepStats& dev : resp.metadata().step_stats().dev_stats()) {
    for (const NodeExecStats& ns : dev.node_stats()) {
      nodes[dev.device()].insert(ns.node_name());
      EXPECT_GT(ns.all_start_micros(), 0) << ns.node_name();
      EXPECT_GE(ns.all_end_rel_micros(), 0) << ns.node_name();
    }
  }
  const std::string ps_cpu = std::string(kPs) + "/device:CPU:0";
  const std::string worker_cpu = std::string(kWorker) + "/device:CPU:0";
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_TRUE(nodes[ps_cpu].count("w")) << "the variable runs on the ps";
  EXPECT_TRUE(nodes[ps_cpu].count("update"));
  EXPECT_TRUE(nodes[worker_cpu].count("y"));
  EXPECT_TRUE(nodes[worker_cpu].count("delta"));
  // The cross-task edges ran as _Send/_Recv pairs on both sides.
  for (const std::string& device : {ps_cpu, worker_cpu}) {
    int send = 0, recv = 0;
    for (const std::string& name : nodes[device]) {
      send += absl::StartsWith(name, "_send_");
      recv += absl::StartsWith(name, "_recv_");
    }
    EXPECT_GT(send, 0) << device;
    EXPECT_GT(recv, 0) << device;
  }
  // Without tracing, no stats.
  req.mutable_options()->set_trace_level(RunOptions::NO_TRACE);
  resp.Clear();
  ASSERT_TRUE(master_->RunStep(req, &resp).ok());
  EXPECT_EQ(resp.metadata().step_stats().dev_stats_size(), 0);
}

TEST_F(MasterWorkerTest, FetchesOverTheReplyLimitAreInvalidArgumentNamingThem) {
  MasterOptions options;
  options.gc_thread = false;
  options.create_session_wait = absl::Seconds(5);
  // Each fetch is a float scalar (a TensorProto of about 10 bytes): one fits, two not.
  options.max_message_tensor_bytes = 16;
  master_ = std::make_unique<Master>(MasterEnv{cache_.get(), Clock::Real()}, options);
  const std::string h = Create();
  std::vector<float> out;
  ASSERT_TRUE(Step(h, {}, {"init"}, 0, &out).ok());
  ASSERT_TRUE(Step(h, {"y:0"}, {}, 3, &out).ok());
  // w comes from the ps and y from the worker: each task's reply is small, the step's
  // reply is not.
  absl::Status s = Step(h, {"y:0", "w:0"}, {}, 3, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "fetch 'y:0'")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "fetch 'w:0'")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "limit of 16 bytes")) << s;
  // So are a callable's.
  MakeCallableRequest make;
  make.set_session_handle(h);
  make.mutable_options()->add_feed("x:0");
  make.mutable_options()->add_fetch("y:0");
  make.mutable_options()->add_fetch("w:0");
  MakeCallableResponse made;
  ASSERT_TRUE(master_->MakeCallable(make, &made).ok());
  RunCallableRequest run;
  run.set_session_handle(h);
  run.set_handle(made.handle());
  Tensor::Scalar<float>(1).ToProto(run.add_feed());
  RunCallableResponse ran;
  s = master_->RunCallable(run, &ran);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "fetch 'w:0'")) << s;
  // The session still works.
  out.clear();
  ASSERT_TRUE(Step(h, {"w:0"}, {}, 3, &out).ok());
  EXPECT_FLOAT_EQ(out[0], 2);
}

TEST_F(MasterWorkerTest, OnlyTasksThatSendToOthersAreCleanedUpAfterASuccessfulStep) {
  const std::string h = Create();
  std::vector<float> out;
  // init: the worker sends w0 (unconstrained, so on the worker) to the ps, which
  // sends nothing to another task: the ps's state is gone when the step returns.
  ASSERT_TRUE(Step(h, {}, {"init"}, 0, &out).ok());
  EXPECT_EQ(tasks_.ps_proxy_.target->num_steps(), 0);
  // y = w * x: the ps sends w to the worker, which sends nothing to another task. The
  // ps receives nothing from the worker, so it forwards w through the master and keeps
  // nothing either.
  ASSERT_TRUE(Step(h, {"y:0"}, {}, 3, &out).ok());
  // The worker's state of init went with this step's RunGraph there: no CleanupGraph.
  EXPECT_EQ(tasks_.worker_proxy_.target->num_steps(), 0);
  EXPECT_EQ(tasks_.ps_proxy_.target->num_steps(), 0);
  // Nothing waits to be cleaned up (a task that keeps its step: the next test).
  CloseSessionRequest close;
  close.set_session_handle(h);
  CloseSessionResponse closed;
  ASSERT_TRUE(master_->CloseSession(close, &closed).ok());
  EXPECT_EQ(tasks_.ps_proxy_.cleanups.load(), 0);
  EXPECT_EQ(tasks_.worker_proxy_.cleanups.load(), 0);
  EXPECT_EQ(tasks_.ps_proxy_.target->num_steps(), 0);
  EXPECT_EQ(tasks_.worker_proxy_.target->num_steps(), 0);
  // A failed step is cleaned up everywhere, whatever the partitions send: here the ps
  // fails reading w, which Reset cleared.
  ResetRequest reset;
  ResetResponse reset_resp;
  ASSERT_TRUE(master_->Reset(reset, &reset_resp).ok());
  const std::string h2 = Create();
  EXPECT_EQ(Step(h2, {"y:0"}, {}, 3, &out).code(), absl::StatusCode::kFailedPrecondition);
  // (The ps forwards in this step: it runs first, and the worker's RunGraph never
  // starts.)
  EXPECT_GE(tasks_.ps_proxy_.cleanups.load(), 1);
  EXPECT_GE(tasks_.worker_proxy_.cleanups.load(), 1);
  EXPECT_EQ(tasks_.ps_proxy_.target->num_steps(), 0);
  EXPECT_EQ(tasks_.worker_proxy_.target->num_steps(), 0);
}

// w (on the ps) goes to the worker's Neg: the ps's partition receives nothing from
// another task, so the master runs it first and carries what it sends to the worker
// in the worker's RunGraph. The Assigns make w small or large (no shape check).
TEST_F(MasterWorkerTest, ATaskThatReceivesNothingFromPeersForwardsSmallTensorsThroughTheMaster) {
  const int64_t large = kMaxForwardBytes / 4 + 1;  // Floats.
  GraphDef g;
  AddVariable(&g, "w", "/job:ps");
  SetNodeAttr(AddNode(&g, "small", "Const", {}, "/job:ps"), "value",
              Tensor::FromVector(std::vector<float>{1.5f}));
  SetNodeAttr(AddNode(&g, "large", "Const", {}, "/job:ps"), "value",
              Tensor::FromVector(std::vector<float>(large, 1.5f)));
  for (const std::string value : {"small", "large"}) {
    NodeDef* assign = AddNode(&g, "assign_" + value, "Assign", {"w", value}, "/job:ps");
    SetNodeAttr(assign, "T", DT_FLOAT);
    SetNodeAttr(assign, "validate_shape", false);
  }
  for (NodeDef& n : *g.mutable_node()) {
    if (n.op() == "Const") SetNodeAttr(&n, "dtype", DT_FLOAT);
  }
  SetNodeAttr(AddNode(&g, "neg", "Neg", {"w"}, "/job:worker"), "T", DT_FLOAT);
  CreateSessionRequest create;
  *create.mutable_graph_def() = g;
  CreateSessionResponse created;
  const absl::Status s = master_->CreateSession(create, &created);
  ASSERT_TRUE(s.ok()) << s;
  auto run = [&](const std::string& fetch, const std::string& target) -> absl::StatusOr<Tensor> {
    RunStepRequest req;
    req.set_session_handle(created.session_handle());
    if (!fetch.empty()) req.add_fetch(fetch);
    if (!target.empty()) req.add_target(target);
    RunStepResponse resp;
    RETURN_IF_ERROR(master_->RunStep(req, &resp));
    if (resp.tensor_size() == 0) return Tensor();
    return Tensor::FromProto(resp.tensor(0).tensor());
  };
  // The last element of -w, which has `elements`.
  auto neg = [&](int64_t elements) -> float {
    absl::StatusOr<Tensor> t = run("neg:0", "");
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok() || t->NumElements() != elements) return 0;
    return t->flat<float>()(elements - 1);
  };
  // 4 bytes: forwarded. The worker made no RecvTensor, and the ps kept nothing.
  ASSERT_TRUE(run("", "assign_small").ok());
  EXPECT_EQ(neg(1), -1.5f);
  EXPECT_EQ(tasks_.ps_proxy_.recvs.load(), 0);
  EXPECT_EQ(tasks_.ps_proxy_.target->num_steps(), 0);
  EXPECT_EQ(tasks_.worker_proxy_.target->num_steps(), 0);
  // Over kMaxForwardBytes: the ps keeps it for the worker's RecvTensor, and its step
  // until a cleanup.
  ASSERT_TRUE(run("", "assign_large").ok());
  EXPECT_EQ(neg(large), -1.5f);
  EXPECT_EQ(tasks_.ps_proxy_.recvs.load(), 1);
  EXPECT_EQ(tasks_.ps_proxy_.target->num_steps(), 1);
  // The ps is no longer asked to forward in this signature: a small tensor goes by
  // RecvTensor too.
  ASSERT_TRUE(run("", "assign_small").ok());
  EXPECT_EQ(neg(1), -1.5f);
  EXPECT_EQ(tasks_.ps_proxy_.recvs.load(), 2);
  // The ps kept both steps: the first's cleanup rode in the second's RunGraph, the
  // second's goes by CleanupGraph as the session closes.
  EXPECT_EQ(tasks_.ps_proxy_.cleanups.load(), 0);
  CloseSessionRequest close;
  close.set_session_handle(created.session_handle());
  CloseSessionResponse closed;
  ASSERT_TRUE(master_->CloseSession(close, &closed).ok());
  EXPECT_EQ(tasks_.ps_proxy_.cleanups.load(), 1);
  EXPECT_EQ(tasks_.ps_proxy_.target->num_steps(), 0);
  EXPECT_EQ(tasks_.worker_proxy_.target->num_steps(), 0);
}

TEST_F(MasterWorkerTest, VariableSurvivesCloseSessionAndIsSharedWithANewOne) {
  const std::string h = Create();
  std::vector<float> out;
  ASSERT_TRUE(Step(h, {}, {"init"}, 0, &out).ok());
  CloseSessionRequest close;
  close.set_session_handle(h);
  CloseSessionResponse closed;
  ASSERT_TRUE(master_->CloseSession(close, &closed).ok());
  const std::string h2 = Create();
  ASSERT_TRUE(Step(h2, {"y:0"}, {}, 4, &out).ok());
  EXPECT_FLOAT_EQ(out[0], 8);
  // Reset clears the containers: reading w is now an error naming it.
  ResetRequest reset;
  ResetResponse reset_resp;
  ASSERT_TRUE(master_->Reset(reset, &reset_resp).ok());
  const std::string h3 = Create();
  absl::Status s = Step(h3, {"y:0"}, {}, 4, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "w")) << s;
}

TEST_F(MasterWorkerTest, RestartedPsAbortsTheSessionNamingIt) {
  const std::string h = Create();
  std::vector<float> out;
  ASSERT_TRUE(Step(h, {}, {"init"}, 0, &out).ok());
  tasks_.Start(&tasks_.ps_proxy_, "ps");  // A new incarnation; state lost.
  absl::Status s = Step(h, {"y:0"}, {}, 1, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("task ", kPs))) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "restarted and lost its state")) << s;
  // With the step's own error, which says which call failed.
  EXPECT_TRUE(absl::StrContains(s.message(), "the step failed with: ")) << s;
}

TEST_F(MasterWorkerTest, WrongFeedDtypeIsInvalidArgumentAndTheSessionStillWorks) {
  const std::string h = Create();
  RunStepRequest req;
  req.set_session_handle(h);
  req.add_fetch("y:0");
  NamedTensorProto* feed = req.add_feed();
  feed->set_name("x:0");
  Tensor::Scalar<int32_t>(1).ToProto(feed->mutable_tensor());
  RunStepResponse resp;
  absl::Status s = master_->RunStep(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "x")) << s;
  std::vector<float> out;
  ASSERT_TRUE(Step(h, {}, {"init"}, 0, &out).ok());
  ASSERT_TRUE(Step(h, {"y:0"}, {}, 1, &out).ok());
  EXPECT_FLOAT_EQ(out[0], 2);
}

}  // namespace
}  // namespace overseer

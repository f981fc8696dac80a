#include "master/master.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/placement_test_util.h"

namespace overseer {
namespace {

using test::AddBinary;
using test::AddConst;

// Time moves only when someone sleeps or waits.
class FakeClock : public Clock {
 public:
  absl::Time Now() override {
    absl::MutexLock l(&mu_);
    return now_;
  }
  void SleepFor(absl::Duration d) override { Advance(d); }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) override {
    if (cond.Eval()) return true;
    absl::MutexLock l(&mu_);
    now_ = std::max(now_, deadline);
    return cond.Eval();
  }
  void Advance(absl::Duration d) {
    absl::MutexLock l(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

// Answers like a worker without running anything: RunGraph returns a float scalar for
// each recv_key.
class FakeWorker : public WorkerInterface {
 public:
  explicit FakeWorker(std::string task) : task_(std::move(task)) {}

  absl::Status GetStatus(const GetStatusRequest&, GetStatusResponse* r) override {
    absl::MutexLock l(&mu);
    if (dead) return absl::UnavailableError("connection refused");
    r->set_incarnation(incarnation);
    r->set_task_name(task_);
    DeviceAttributes* d = r->add_device_attributes();
    d->set_name(task_ + "/device:CPU:0");
    d->set_device_type("CPU");
    d->set_incarnation(incarnation);
    return absl::OkStatus();
  }
  absl::Status CreateWorkerSession(const CreateWorkerSessionRequest& req,
                                   CreateWorkerSessionResponse*) override {
    absl::MutexLock l(&mu);
    sessions.insert(req.session_handle());
    return absl::OkStatus();
  }
  absl::Status DeleteWorkerSession(const DeleteWorkerSessionRequest& req,
                                   DeleteWorkerSessionResponse*) override {
    absl::MutexLock l(&mu);
    sessions.erase(req.session_handle());
    return absl::OkStatus();
  }
  absl::Status RegisterGraph(const RegisterGraphRequest& req,
                             RegisterGraphResponse* resp) override {
    absl::MutexLock l(&mu);
    if (!sessions.count(req.session_handle())) return absl::AbortedError("unknown session");
    graphs.push_back(req.graph_def());
    resp->set_graph_handle(absl::StrCat("g", graphs.size()));
    return absl::OkStatus();
  }
  absl::Status DeregisterGraph(const DeregisterGraphRequest&,
                               DeregisterGraphResponse*) override {
    return absl::OkStatus();
  }
  absl::Status RunGraph(const RunGraphRequest& req, RunGraphResponse* resp) override {
    absl::MutexLock l(&mu);
    if (dead) return absl::UnavailableError("connection refused");
    if (!sessions.count(req.session_handle())) {
      return absl::AbortedError(absl::StrCat("session ", req.session_handle(), " not found"));
    }
    ++runs;
    sends += req.send_size();
    for (const std::string& key : req.recv_key()) {
      NamedTensorProto* t = resp->add_recv();
      t->set_name(key);
      Tensor::Scalar<float>(42.f).ToProto(t->mutable_tensor());
    }
    return absl::OkStatus();
  }
  absl::Status CleanupGraph(const CleanupGraphRequest&, CleanupGraphResponse*) override {
    absl::MutexLock l(&mu);
    ++cleanups;
    return absl::OkStatus();
  }
  absl::Status CleanupAll(const CleanupAllRequest&, CleanupAllResponse*) override {
    absl::MutexLock l(&mu);
    ++cleanup_alls;
    return absl::OkStatus();
  }
  absl::Status RecvTensor(const RecvTensorRequest&, CancellationManager*, Tensor*) override {
    return absl::UnimplementedError("the fake worker does not serve RecvTensor");
  }

  // Simulates a restart: new incarnation, state lost.
  void Restart() {
    absl::MutexLock l(&mu);
    incarnation++;
    sessions.clear();
  }

  absl::Mutex mu;
  bool dead = false;
  uint64_t incarnation = 0x1000;
  std::set<std::string> sessions;
  std::vector<GraphDef> graphs;
  int runs = 0, sends = 0, cleanups = 0, cleanup_alls = 0;

 private:
  const std::string task_;
};

class FakeCache : public WorkerCacheInterface {
 public:
  FakeCache() {
    for (const char* t : {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"}) {
      workers_[t] = std::make_unique<FakeWorker>(t);
    }
  }
  std::vector<std::string> ListTasks() const override {
    std::vector<std::string> out;
    for (const auto& [t, w] : workers_) out.push_back(t);
    return out;
  }
  WorkerInterface* GetWorker(const std::string& task) override { return fake(task); }
  ClusterDef cluster_def() const override { return ClusterDef(); }
  FakeWorker* fake(const std::string& task) {
    auto it = workers_.find(task);
    return it == workers_.end() ? nullptr : it->second.get();
  }
  FakeWorker* ps() { return fake("/job:ps/replica:0/task:0"); }
  FakeWorker* worker() { return fake("/job:worker/replica:0/task:0"); }

 private:
  std::map<std::string, std::unique_ptr<FakeWorker>> workers_;
};

class MasterTest : public ::testing::Test {
 protected:
  MasterTest() {
    options_.gc_thread = false;
    options_.session_gc_idle = absl::Minutes(10);
    options_.create_session_wait = absl::Seconds(5);
    master_ = std::make_unique<Master>(MasterEnv{&cache_, &clock_}, options_);
  }

  // "w" on the ps, "y = w + one" on the worker.
  static GraphDef TwoTaskGraph() {
    GraphDef g;
    AddConst(&g, "w", 2, "/job:ps");
    AddConst(&g, "one", 1);
    AddBinary(&g, "y", "Add", "w", "one");
    return g;
  }

  std::string Create(const GraphDef& g = TwoTaskGraph()) {
    CreateSessionRequest req;
    *req.mutable_graph_def() = g;
    CreateSessionResponse resp;
    absl::Status s = master_->CreateSession(req, &resp);
    EXPECT_TRUE(s.ok()) << s;
    return resp.session_handle();
  }

  absl::Status Run(const std::string& handle, RunStepResponse* resp) {
    RunStepRequest req;
    req.set_session_handle(handle);
    req.add_fetch("y:0");
    return master_->RunStep(req, resp);
  }

  FakeClock clock_;
  FakeCache cache_;
  MasterOptions options_;
  std::unique_ptr<Master> master_;
};

TEST_F(MasterTest, RunStepRegistersOncePerSignatureAndRunsEveryTask) {
  const std::string h = Create();
  EXPECT_EQ(cache_.ps()->sessions.count(h), 1u);
  for (int i = 0; i < 3; ++i) {
    RunStepResponse resp;
    ASSERT_TRUE(Run(h, &resp).ok());
    ASSERT_EQ(resp.tensor_size(), 1);
    EXPECT_EQ(resp.tensor(0).name(), "y:0");
  }
  EXPECT_EQ(cache_.ps()->graphs.size(), 1u);
  EXPECT_EQ(cache_.worker()->graphs.size(), 1u);
  EXPECT_EQ(cache_.ps()->runs, 3);
  EXPECT_EQ(cache_.worker()->runs, 3);
  EXPECT_GE(cache_.ps()->cleanups, 3);  // Every step is cleaned up everywhere.
  CloseSessionRequest close;
  close.set_session_handle(h);
  CloseSessionResponse cresp;
  ASSERT_TRUE(master_->CloseSession(close, &cresp).ok());
  EXPECT_TRUE(cache_.ps()->sessions.empty());
  RunStepResponse resp;
  EXPECT_EQ(Run(h, &resp).code(), absl::StatusCode::kAborted);
}

TEST_F(MasterTest, UnknownSessionIsAborted) {
  RunStepResponse resp;
  absl::Status s = Run("nope", &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(absl::StrContains(s.message(), "nope")) << s;
}

TEST_F(MasterTest, CreateSessionWaitsThenNamesEveryMissingTask) {
  cache_.ps()->dead = true;
  CreateSessionRequest req;
  *req.mutable_graph_def() = TwoTaskGraph();
  CreateSessionResponse resp;
  const absl::Time start = clock_.Now();
  absl::Status s = master_->CreateSession(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps/replica:0/task:0")) << s;
  EXPECT_FALSE(absl::StrContains(s.message(), "/job:worker")) << s;
  EXPECT_GE(clock_.Now() - start, options_.create_session_wait);
  // Filtering the dead task out makes the session possible (everything on the worker).
  req.mutable_config()->add_device_filters("/job:worker");
  GraphDef local;
  AddConst(&local, "c", 1);
  *req.mutable_graph_def() = local;
  ASSERT_TRUE(master_->CreateSession(req, &resp).ok());
  EXPECT_EQ(cache_.ps()->sessions.size(), 0u);
}

TEST_F(MasterTest, ConstraintOnAFilteredOutTaskIsInvalidArgument) {
  CreateSessionRequest req;
  *req.mutable_graph_def() = TwoTaskGraph();
  req.mutable_config()->add_device_filters("/job:worker");
  CreateSessionResponse resp;
  ASSERT_TRUE(master_->CreateSession(req, &resp).ok());
  RunStepResponse run;
  absl::Status s = Run(resp.session_handle(), &run);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "'w'")) << s;
}

TEST_F(MasterTest, RestartedTaskAbortsTheSessionNamingIt) {
  const std::string h = Create();
  RunStepResponse resp;
  ASSERT_TRUE(Run(h, &resp).ok());
  cache_.ps()->Restart();
  absl::Status s = Run(h, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps/replica:0/task:0")) << s;
  // The session stays aborted.
  s = Run(h, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(absl::StrContains(s.message(), "restarted")) << s;
}

TEST_F(MasterTest, DeadTaskIsUnavailableNamingIt) {
  const std::string h = Create();
  cache_.ps()->dead = true;
  RunStepResponse resp;
  absl::Status s = Run(h, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps/replica:0/task:0")) << s;
}

TEST_F(MasterTest, ExtendChecksTheVersionAndRetriesApplyOnce) {
  const std::string h = Create();
  ExtendSessionRequest req;
  req.set_session_handle(h);
  req.set_current_graph_version(0);
  req.set_request_id("r1");
  AddBinary(req.mutable_graph_def(), "z", "Mul", "y", "one");
  ExtendSessionResponse resp;
  ASSERT_TRUE(master_->ExtendSession(req, &resp).ok());
  EXPECT_EQ(resp.new_graph_version(), 1);
  // A retry with the same id is answered from memory, not applied again.
  ExtendSessionResponse again;
  ASSERT_TRUE(master_->ExtendSession(req, &again).ok());
  EXPECT_EQ(again.new_graph_version(), 1);
  // A different request on the stale version loses.
  req.set_request_id("r2");
  req.mutable_graph_def()->mutable_node(0)->set_name("z2");
  EXPECT_EQ(master_->ExtendSession(req, &resp).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(MasterTest, IdleSessionsAreCollectedOnTheClock) {
  const std::string h = Create();
  clock_.Advance(absl::Minutes(9));
  EXPECT_EQ(master_->CollectIdleSessions(), 0);
  RunStepResponse resp;
  ASSERT_TRUE(Run(h, &resp).ok());  // Touches the session.
  clock_.Advance(absl::Minutes(9));
  EXPECT_EQ(master_->CollectIdleSessions(), 0);
  clock_.Advance(absl::Minutes(2));
  EXPECT_EQ(master_->CollectIdleSessions(), 1);
  EXPECT_EQ(master_->NumSessions(), 0);
  EXPECT_TRUE(cache_.ps()->sessions.empty());
  EXPECT_EQ(Run(h, &resp).code(), absl::StatusCode::kAborted);
}

TEST_F(MasterTest, ResetClearsEveryTaskAndClosesSessions) {
  const std::string h = Create();
  ResetRequest req;
  ResetResponse resp;
  ASSERT_TRUE(master_->Reset(req, &resp).ok());
  EXPECT_EQ(cache_.ps()->cleanup_alls, 1);
  EXPECT_EQ(cache_.worker()->cleanup_alls, 1);
  EXPECT_EQ(master_->NumSessions(), 0);
}

TEST_F(MasterTest, CallablesRunTheirSignature) {
  const std::string h = Create();
  MakeCallableRequest make;
  make.set_session_handle(h);
  make.mutable_options()->add_fetch("y:0");
  MakeCallableResponse made;
  ASSERT_TRUE(master_->MakeCallable(make, &made).ok());
  RunCallableRequest run;
  run.set_session_handle(h);
  run.set_handle(made.handle());
  RunCallableResponse out;
  ASSERT_TRUE(master_->RunCallable(run, &out).ok());
  EXPECT_EQ(out.fetch_size(), 1);
  run.add_feed();
  EXPECT_EQ(master_->RunCallable(run, &out).code(), absl::StatusCode::kInvalidArgument);
  ReleaseCallableRequest rel;
  rel.set_session_handle(h);
  rel.set_handle(made.handle());
  ReleaseCallableResponse rr;
  ASSERT_TRUE(master_->ReleaseCallable(rel, &rr).ok());
  run.clear_feed();
  EXPECT_EQ(master_->RunCallable(run, &out).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(MasterTest, FeedsAreCheckedBeforeRunning) {
  GraphDef g;
  NodeDef* p = test::AddNode(&g, "x", "Placeholder", {});
  SetNodeAttr(p, "dtype", DT_FLOAT);
  SetNodeAttr(p, "shape", PartialShape({2}));
  const std::string h = Create(g);
  RunStepRequest req;
  req.set_session_handle(h);
  req.add_fetch("x:0");
  RunStepResponse resp;
  absl::Status s = master_->RunStep(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "'x'")) << s;
  NamedTensorProto* f = req.add_feed();
  f->set_name("x:0");
  Tensor::Scalar<int32_t>(1).ToProto(f->mutable_tensor());
  s = master_->RunStep(req, &resp);
  EXPECT_TRUE(absl::StrContains(s.message(), "'x:0' has dtype int32")) << s;
  Tensor::Scalar<float>(1).ToProto(f->mutable_tensor());
  s = master_->RunStep(req, &resp);
  EXPECT_TRUE(absl::StrContains(s.message(), "shape")) << s;
  Tensor(DT_FLOAT, TensorShape({2})).ToProto(f->mutable_tensor());
  ASSERT_TRUE(master_->RunStep(req, &resp).ok());
  EXPECT_EQ(cache_.worker()->sends, 1);
}

}  // namespace
}  // namespace overseer

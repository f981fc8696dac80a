// GrpcSession over a real gRPC master server in this process, whose workers (ps and
// worker, the Worker logic with every kernel) are in-process too: the Session
// conformance suite, plus retries and request ids.

#include "client/session/grpc_session.h"

#include <atomic>
#include <memory>

#include "client/session/readiness.h"
#include "client/session/session_conformance.h"
#include "core/cluster/cluster_spec.h"
#include "core/rpc/server_runner.h"
#include "gtest/gtest.h"
#include "master/cluster_worker_cache.h"
#include "master/master.h"
#include "master/placement_test_util.h"
#include "master/rpc/grpc_master.h"
#include "master/rpc/grpc_master_service.h"
#include "testing/fake_clock.h"
#include "worker/worker.h"
#include "worker/worker_cache.h"

namespace overseer {
namespace {

// A master on gRPC over an in-process ps and worker. Lives for the whole test binary.
class InProcessCluster {
 public:
  // The master waits (for readiness marks) on `master_clock`.
  explicit InProcessCluster(Clock* master_clock = Clock::Real()) {
    WorkerEnv env;
    env.worker_cache_factory =
        [this](const ClusterDef&) -> absl::StatusOr<std::unique_ptr<WorkerCacheInterface>> {
      return NewCache();
    };
    WorkerOptions ps_options;
    ps_options.job_name = "ps";
    ps_ = std::make_unique<Worker>(ps_options, env);
    WorkerOptions worker_options;
    worker_options.job_name = "worker";
    worker_ = std::make_unique<Worker>(worker_options, env);
    cache_ = std::make_unique<ClusterWorkerCache>(
        *ClusterSpec::Parse("ps=localhost:1;worker=localhost:2"), NewCache());
    MasterOptions options;
    options.gc_thread = false;
    master_ = std::make_unique<Master>(MasterEnv{cache_.get(), master_clock}, options);
    ServerRunnerOptions ro;
    ro.component = "master";
    ro.host = "127.0.0.1";
    ro.metrics_port = -1;
    ro.handle_signals = false;
    runner_ = std::make_unique<ServerRunner>(ro);
    service_ = std::make_unique<GrpcMasterService>(master_.get(), runner_->metrics(),
                                                   runner_->AddCompletionQueueLoop());
    runner_->AddService(service_.get());
    const absl::Status started = runner_->Start();
    if (!started.ok()) std::abort();
    runner_->SetServing(true);
  }

  std::string target() const { return "grpc://" + runner_->address(); }
  Master* master() { return master_.get(); }

  static InProcessCluster* Get() {
    static InProcessCluster* cluster = new InProcessCluster();
    return cluster;
  }

 private:
  std::unique_ptr<LocalWorkerCache> NewCache() {
    auto cache = std::make_unique<LocalWorkerCache>();
    cache->Add("/job:ps/replica:0/task:0", ps_.get());
    cache->Add("/job:worker/replica:0/task:0", worker_.get());
    return cache;
  }

  std::unique_ptr<Worker> ps_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<ClusterWorkerCache> cache_;
  std::unique_ptr<Master> master_;
  // Declared before the runner: a service outlives the server that calls it.
  std::unique_ptr<GrpcMasterService> service_;
  std::unique_ptr<ServerRunner> runner_;
};

std::unique_ptr<Session> NewGrpcSession() {
  SessionOptions options;
  options.target = InProcessCluster::Get()->target();
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options);
  if (!session.ok()) std::abort();
  return *std::move(session);
}

INSTANTIATE_TEST_SUITE_P(Grpc, SessionConformanceTest,
                         ::testing::Values(SessionConformanceParam{"Grpc", NewGrpcSession}),
                         SessionConformanceParamName);

// Fails the first `failures` calls of each kind UNAVAILABLE after (or before) passing
// them on, as a connection lost on the way back (or out) would.
class FlakyMaster : public MasterInterface {
 public:
  FlakyMaster(MasterInterface* master, int failures, bool after)
      : master_(master), failures_(failures), after_(after) {}
#define OVERSEER_FLAKY(Method)                                                  \
  absl::Status Method(const Method##Request& q, Method##Response* r) override { \
    return Flaky([&] { return master_->Method(q, r); });                        \
  }
  OVERSEER_FLAKY(CreateSession)
  OVERSEER_FLAKY(ExtendSession)
  OVERSEER_FLAKY(RunStep)
  OVERSEER_FLAKY(CloseSession)
  OVERSEER_FLAKY(ListDevices)
  OVERSEER_FLAKY(Reset)
  OVERSEER_FLAKY(PartialRunSetup)
  OVERSEER_FLAKY(MakeCallable)
  OVERSEER_FLAKY(RunCallable)
  OVERSEER_FLAKY(ReleaseCallable)
#undef OVERSEER_FLAKY
  std::atomic<int> calls{0};

 private:
  absl::Status Flaky(const std::function<absl::Status()>& call) {
    ++calls;
    if (failures_left_ <= 0) {
      failures_left_ = failures_;
      return call();
    }
    --failures_left_;
    if (after_) call().IgnoreError();
    return absl::UnavailableError("connection reset");
  }
  MasterInterface* const master_;
  const int failures_;
  const bool after_;
  int failures_left_ = failures_;
};

TEST(GrpcSessionTest, RetriedStepsApplyOnceThanksToRequestIds) {
  auto flaky = std::make_unique<FlakyMaster>(InProcessCluster::Get()->master(), 2, true);
  FlakyMaster* f = flaky.get();
  GrpcSessionOptions options;
  options.retry.initial_backoff = absl::Milliseconds(1);
  GrpcSession session(SessionOptions(), std::move(flaky), Clock::Real(), options);
  GraphDef g;
  test::AddNode(&g, "v", "VariableV2", {});
  SetNodeAttr(g.mutable_node(0), "dtype", DT_FLOAT);
  SetNodeAttr(g.mutable_node(0), "shape", TensorShape({}));
  SetNodeAttr(g.mutable_node(0), "shared_name", std::string("grpc_session_retry_v"));
  test::AddConst(&g, "zero", 0);
  test::AddConst(&g, "one", 1);
  test::AddBinary(&g, "init", "Assign", "v", "zero");
  test::AddBinary(&g, "inc", "AssignAdd", "v", "one");
  ASSERT_TRUE(session.Create(g).ok());  // Each call: 2 lost answers, then one that gets through.
  std::vector<Tensor> out;
  ASSERT_TRUE(session.Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(session.Run({}, {}, {"inc"}, &out).ok());
  ASSERT_TRUE(session.Run({}, {"v:0"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 1.f);  // Applied once although it ran three times.
  EXPECT_EQ(f->calls.load(), 12);
  EXPECT_TRUE(session.Close().ok());
}

TEST(GrpcSessionTest, RetriedCallableCallsApplyOnce) {
  auto flaky = std::make_unique<FlakyMaster>(InProcessCluster::Get()->master(), 2, true);
  FlakyMaster* f = flaky.get();
  GrpcSessionOptions options;
  options.retry.initial_backoff = absl::Milliseconds(1);
  GrpcSession session(SessionOptions(), std::move(flaky), Clock::Real(), options);
  GraphDef g;
  test::AddNode(&g, "v", "VariableV2", {});
  SetNodeAttr(g.mutable_node(0), "dtype", DT_FLOAT);
  SetNodeAttr(g.mutable_node(0), "shape", TensorShape({}));
  SetNodeAttr(g.mutable_node(0), "shared_name", std::string("grpc_session_callable_retry_v"));
  test::AddConst(&g, "zero", 0);
  test::AddConst(&g, "one", 1);
  test::AddBinary(&g, "init", "Assign", "v", "zero");
  test::AddBinary(&g, "inc", "AssignAdd", "v", "one");
  ASSERT_TRUE(session.Create(g).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session.Run({}, {}, {"init"}, &out).ok());
  CallableOptions inc;
  inc.add_fetch("inc:0");
  // Each call: 2 answers lost after the master ran it, then one that gets through.
  absl::StatusOr<CallableHandle> handle = session.MakeCallable(inc);
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_TRUE(session.RunCallable(*handle, {}, &out, nullptr).ok());
  EXPECT_EQ(out[0].scalar<float>(), 1.f);  // Applied once although it ran three times.
  ASSERT_TRUE(session.RunCallable(*handle, {}, &out, nullptr).ok());
  EXPECT_EQ(out[0].scalar<float>(), 2.f);
  EXPECT_TRUE(session.ReleaseCallable(*handle).ok());
  EXPECT_EQ(f->calls.load(), 6 * 3);
  // A callable made once (not three times): the next handle is the second.
  absl::StatusOr<CallableHandle> next = session.MakeCallable(inc);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, *handle + 1);
  EXPECT_TRUE(session.Close().ok());
}

// A partial run whose step spans the ps and the worker (r1 is computed on the ps and
// received by the worker for r2), with every call's answer lost twice and retried:
// each call still applies once.
TEST(GrpcSessionTest, PartialRunsSpanTasksAndRetriedCallsApplyOnce) {
  auto flaky = std::make_unique<FlakyMaster>(InProcessCluster::Get()->master(), 2, true);
  GrpcSessionOptions options;
  options.retry.initial_backoff = absl::Milliseconds(1);
  GrpcSession session(SessionOptions(), std::move(flaky), Clock::Real(), options);
  GraphDef g;
  for (const char* name : {"a", "b", "c"}) {
    NodeDef* p = test::AddNode(&g, name, "Placeholder", {});
    SetNodeAttr(p, "dtype", DT_FLOAT);
    p->set_device(name[0] == 'c' ? "/job:worker/task:0" : "/job:ps/task:0");
  }
  test::AddBinary(&g, "r1", "Add", "a", "b")->set_device("/job:ps/task:0");
  test::AddBinary(&g, "r2", "Mul", "r1", "c")->set_device("/job:worker/task:0");
  ASSERT_TRUE(session.Create(g).ok());
  for (int round = 0; round < 3; ++round) {
    absl::StatusOr<std::string> h = session.PartialRunSetup({"a", "b", "c"}, {"r1", "r2"}, {});
    ASSERT_TRUE(h.ok()) << h.status();
    std::vector<Tensor> out;
    absl::Status s = session.PartialRun(
        *h, {{"a", Tensor::Scalar<float>(round)}, {"b", Tensor::Scalar<float>(2)}}, {"r1"}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(out[0].scalar<float>(), round + 2.0f);
    s = session.PartialRun(*h, {{"c", Tensor::Scalar<float>(10)}}, {"r2"}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(out[0].scalar<float>(), (round + 2.0f) * 10);
  }
  EXPECT_TRUE(session.Close().ok());
}

TEST(GrpcSessionTest, FeedsAndGraphsOverTheMessageLimitFailBeforeAnythingIsSent) {
  auto flaky = std::make_unique<FlakyMaster>(InProcessCluster::Get()->master(), 0, false);
  FlakyMaster* f = flaky.get();
  GrpcSessionOptions options;
  options.max_message_tensor_bytes = 1000;
  GrpcSession session(SessionOptions(), std::move(flaky), Clock::Real(), options);
  GraphDef big_graph;
  NodeDef* big_const = test::AddNode(&big_graph, "big", "Const", {});
  SetNodeAttr(big_const, "dtype", DT_FLOAT);
  SetNodeAttr(big_const, "value", Tensor(DT_FLOAT, TensorShape({300})));
  absl::Status s = session.Create(big_graph);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("limit of 1000 bytes"), std::string::npos) << s;
  EXPECT_EQ(f->calls.load(), 0);

  GraphDef g;
  for (const char* name : {"x", "y"}) {
    NodeDef* p = test::AddNode(&g, name, "Placeholder", {});
    SetNodeAttr(p, "dtype", DT_FLOAT);
  }
  test::AddBinary(&g, "sum", "Add", "x", "y");
  ASSERT_TRUE(session.Create(g).ok());
  EXPECT_EQ(session.Extend(big_graph).code(), absl::StatusCode::kInvalidArgument);
  const int calls = f->calls.load();
  // Each feed fits; together they do not.
  const Tensor half(DT_FLOAT, TensorShape({120}));
  std::vector<Tensor> out;
  ASSERT_TRUE(
      session.Run({{"x", half}, {"y", Tensor(DT_FLOAT, TensorShape({120}))}}, {"sum"}, {}, &out)
          .ok());
  const Tensor too_big(DT_FLOAT, TensorShape({200}));
  s = session.Run({{"x", too_big}, {"y", too_big}}, {"sum"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("feed 'x' is 800 bytes"), std::string::npos) << s;
  EXPECT_NE(s.message().find("feed 'y' is 800 bytes"), std::string::npos) << s;
  CallableOptions callable;
  callable.add_feed("x");
  callable.add_feed("y");
  callable.add_fetch("sum");
  absl::StatusOr<CallableHandle> handle = session.MakeCallable(callable);
  ASSERT_TRUE(handle.ok()) << handle.status();
  s = session.RunCallable(*handle, {too_big, too_big}, &out, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("feed 1 is 800 bytes"), std::string::npos) << s;
  // One Run and one MakeCallable reached the master.
  EXPECT_EQ(f->calls.load(), calls + 2);
  EXPECT_TRUE(session.Close().ok());
}

TEST(GrpcSessionTest, GivesUpAfterMaxAttemptsAndDoesNotRetryReset) {
  auto flaky = std::make_unique<FlakyMaster>(InProcessCluster::Get()->master(), 100, false);
  FlakyMaster* f = flaky.get();
  GrpcSessionOptions options;
  options.retry.initial_backoff = absl::Milliseconds(1);
  options.retry.max_attempts = 3;
  GrpcSession session(SessionOptions(), std::move(flaky), Clock::Real(), options);
  GraphDef g;
  test::AddConst(&g, "c", 1);
  EXPECT_EQ(session.Create(g).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(f->calls.load(), 3);
  EXPECT_EQ(session.Reset({}).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(f->calls.load(), 4);
}

// WaitForReady's timeout, and its pauses between a master's early answers, are on the
// channel's clock: a key never marked is given up on after its timeout of that clock.
TEST(GrpcReadinessTest, WaitForReadyTimesOutOnTheChannelsClock) {
  // The master answers "not ready" at once: its waits jump to their deadline.
  test::FakeClock master_clock(test::FakeClock::Mode::kAutoAdvance);
  InProcessCluster cluster(&master_clock);
  test::FakeClock clock;
  absl::StatusOr<std::unique_ptr<ReadinessChannel>> channel =
      NewReadinessChannel(cluster.target(), &clock);
  ASSERT_TRUE(channel.ok()) << channel.status();
  const absl::Time start = clock.Now();
  absl::StatusOr<bool> ready = (*channel)->WaitForReady("never", absl::Seconds(1));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_FALSE(*ready);
  EXPECT_EQ(clock.Now() - start, absl::Seconds(1));  // Pauses of 50 ms up to the timeout.
  ASSERT_TRUE((*channel)->MarkReady("model").ok());
  ready = (*channel)->WaitForReady("model", absl::Hours(1));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_TRUE(*ready);
  EXPECT_EQ(clock.Now() - start, absl::Seconds(1));  // A marked key needs no pause.
}

TEST(GrpcSessionTest, RejectsMalformedTargetsAndListsDevices) {
  SessionOptions bad;
  bad.target = "grpc://";
  EXPECT_EQ(GrpcSession::Connect(bad).status().code(), absl::StatusCode::kInvalidArgument);
  SessionOptions options;
  options.target = InProcessCluster::Get()->target();
  auto session = GrpcSession::Connect(options);
  ASSERT_TRUE(session.ok()) << session.status();
  auto devices = (*session)->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(devices->size(), 2u);
}

}  // namespace
}  // namespace overseer

#include "worker/worker.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/cluster/rendezvous_key.h"
#include "core/kernels/testing/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"
#include "worker/testing/test_graphs.h"
#include "worker/worker_cache.h"

namespace overseer {
namespace {

constexpr char kPsDevice[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerDevice[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr uint64_t kPsIncarnation = 0x1111;
constexpr uint64_t kWorkerIncarnation = 0x2222;

ClusterDef TwoTaskCluster() {
  ClusterDef cluster;
  JobDef* ps = cluster.add_job();
  ps->set_name("ps");
  (*ps->mutable_tasks())[0] = "localhost:1";
  JobDef* worker = cluster.add_job();
  worker->set_name("worker");
  (*worker->mutable_tasks())[0] = "localhost:2";
  return cluster;
}

// A ps and a worker task in this process, reaching each other through a LocalWorkerCache.
// A ps partition: "neg", the negation of the fed float "x:0", fetched as "neg:0".
GraphDef FedNegation() {
  GraphDef g;
  test::AddRecv(&g, "x", DT_FLOAT, "x:0", kPsDevice, kPsIncarnation, kPsDevice, true);
  NodeDef* neg = test::AddNode(&g, "neg", "Neg", kPsDevice, {"x"});
  SetNodeAttr(neg, "T", DT_FLOAT);
  test::AddSend(&g, "neg/_fetch", "neg", DT_FLOAT, "neg:0", kPsDevice, kPsIncarnation, kPsDevice,
                true);
  return g;
}

class WorkerTest : public ::testing::Test {
 protected:
  WorkerTest() {
    WorkerEnv env;
    env.worker_cache_factory =
        [this](const ClusterDef&) -> absl::StatusOr<std::unique_ptr<WorkerCacheInterface>> {
      auto cache = std::make_unique<LocalWorkerCache>();
      cache->Add("/job:ps/replica:0/task:0", ps_.get());
      cache->Add("/job:worker/replica:0/task:0", worker_.get());
      return cache;
    };
    ps_ = std::make_unique<Worker>(Options("ps", kPsIncarnation), env);
    worker_ = std::make_unique<Worker>(Options("worker", kWorkerIncarnation), env);
  }

  static WorkerOptions Options(const std::string& job, uint64_t incarnation) {
    WorkerOptions options;
    options.job_name = job;
    options.incarnation = incarnation;
    options.cluster = TwoTaskCluster();
    // Every graph that never waits counts as quick, however slow the host: what the
    // tests check must not hang on its speed.
    options.quick_run_graph = absl::Hours(1);
    return options;
  }

  static void CreateSession(Worker* w, const std::string& handle) {
    CreateWorkerSessionRequest request;
    request.set_session_handle(handle);
    CreateWorkerSessionResponse response;
    ASSERT_TRUE(w->CreateWorkerSession(request, &response).ok());
  }

  static absl::StatusOr<std::string> Register(Worker* w, const std::string& session,
                                              const GraphDef& graph) {
    RegisterGraphRequest request;
    request.set_session_handle(session);
    *request.mutable_graph_def() = graph;
    RegisterGraphResponse response;
    absl::Status s = w->RegisterGraph(request, &response);
    if (!s.ok()) return s;
    return response.graph_handle();
  }

  static RunGraphRequest RunRequest(const std::string& session, const std::string& graph,
                                    int64_t step_id) {
    RunGraphRequest request;
    request.set_session_handle(session);
    request.set_graph_handle(graph);
    request.set_step_id(step_id);
    return request;
  }

  static void AddSend(RunGraphRequest* request, const std::string& key, const Tensor& value) {
    NamedTensorProto* send = request->add_send();
    send->set_name(key);
    value.ToProto(send->mutable_tensor());
  }

  // Ends step `step` on `w`, as the master's CleanupGraph does.
  static absl::Status Cleanup(Worker* w, int64_t step) {
    CleanupGraphRequest request;
    request.set_step_id(step);
    CleanupGraphResponse response;
    return w->CleanupGraph(request, &response);
  }

  static Tensor Recv(const RunGraphResponse& response, int i) {
    absl::StatusOr<Tensor> t = Tensor::FromProto(response.recv(i).tensor());
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : Tensor();
  }

  static std::string LocalKey(const std::string& device, uint64_t incarnation,
                              const std::string& name) {
    return MakeRendezvousKey(device, incarnation, device, name);
  }

  std::unique_ptr<Worker> ps_;
  std::unique_ptr<Worker> worker_;
};

TEST_F(WorkerTest, GetStatusReportsTheDeviceAndIncarnation) {
  GetStatusResponse response;
  ASSERT_TRUE(ps_->GetStatus({}, &response).ok());
  EXPECT_EQ(response.incarnation(), kPsIncarnation);
  EXPECT_EQ(response.task_name(), "/job:ps/replica:0/task:0");
  ASSERT_EQ(response.device_attributes_size(), 1);
  EXPECT_EQ(response.device_attributes(0).name(), kPsDevice);
  EXPECT_EQ(response.device_attributes(0).device_type(), "CPU");
}

TEST_F(WorkerTest, RandomIncarnationsDiffer) {
  Worker a(WorkerOptions{}, WorkerEnv{});
  Worker b(WorkerOptions{}, WorkerEnv{});
  EXPECT_NE(a.incarnation(), 0u);
  EXPECT_NE(a.incarnation(), b.incarnation());
}

TEST_F(WorkerTest, JobDoneCallsTheCallbackOnce) {
  std::vector<std::string> reasons;
  WorkerEnv env;
  env.on_job_done = [&reasons](const std::string& reason) { reasons.push_back(reason); };
  Worker w(WorkerOptions{}, env);
  EXPECT_FALSE(w.job_done());
  JobDoneRequest request;
  request.set_reason("finished");
  JobDoneResponse response;
  ASSERT_TRUE(w.JobDone(request, &response).ok());
  ASSERT_TRUE(w.JobDone(request, &response).ok());
  EXPECT_TRUE(w.job_done());
  EXPECT_EQ(reasons, std::vector<std::string>{"finished"});
  // Without a callback JobDone is only logged.
  Worker plain(WorkerOptions{}, WorkerEnv{});
  EXPECT_TRUE(plain.JobDone(request, &response).ok());
  EXPECT_TRUE(plain.job_done());
}

TEST_F(WorkerTest, UnknownSessionIsAborted) {
  RegisterGraphRequest request;
  request.set_session_handle("nope");
  RegisterGraphResponse response;
  absl::Status s = ps_->RegisterGraph(request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_NE(s.message().find("'nope'"), std::string::npos) << s;
  RunGraphResponse run;
  EXPECT_EQ(ps_->RunGraph(RunRequest("nope", "graph_1", 1), &run).code(),
            absl::StatusCode::kAborted);
}

TEST_F(WorkerTest, SessionOutsideTheClusterIsInvalid) {
  CreateWorkerSessionRequest request;
  request.set_session_handle("s");
  JobDef* job = request.mutable_cluster()->add_job();
  job->set_name("worker");
  (*job->mutable_tasks())[0] = "localhost:2";
  CreateWorkerSessionResponse response;
  EXPECT_EQ(ps_->CreateWorkerSession(request, &response).code(),
            absl::StatusCode::kInvalidArgument);
  request.set_session_handle("");
  EXPECT_EQ(ps_->CreateWorkerSession(request, &response).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(WorkerTest, RegisterRunAndCleanupWithFeedsAndFetches) {
  CreateSession(ps_.get(), "s");
  absl::StatusOr<std::string> handle = Register(ps_.get(), "s", FedNegation());
  ASSERT_TRUE(handle.ok()) << handle.status();

  for (int64_t step = 1; step <= 2; ++step) {
    RunGraphRequest request = RunRequest("s", *handle, step);
    AddSend(&request, LocalKey(kPsDevice, kPsIncarnation, "x:0"),
            test::AsTensor<float>({1, -2.5f}));
    request.add_recv_key(LocalKey(kPsDevice, kPsIncarnation, "neg:0"));
    RunGraphResponse response;
    ASSERT_TRUE(ps_->RunGraph(request, &response).ok());
    ASSERT_EQ(response.recv_size(), 1);
    test::ExpectTensorEqual(Recv(response, 0), test::AsTensor<float>({-1, 2.5f}));
    ASSERT_TRUE(Cleanup(ps_.get(), step).ok());
  }
  EXPECT_EQ(ps_->num_steps(), 0);

  DeregisterGraphRequest deregister;
  deregister.set_session_handle("s");
  deregister.set_graph_handle(*handle);
  DeregisterGraphResponse deregistered;
  ASSERT_TRUE(ps_->DeregisterGraph(deregister, &deregistered).ok());
  RunGraphResponse response;
  EXPECT_EQ(ps_->RunGraph(RunRequest("s", *handle, 3), &response).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(WorkerTest, AGraphIsQuickOnceAQuickRunShowedItNeverWaits) {
  CreateSession(ps_.get(), "s");
  // A fed value, negated and fetched: nothing to wait for.
  absl::StatusOr<std::string> handle = Register(ps_.get(), "s", FedNegation());
  ASSERT_TRUE(handle.ok()) << handle.status();
  RunGraphRequest request = RunRequest("s", *handle, 1);
  AddSend(&request, LocalKey(kPsDevice, kPsIncarnation, "x:0"), test::AsTensor<float>({1}));
  request.add_recv_key(LocalKey(kPsDevice, kPsIncarnation, "neg:0"));
  request.set_cleanup_on_return(true);
  // How long it takes is unknown before it has run.
  EXPECT_FALSE(ps_->RunGraphIsQuick(request));
  RunGraphResponse response;
  ASSERT_TRUE(ps_->RunGraph(request, &response).ok());
  EXPECT_TRUE(ps_->RunGraphIsQuick(request));
  // Unknown sessions and graphs are not (RunGraph reports them).
  EXPECT_FALSE(ps_->RunGraphIsQuick(RunRequest("nope", *handle, 2)));
  EXPECT_FALSE(ps_->RunGraphIsQuick(RunRequest("s", "graph_404", 2)));
}

TEST_F(WorkerTest, AGraphSlowerThanTheBoundIsNotQuick) {
  WorkerOptions options = Options("ps", kPsIncarnation);
  options.quick_run_graph = -absl::Microseconds(1);  // Every run is slower.
  Worker ps(options, WorkerEnv());
  CreateSession(&ps, "s");
  absl::StatusOr<std::string> handle = Register(&ps, "s", FedNegation());
  ASSERT_TRUE(handle.ok()) << handle.status();
  RunGraphRequest request = RunRequest("s", *handle, 1);
  AddSend(&request, LocalKey(kPsDevice, kPsIncarnation, "x:0"), test::AsTensor<float>({1}));
  request.add_recv_key(LocalKey(kPsDevice, kPsIncarnation, "neg:0"));
  request.set_cleanup_on_return(true);
  RunGraphResponse response;
  ASSERT_TRUE(ps.RunGraph(request, &response).ok());
  EXPECT_FALSE(ps.RunGraphIsQuick(request));
}

TEST_F(WorkerTest, AGraphThatMayWaitIsNeverQuick) {
  CreateSession(ps_.get(), "s");
  CreateSession(worker_.get(), "s");
  // Each pair: a graph that provides what the second one waits for, run first, so that
  // the second one runs quickly and yet may wait another time.
  GraphDef sends_to_ps;
  test::AddConst(&sends_to_ps, "c", test::AsTensor<float>({1}), kWorkerDevice);
  test::AddSend(&sends_to_ps, "c/_send", "c", DT_FLOAT, "edge_c", kWorkerDevice, kWorkerIncarnation,
                kPsDevice);
  GraphDef receives_from_worker;
  test::AddRecv(&receives_from_worker, "c/_recv", DT_FLOAT, "edge_c", kWorkerDevice,
                kWorkerIncarnation, kPsDevice);
  GraphDef enqueues;
  test::AddConst(&enqueues, "v", test::AsTensor<float>({2}), kPsDevice);
  test::AddEnqueue(&enqueues, "enqueue", "v", kPsDevice);
  GraphDef dequeues;
  test::AddDequeue(&dequeues, "dequeue", kPsDevice);

  struct Pair {
    Worker* provider;
    const GraphDef* provides;
    const GraphDef* waits;
  };
  int64_t step = 0;
  for (const Pair& pair : {Pair{worker_.get(), &sends_to_ps, &receives_from_worker},
                           Pair{ps_.get(), &enqueues, &dequeues}}) {
    ++step;
    absl::StatusOr<std::string> provider = Register(pair.provider, "s", *pair.provides);
    ASSERT_TRUE(provider.ok()) << provider.status();
    absl::StatusOr<std::string> waiter = Register(ps_.get(), "s", *pair.waits);
    ASSERT_TRUE(waiter.ok()) << waiter.status();
    RunGraphResponse response;
    ASSERT_TRUE(pair.provider->RunGraph(RunRequest("s", *provider, step), &response).ok());
    const RunGraphRequest request = RunRequest("s", *waiter, step);
    ASSERT_TRUE(ps_->RunGraph(request, &response).ok());
    EXPECT_FALSE(ps_->RunGraphIsQuick(request)) << pair.waits->DebugString();
  }
}

// The master sends a successful step's cleanup with the next RunGraph of the session
// (cleanup_step_id): the worker ends those steps before it runs.
TEST_F(WorkerTest, ARunGraphCleansUpTheStepsItCarries) {
  CreateSession(ps_.get(), "s");
  absl::StatusOr<std::string> handle = Register(ps_.get(), "s", FedNegation());
  ASSERT_TRUE(handle.ok()) << handle.status();
  auto run = [&](int64_t step, std::vector<int64_t> cleanups) {
    RunGraphRequest request = RunRequest("s", *handle, step);
    AddSend(&request, LocalKey(kPsDevice, kPsIncarnation, "x:0"), test::AsTensor<float>({1}));
    request.add_recv_key(LocalKey(kPsDevice, kPsIncarnation, "neg:0"));
    for (int64_t id : cleanups) request.add_cleanup_step_id(id);
    RunGraphResponse response;
    return ps_->RunGraph(request, &response);
  };
  ASSERT_TRUE(run(1, {}).ok());
  ASSERT_TRUE(run(2, {}).ok());
  EXPECT_EQ(ps_->num_steps(), 2);
  ASSERT_TRUE(run(3, {1, 2}).ok());
  EXPECT_EQ(ps_->num_steps(), 1);  // Step 3's own, until its cleanup.
  // A cleaned-up step is over here: a late RecvTensor of it fails instead of waiting.
  RecvTensorRequest late;
  late.set_step_id(2);
  late.set_rendezvous_key(LocalKey(kPsDevice, kPsIncarnation, "neg:0"));
  Tensor t;
  EXPECT_EQ(ps_->RecvTensor(late, nullptr, &t).code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(Cleanup(ps_.get(), 3).ok());
  EXPECT_EQ(ps_->num_steps(), 0);
}

TEST_F(WorkerTest, ARunGraphGivenUpBeforeItStartsNeverRuns) {
  CreateSession(ps_.get(), "s");
  GraphDef g;
  test::AddConst(&g, "c", test::AsTensor<float>({1}), kPsDevice);
  test::AddSend(&g, "c/_fetch", "c", DT_FLOAT, "c:0", kPsDevice, kPsIncarnation, kPsDevice, true);
  absl::StatusOr<std::string> handle = Register(ps_.get(), "s", g);
  ASSERT_TRUE(handle.ok()) << handle.status();
  RunGraphRequest request = RunRequest("s", *handle, 1);
  request.add_recv_key(LocalKey(kPsDevice, kPsIncarnation, "c:0"));
  CancellationManager given_up;
  given_up.StartCancel(absl::CancelledError("the master gave up"));
  RunGraphResponse response;
  const absl::Status s = ps_->RunGraph(request, &response, &given_up);
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_EQ(response.recv_size(), 0);
  EXPECT_EQ(ps_->num_steps(), 0);
}

TEST_F(WorkerTest, CleanupGraphEndsAStepWaitingOnAQueue) {
  CreateSession(ps_.get(), "s");
  GraphDef dequeues;
  // Bounded so that a broken cleanup fails the test (DEADLINE_EXCEEDED) instead of
  // hanging it.
  test::AddDequeue(&dequeues, "dequeue", kPsDevice, 60000);
  GraphDef sizes;  // The queue's size, fetched.
  test::AddQueue(&sizes, kPsDevice);
  test::AddNode(&sizes, "size", "QueueSize", kPsDevice, {"q"});
  test::AddSend(&sizes, "size/_fetch", "size", DT_INT32, "size:0", kPsDevice, kPsIncarnation,
                kPsDevice, true);
  GraphDef enqueues;
  test::AddConst(&enqueues, "v", test::AsTensor<float>({3}), kPsDevice);
  test::AddEnqueue(&enqueues, "enqueue", "v", kPsDevice);
  absl::StatusOr<std::string> dequeue_handle = Register(ps_.get(), "s", dequeues);
  absl::StatusOr<std::string> size_handle = Register(ps_.get(), "s", sizes);
  absl::StatusOr<std::string> enqueue_handle = Register(ps_.get(), "s", enqueues);
  ASSERT_TRUE(dequeue_handle.ok() && size_handle.ok() && enqueue_handle.ok());

  absl::Status waited;
  std::thread waiting([&] {
    RunGraphResponse response;
    waited = ps_->RunGraph(RunRequest("s", *dequeue_handle, 1), &response);
  });
  while (ps_->num_steps() == 0) std::this_thread::yield();
  // The step failed on another task: the master cleans it up everywhere.
  ASSERT_TRUE(Cleanup(ps_.get(), 1).ok());
  waiting.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kCancelled) << waited;
  // The abandoned dequeue does not take the next element.
  RunGraphResponse response;
  ASSERT_TRUE(ps_->RunGraph(RunRequest("s", *enqueue_handle, 2), &response).ok());
  RunGraphRequest size_request = RunRequest("s", *size_handle, 3);
  size_request.add_recv_key(LocalKey(kPsDevice, kPsIncarnation, "size:0"));
  ASSERT_TRUE(ps_->RunGraph(size_request, &response).ok());
  test::ExpectTensorEqual(Recv(response, 0), Tensor::Scalar<int32_t>(1));
}

// Step timeouts and RecvTensor deadlines are measured on WorkerEnv::clock.
TEST_F(WorkerTest, TimeoutsRunOnTheInjectedClock) {
  // Every wait ends at its deadline at once: hour-long timeouts fire now.
  test::FakeClock clock(test::FakeClock::Mode::kAutoAdvance);
  WorkerEnv env;
  env.clock = &clock;
  WorkerOptions options = Options("ps", kPsIncarnation);
  options.recv_wait_for_step = absl::ZeroDuration();  // No bound: the RecvTensor's own.
  Worker ps(options, env);
  CreateSession(&ps, "s");
  GraphDef dequeues;
  test::AddDequeue(&dequeues, "dequeue", kPsDevice, -1);  // No timeout of its own.
  absl::StatusOr<std::string> handle = Register(&ps, "s", dequeues);
  ASSERT_TRUE(handle.ok()) << handle.status();
  RunGraphRequest request = RunRequest("s", *handle, 1);
  request.set_timeout_in_ms(3600 * 1000);
  RunGraphResponse response;
  absl::Time start = clock.Now();
  const absl::Status run = ps.RunGraph(request, &response);
  EXPECT_EQ(run.code(), absl::StatusCode::kDeadlineExceeded) << run;
  EXPECT_THAT(std::string(run.message()),
              ::testing::HasSubstr("step exceeded timeout of 3600000 ms"));
  EXPECT_GE(clock.Now() - start, absl::Hours(1));
  ASSERT_TRUE(Cleanup(&ps, 1).ok());

  RecvTensorRequest recv;
  recv.set_step_id(2);
  recv.set_rendezvous_key(MakeRendezvousKey(kPsDevice, kPsIncarnation, kWorkerDevice, "never"));
  recv.set_timeout_in_ms(3600 * 1000);
  start = clock.Now();
  Tensor t;
  EXPECT_EQ(ps.RecvTensor(recv, nullptr, &t).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(clock.Now() - start, absl::Hours(1));
}

TEST_F(WorkerTest, RecordsStepStatsUnderItsDeviceWhenAsked) {
  CreateSession(ps_.get(), "s");
  absl::StatusOr<std::string> handle = Register(ps_.get(), "s", FedNegation());
  ASSERT_TRUE(handle.ok()) << handle.status();
  for (int64_t step = 1; step <= 3; ++step) {
    RunGraphRequest request = RunRequest("s", *handle, step);
    AddSend(&request, LocalKey(kPsDevice, kPsIncarnation, "x:0"), test::AsTensor<float>({1}));
    request.add_recv_key(LocalKey(kPsDevice, kPsIncarnation, "neg:0"));
    if (step == 2) request.mutable_exec_opts()->set_record_timeline(true);
    if (step == 3) request.mutable_exec_opts()->set_record_costs(true);
    RunGraphResponse response;
    ASSERT_TRUE(ps_->RunGraph(request, &response).ok());
    if (step == 1) {
      EXPECT_EQ(response.step_stats().dev_stats_size(), 0);
      continue;
    }
    ASSERT_EQ(response.step_stats().dev_stats_size(), 1);
    const DeviceStepStats& dev = response.step_stats().dev_stats(0);
    EXPECT_EQ(dev.device(), kPsDevice);
    std::vector<std::string> names;
    for (const NodeExecStats& ns : dev.node_stats()) names.push_back(ns.node_name());
    EXPECT_THAT(names, ::testing::UnorderedElementsAre("x", "neg", "neg/_fetch"));
  }
}

TEST_F(WorkerTest, BadFeedAndMissingFetchAreInvalid) {
  CreateSession(ps_.get(), "s");
  GraphDef g;
  test::AddConst(&g, "c", test::AsScalar<float>(1), kPsDevice);
  absl::StatusOr<std::string> handle = Register(ps_.get(), "s", g);
  ASSERT_TRUE(handle.ok()) << handle.status();
  RunGraphRequest request = RunRequest("s", *handle, 1);
  request.add_send()->set_name("not a key");
  RunGraphResponse response;
  EXPECT_EQ(ps_->RunGraph(request, &response).code(), absl::StatusCode::kInvalidArgument);
  request = RunRequest("s", *handle, 2);
  request.add_recv_key(LocalKey(kPsDevice, kPsIncarnation, "missing:0"));
  absl::Status s = ps_->RunGraph(request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("missing:0"), std::string::npos) << s;
}

TEST(WorkerLimitTest, FetchesOverTheReplyLimitAreInvalidArgumentNamingThem) {
  WorkerOptions options;
  options.job_name = "ps";
  options.incarnation = kPsIncarnation;
  options.max_message_tensor_bytes = 100;
  Worker ps(options, WorkerEnv());
  CreateWorkerSessionRequest create;
  create.set_session_handle("s");
  CreateWorkerSessionResponse created;
  ASSERT_TRUE(ps.CreateWorkerSession(create, &created).ok());
  // x (fed) -> neg, both fetched: 2 x 64 bytes.
  GraphDef g = FedNegation();
  test::AddSend(&g, "x/_fetch", "x", DT_FLOAT, "x:0", kPsDevice, kPsIncarnation, kPsDevice, true);
  RegisterGraphRequest reg;
  reg.set_session_handle("s");
  *reg.mutable_graph_def() = g;
  RegisterGraphResponse registered;
  ASSERT_TRUE(ps.RegisterGraph(reg, &registered).ok());
  RunGraphRequest request;
  request.set_session_handle("s");
  request.set_graph_handle(registered.graph_handle());
  request.set_step_id(1);
  NamedTensorProto* feed = request.add_send();
  feed->set_name(MakeRendezvousKey(kPsDevice, kPsIncarnation, kPsDevice, "x:0"));
  Tensor(DT_FLOAT, TensorShape({16})).ToProto(feed->mutable_tensor());
  request.add_recv_key(MakeRendezvousKey(kPsDevice, kPsIncarnation, kPsDevice, "neg:0"));
  RunGraphResponse response;
  ASSERT_TRUE(ps.RunGraph(request, &response).ok());  // 64 bytes fit.
  request.set_step_id(2);
  request.add_recv_key(MakeRendezvousKey(kPsDevice, kPsIncarnation, kPsDevice, "x:0"));
  response.Clear();
  absl::Status s = ps.RunGraph(request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()),
              ::testing::AllOf(::testing::HasSubstr("fetch 'neg:0' is 64 bytes"),
                               ::testing::HasSubstr("fetch 'x:0' is 64 bytes"),
                               ::testing::HasSubstr("/job:ps/replica:0/task:0"),
                               ::testing::HasSubstr("limit of 100 bytes")));
  EXPECT_EQ(response.recv_size(), 0);
}

TEST_F(WorkerTest, RegisterRejectsBadPartitions) {
  CreateSession(ps_.get(), "s");
  GraphDef other_task;
  test::AddConst(&other_task, "c", test::AsScalar<float>(1), kWorkerDevice);
  absl::Status s = Register(ps_.get(), "s", other_task).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'c'"), std::string::npos) << s;

  GraphDef unknown_op;
  test::AddNode(&unknown_op, "mystery", "NoSuchOp", kPsDevice);
  s = Register(ps_.get(), "s", unknown_op).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("mystery"), std::string::npos) << s;

  GraphDef stale;
  test::AddConst(&stale, "c", test::AsScalar<float>(1), kPsDevice);
  test::AddSend(&stale, "c/_send", "c", DT_FLOAT, "c:0", kPsDevice, kPsIncarnation + 1,
                kWorkerDevice);
  s = Register(ps_.get(), "s", stale).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_NE(s.message().find("/job:ps/replica:0/task:0"), std::string::npos) << s;
}

TEST_F(WorkerTest, VariablesAreSharedAcrossSessionsUntilCleanupAll) {
  CreateSession(ps_.get(), "chief");
  CreateSession(ps_.get(), "other");
  GraphDef init;
  test::AddVariable(&init, "v", kPsDevice, kPsIncarnation, /*assign=*/true, /*read=*/false);
  GraphDef read;
  test::AddVariable(&read, "v", kPsDevice, kPsIncarnation, /*assign=*/false, /*read=*/true);
  absl::StatusOr<std::string> init_handle = Register(ps_.get(), "chief", init);
  ASSERT_TRUE(init_handle.ok()) << init_handle.status();
  absl::StatusOr<std::string> read_handle = Register(ps_.get(), "other", read);
  ASSERT_TRUE(read_handle.ok()) << read_handle.status();

  RunGraphRequest assign = RunRequest("chief", *init_handle, 1);
  AddSend(&assign, LocalKey(kPsDevice, kPsIncarnation, "v_value"), test::AsTensor<float>({3, 4}));
  RunGraphResponse response;
  ASSERT_TRUE(ps_->RunGraph(assign, &response).ok());
  DeleteWorkerSessionRequest close;
  close.set_session_handle("chief");
  DeleteWorkerSessionResponse closed;
  ASSERT_TRUE(ps_->DeleteWorkerSession(close, &closed).ok());

  RunGraphRequest get = RunRequest("other", *read_handle, 2);
  get.add_recv_key(LocalKey(kPsDevice, kPsIncarnation, "v_read"));
  ASSERT_TRUE(ps_->RunGraph(get, &response).ok());
  test::ExpectTensorEqual(Recv(response, 0), test::AsTensor<float>({3, 4}));

  CleanupAllResponse cleaned;
  ASSERT_TRUE(ps_->CleanupAll({}, &cleaned).ok());
  get.set_step_id(3);
  RunGraphResponse after;
  absl::Status s = ps_->RunGraph(get, &after);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

// The ps produces a tensor that the worker's partition receives, negates and fetches.
class CrossTaskTest : public WorkerTest {
 protected:
  void Build(uint64_t key_incarnation) {
    CreateSession(ps_.get(), "s");
    CreateSession(worker_.get(), "s");
    GraphDef ps_graph;
    test::AddConst(&ps_graph, "c", test::AsTensor<float>({1, 2, 3}), kPsDevice);
    test::AddSend(&ps_graph, "c/_send", "c", DT_FLOAT, "edge_0_c", kPsDevice, kPsIncarnation,
                  kWorkerDevice);
    GraphDef worker_graph;
    test::AddRecv(&worker_graph, "c/_recv", DT_FLOAT, "edge_0_c", kPsDevice, key_incarnation,
                  kWorkerDevice);
    NodeDef* neg = test::AddNode(&worker_graph, "neg", "Neg", kWorkerDevice, {"c/_recv"});
    SetNodeAttr(neg, "T", DT_FLOAT);
    test::AddSend(&worker_graph, "neg/_fetch", "neg", DT_FLOAT, "neg:0", kWorkerDevice,
                  kWorkerIncarnation, kWorkerDevice, true);
    absl::StatusOr<std::string> h = Register(ps_.get(), "s", ps_graph);
    ASSERT_TRUE(h.ok()) << h.status();
    ps_handle_ = *h;
    h = Register(worker_.get(), "s", worker_graph);
    ASSERT_TRUE(h.ok()) << h.status();
    worker_handle_ = *h;
  }

  // Runs step `step` on both tasks at once; returns the worker's status.
  absl::Status RunStep(int64_t step, RunGraphResponse* response, absl::Status* ps_status) {
    std::thread ps_thread([&] {
      RunGraphResponse ignored;
      *ps_status = ps_->RunGraph(RunRequest("s", ps_handle_, step), &ignored);
    });
    RunGraphRequest request = RunRequest("s", worker_handle_, step);
    request.add_recv_key(LocalKey(kWorkerDevice, kWorkerIncarnation, "neg:0"));
    request.set_timeout_in_ms(60000);
    absl::Status status = worker_->RunGraph(request, response);
    ps_thread.join();
    return status;
  }

  // A RecvTensor for the worker of tensor `edge` produced on the ps in step `step`.
  static RecvTensorRequest PsRecv(int64_t step, const std::string& edge, int64_t timeout_ms = 0) {
    RecvTensorRequest request;
    request.set_step_id(step);
    request.set_rendezvous_key(MakeRendezvousKey(kPsDevice, kPsIncarnation, kWorkerDevice, edge));
    request.set_timeout_in_ms(timeout_ms);
    return request;
  }

  std::string ps_handle_;
  std::string worker_handle_;
};

TEST_F(CrossTaskTest, WorkersExchangeATensorThroughRecvTensor) {
  Build(kPsIncarnation);
  RunGraphResponse response;
  absl::Status ps_status;
  ASSERT_TRUE(RunStep(7, &response, &ps_status).ok());
  ASSERT_TRUE(ps_status.ok()) << ps_status;
  test::ExpectTensorEqual(Recv(response, 0), test::AsTensor<float>({-1, -2, -3}));
}

// The master's forwarding: the ps returns what it sends in its reply, and the
// worker's _Recv takes the tensor from its own request, with no RecvTensor.
TEST_F(CrossTaskTest, AForwardedTensorGoesInTheRepliesWithNoRecvTensor) {
  Build(kPsIncarnation);
  const std::string key = PsRecv(7, "edge_0_c").rendezvous_key();
  RunGraphRequest ps_request = RunRequest("s", ps_handle_, 7);
  ps_request.add_forward_key(key);
  ps_request.set_forward_max_bytes(1024);
  ps_request.set_cleanup_on_return(true);
  RunGraphResponse ps_response;
  ASSERT_TRUE(ps_->RunGraph(ps_request, &ps_response).ok());
  ASSERT_EQ(ps_response.forwarded_size(), 1);
  EXPECT_EQ(ps_response.forwarded(0).name(), key);
  EXPECT_EQ(ps_->num_steps(), 0);  // It returned everything it sent.
  // A value the ps never sent proves where the worker's came from.
  RunGraphRequest request = RunRequest("s", worker_handle_, 7);
  NamedTensorProto* forwarded = request.add_forwarded();
  forwarded->set_name(key);
  test::AsTensor<float>({4, 5, 6}).ToProto(forwarded->mutable_tensor());
  request.add_recv_key(LocalKey(kWorkerDevice, kWorkerIncarnation, "neg:0"));
  request.set_cleanup_on_return(true);
  RunGraphResponse response;
  const absl::Status s = worker_->RunGraph(request, &response);
  ASSERT_TRUE(s.ok()) << s;
  test::ExpectTensorEqual(Recv(response, 0), test::AsTensor<float>({-4, -5, -6}));
  EXPECT_EQ(ps_->num_steps(), 0);
  EXPECT_EQ(worker_->num_steps(), 0);
}

TEST_F(CrossTaskTest, ATensorTooLargeToForwardStaysForRecvTensor) {
  Build(kPsIncarnation);
  RunGraphRequest ps_request = RunRequest("s", ps_handle_, 8);
  ps_request.add_forward_key(PsRecv(8, "edge_0_c").rendezvous_key());
  ps_request.set_forward_max_bytes(4);  // Three floats do not fit.
  ps_request.set_cleanup_on_return(true);
  RunGraphResponse ps_response;
  ASSERT_TRUE(ps_->RunGraph(ps_request, &ps_response).ok());
  EXPECT_EQ(ps_response.forwarded_size(), 0);
  EXPECT_EQ(ps_->num_steps(), 1);  // Kept for the worker's RecvTensor.
  RunGraphRequest request = RunRequest("s", worker_handle_, 8);
  request.add_recv_key(LocalKey(kWorkerDevice, kWorkerIncarnation, "neg:0"));
  request.set_timeout_in_ms(60000);
  RunGraphResponse response;
  const absl::Status s = worker_->RunGraph(request, &response);
  ASSERT_TRUE(s.ok()) << s;
  test::ExpectTensorEqual(Recv(response, 0), test::AsTensor<float>({-1, -2, -3}));
}

TEST_F(CrossTaskTest, APartialRunCannotForward) {
  Build(kPsIncarnation);
  RunGraphRequest request = RunRequest("s", ps_handle_, 9);
  request.set_is_partial(true);
  request.add_forward_key(PsRecv(9, "edge_0_c").rendezvous_key());
  RunGraphResponse response;
  const absl::Status s = ps_->RunGraph(request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(ps_->num_steps(), 0);
}

TEST_F(CrossTaskTest, ARestartedProducerIsAbortedNamingTheTask) {
  Build(kPsIncarnation + 1);  // The worker's partition names an old ps incarnation.
  RunGraphResponse response;
  absl::Status ps_status;
  absl::Status s = RunStep(8, &response, &ps_status);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_NE(s.message().find("/job:ps/replica:0/task:0"), std::string::npos) << s;
  ASSERT_TRUE(Cleanup(ps_.get(), 8).ok());
}

TEST_F(CrossTaskTest, CleanupGraphCancelsAWaitingStep) {
  Build(kPsIncarnation);
  // Only the worker runs: its _Recv waits for the ps, which never runs this step.
  absl::Status status;
  std::thread worker_thread([&] {
    RunGraphRequest request = RunRequest("s", worker_handle_, 9);
    request.set_timeout_in_ms(60000);
    RunGraphResponse response;
    status = worker_->RunGraph(request, &response);
  });
  // The step exists on the ps once the worker's RecvTensor reached it.
  while (ps_->num_steps() == 0) std::this_thread::yield();
  ASSERT_TRUE(Cleanup(ps_.get(), 9).ok());
  worker_thread.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  // A late RecvTensor for the cleaned step fails at once.
  Tensor t;
  EXPECT_EQ(ps_->RecvTensor(PsRecv(9, "edge_0_c"), nullptr, &t).code(),
            absl::StatusCode::kCancelled);
}

TEST_F(CrossTaskTest, RecvTensorChecksTheKey) {
  Tensor t;
  RecvTensorRequest request;
  request.set_step_id(1);
  request.set_rendezvous_key("garbage");
  EXPECT_EQ(ps_->RecvTensor(request, nullptr, &t).code(), absl::StatusCode::kInvalidArgument);
  request.set_rendezvous_key(MakeRendezvousKey(kWorkerDevice, kWorkerIncarnation, kPsDevice, "x"));
  EXPECT_EQ(ps_->RecvTensor(request, nullptr, &t).code(), absl::StatusCode::kInvalidArgument);
  request.set_rendezvous_key(MakeRendezvousKey(kPsDevice, 0x9999, kWorkerDevice, "x"));
  EXPECT_EQ(ps_->RecvTensor(request, nullptr, &t).code(), absl::StatusCode::kAborted);
  request.set_rendezvous_key(MakeRendezvousKey(kPsDevice, kPsIncarnation, kWorkerDevice, "x"));
  request.set_timeout_in_ms(1);
  EXPECT_EQ(ps_->RecvTensor(request, nullptr, &t).code(), absl::StatusCode::kDeadlineExceeded);
}

// The master died or gave up before the ps's RunGraph came: the consumers' RecvTensor
// calls end at their deadline or when cancelled, and nothing of the step stays.
TEST_F(CrossTaskTest, ARecvTensorForAStepThatNeverRunsLeavesNothingBehind) {
  Build(kPsIncarnation);
  Tensor t;
  EXPECT_EQ(ps_->RecvTensor(PsRecv(21, "edge_0_c", /*timeout_ms=*/1), nullptr, &t).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(ps_->num_steps(), 0);

  // A consumer that gives up (its step was cancelled) ends the wait the same way.
  CancellationManager gives_up;
  absl::Status waited;
  std::thread consumer([&] {
    Tensor value;
    waited = ps_->RecvTensor(PsRecv(21, "edge_0_c"), &gives_up, &value);
  });
  while (ps_->num_steps() == 0) std::this_thread::yield();
  gives_up.StartCancel(absl::CancelledError("the consumer gave up"));
  consumer.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kCancelled) << waited;
  EXPECT_EQ(ps_->num_steps(), 0);

  // The step still runs normally afterwards.
  RunGraphResponse response;
  absl::Status ps_status;
  ASSERT_TRUE(RunStep(21, &response, &ps_status).ok());
  EXPECT_TRUE(ps_status.ok()) << ps_status;
  test::ExpectTensorEqual(Recv(response, 0), test::AsTensor<float>({-1, -2, -3}));
}

// A step that ran here keeps its tensors for the peers that have yet to ask, even when
// another RecvTensor of the step gives up.
TEST_F(CrossTaskTest, AStepThatRanKeepsItsTensorsWhenARecvTensorGivesUp) {
  Build(kPsIncarnation);
  RunGraphResponse ignored;
  ASSERT_TRUE(ps_->RunGraph(RunRequest("s", ps_handle_, 22), &ignored).ok());
  ASSERT_EQ(ps_->num_steps(), 1);
  Tensor t;
  EXPECT_EQ(ps_->RecvTensor(PsRecv(22, "not_sent", /*timeout_ms=*/1), nullptr, &t).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(ps_->num_steps(), 1);
  ASSERT_TRUE(ps_->RecvTensor(PsRecv(22, "edge_0_c"), nullptr, &t).ok());
  test::ExpectTensorEqual(t, test::AsTensor<float>({1, 2, 3}));
  EXPECT_EQ(ps_->num_steps(), 1);  // Until CleanupGraph.
  ASSERT_TRUE(Cleanup(ps_.get(), 22).ok());
  EXPECT_EQ(ps_->num_steps(), 0);
}

// A RecvTensor for a step that no RunGraph ever starts here (a lost master, or a
// caller that is not a peer) ends after WorkerOptions::recv_wait_for_step even when it
// has no deadline of its own, and leaves nothing behind.
// A ps whose RecvTensor calls wait at most two minutes for their step's RunGraph,
// timed on a clock on which every wait ends at its deadline at once.
class StepWaitTest : public WorkerTest {
 protected:
  StepWaitTest() {
    WorkerEnv env;
    env.clock = &clock_;
    WorkerOptions options = Options("ps", kPsIncarnation);
    options.recv_wait_for_step = absl::Minutes(2);
    bounded_ = std::make_unique<Worker>(options, env);
  }

  test::FakeClock clock_{test::FakeClock::Mode::kAutoAdvance};
  std::unique_ptr<Worker> bounded_;
};

TEST_F(StepWaitTest, ARecvTensorForAStepThatNeverRunsEndsAfterTheStepWait) {
  Worker& ps = *bounded_;
  test::FakeClock& clock = clock_;
  RecvTensorRequest recv;
  recv.set_step_id(31);
  recv.set_rendezvous_key(MakeRendezvousKey(kPsDevice, kPsIncarnation, kWorkerDevice, "never"));
  const absl::Time start = clock.Now();
  Tensor t;
  const absl::Status status = ps.RecvTensor(recv, nullptr, &t);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("no RunGraph of step 31 came to /job:ps/replica:0/task:0"));
  EXPECT_EQ(clock.Now() - start, absl::Minutes(2));
  EXPECT_EQ(ps.num_steps(), 0);

  // The caller's own shorter timeout still comes first.
  recv.set_timeout_in_ms(1000);
  const absl::Time again = clock.Now();
  EXPECT_EQ(ps.RecvTensor(recv, nullptr, &t).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(clock.Now() - again, absl::Seconds(1));
}

// Once a RunGraph of the step came, its RecvTensor calls wait as long as their callers
// allow: a slow producer is not cut off by the bound on steps that never start.
TEST_F(StepWaitTest, ARecvTensorOfAStepThatRanWaitsForItsCaller) {
  Worker& ps = *bounded_;
  test::FakeClock& clock = clock_;
  CreateSession(&ps, "s");
  GraphDef produces;  // A tensor for the worker, which keeps the step until its cleanup.
  test::AddConst(&produces, "c", test::AsTensor<float>({1, 2, 3}), kPsDevice);
  test::AddSend(&produces, "c/_send", "c", DT_FLOAT, "edge_0_c", kPsDevice, kPsIncarnation,
                kWorkerDevice);
  absl::StatusOr<std::string> handle = Register(&ps, "s", produces);
  ASSERT_TRUE(handle.ok()) << handle.status();
  RunGraphResponse response;
  ASSERT_TRUE(ps.RunGraph(RunRequest("s", *handle, 32), &response).ok());
  ASSERT_EQ(ps.num_steps(), 1);

  RecvTensorRequest recv;
  recv.set_step_id(32);
  recv.set_rendezvous_key(MakeRendezvousKey(kPsDevice, kPsIncarnation, kWorkerDevice, "later"));
  recv.set_timeout_in_ms(3 * 3600 * 1000);
  const absl::Time start = clock.Now();
  Tensor t;
  const absl::Status status = ps.RecvTensor(recv, nullptr, &t);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("timed out waiting for tensor"));
  EXPECT_EQ(clock.Now() - start, absl::Hours(3));
}

}  // namespace
}  // namespace overseer

// Two workers served over gRPC in this process, driven through GrpcWorker clients as
// the master would drive them.

#include "worker/rpc/grpc_worker.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/cluster/rendezvous_key.h"
#include "core/kernels/testing/kernel_test_util.h"
#include "core/node_def_util.h"
#include "core/rpc/client_context.h"
#include "core/rpc/completion_queue_loop.h"
#include "core/rpc/security.h"
#include "core/rpc/server_runner.h"
#include "grpcpp/alarm.h"
#include "gtest/gtest.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"
#include "proto/worker.grpc.pb.h"
#include "testing/eventually.h"
#include "worker/rpc/grpc_worker_service.h"
#include "worker/rpc/local_calls.h"
#include "worker/rpc/local_transfer.h"
#include "worker/testing/test_graphs.h"
#include "worker/worker.h"

namespace overseer {
namespace {

constexpr char kPsDevice[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerDevice[] = "/job:worker/replica:0/task:0/device:CPU:0";

// One worker task with its gRPC server.
struct Task {
  // `serve_local`: the task serves same-host transfers (worker/rpc/local_transfer.h);
  // `serve_local_calls`: RunGraph over its local call socket (worker/rpc/local_calls.h).
  explicit Task(const std::string& job, bool serve_local = false, bool serve_local_calls = false) {
    WorkerOptions options;
    options.job_name = job;
    // Every graph that never waits counts as quick, however slow the host: which thread
    // runs a graph must not hang on its speed.
    options.quick_run_graph = absl::Hours(1);
    ServerRunnerOptions runner_options;
    runner_options.component = "worker";
    runner_options.host = "127.0.0.1";
    runner_options.metrics_port = -1;
    runner_options.handle_signals = false;
    runner = std::make_unique<ServerRunner>(runner_options);
    // As worker_server: the tensors this task receives from its peers are read by the
    // loop that serves its calls.
    CompletionQueueLoop* loop = runner->AddCompletionQueueLoop();
    WorkerEnv env;
    env.worker_cache_factory =
        [loop](const ClusterDef& cluster) -> absl::StatusOr<std::unique_ptr<WorkerCacheInterface>> {
      GrpcWorkerOptions peers;
      peers.loop = loop;
      return std::make_unique<GrpcWorkerCache>(cluster, peers);
    };
    worker = std::make_unique<Worker>(options, env);
    if (serve_local) {
      auto server = LocalTransferServer::Start(LocalTransferServer::DefaultAddress());
      EXPECT_TRUE(server.ok()) << server.status();
      if (server.ok()) local = *std::move(server);
    }
    service = std::make_unique<GrpcWorkerService>(worker.get(), runner->metrics(), loop, 1 << 20,
                                                  local.get());
    if (serve_local_calls) {
      const absl::Status serving = service->ServeLocalCalls(LocalCallServer::DefaultAddress());
      EXPECT_TRUE(serving.ok()) << serving;
    }
    runner->AddService(service.get());
    EXPECT_TRUE(runner->Start().ok());
    client = std::make_unique<GrpcWorker>(NewWorkerChannel(runner->address()));
  }
  std::unique_ptr<Worker> worker;
  std::unique_ptr<LocalTransferServer> local;
  // Declared before the runner: a service outlives the server that calls it.
  std::unique_ptr<GrpcWorkerService> service;
  std::unique_ptr<ServerRunner> runner;
  std::unique_ptr<GrpcWorker> client;
};

using test::Eventually;

// `task`'s per-method RPC metrics in Prometheus' text format.
std::string RpcText(Task* task) {
  return prometheus::TextSerializer().Serialize(task->service->rpc_metrics()->Collect());
}

// Every metric of `task`'s server in Prometheus' text format.
std::string MetricText(Task* task) {
  return prometheus::TextSerializer().Serialize(task->runner->metrics()->Collect());
}

class GrpcWorkerTest : public ::testing::Test {
 protected:
  // `worker_local_calls`: the worker task serves RunGraph over its local call socket.
  explicit GrpcWorkerTest(bool worker_local_calls = false)
      : ps_("ps", /*serve_local=*/true),
        worker_("worker", /*serve_local=*/false, worker_local_calls) {}

  ClusterDef Cluster() {
    ClusterDef cluster;
    JobDef* ps = cluster.add_job();
    ps->set_name("ps");
    (*ps->mutable_tasks())[0] = ps_.runner->address();
    JobDef* worker = cluster.add_job();
    worker->set_name("worker");
    (*worker->mutable_tasks())[0] = worker_.runner->address();
    return cluster;
  }

  void CreateSessions() {
    CreateWorkerSessionRequest request;
    request.set_session_handle("s");
    *request.mutable_cluster() = Cluster();
    CreateWorkerSessionResponse response;
    ASSERT_TRUE(ps_.client->CreateWorkerSession(request, &response).ok());
    ASSERT_TRUE(worker_.client->CreateWorkerSession(request, &response).ok());
  }

  std::string Register(Task* task, const GraphDef& graph) {
    RegisterGraphRequest request;
    request.set_session_handle("s");
    *request.mutable_graph_def() = graph;
    RegisterGraphResponse response;
    absl::Status s = task->client->RegisterGraph(request, &response);
    EXPECT_TRUE(s.ok()) << s;
    return response.graph_handle();
  }

  static Tensor Floats(int64_t n) {
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 1000);
    return test::AsTensor<float>(values);
  }

  static void ExpectNegated(const Tensor& sent, const Tensor& got) {
    ASSERT_EQ(got.NumElements(), sent.NumElements());
    const float* want = sent.data<float>();
    const float* data = got.data<float>();
    for (int64_t i = 0; i < got.NumElements(); i += 4099) ASSERT_EQ(data[i], -want[i]) << i;
    ASSERT_EQ(data[got.NumElements() - 1], -want[got.NumElements() - 1]);
  }

  // The worker's partition of PullStep: a _Recv of the ps's "edge_x" (RecvTensor) into
  // a Neg that is fetched. The key names the ps's `ps_incarnation`, by default its own.
  GraphDef WorkerPullGraph(std::optional<uint64_t> ps_incarnation = std::nullopt) {
    GraphDef worker_graph;
    test::AddRecv(&worker_graph, "x/_recv", DT_FLOAT, "edge_x", kPsDevice,
                  ps_incarnation.value_or(ps_.worker->incarnation()), kWorkerDevice);
    NodeDef* neg = test::AddNode(&worker_graph, "neg", "Neg", kWorkerDevice, {"x/_recv"});
    SetNodeAttr(neg, "T", DT_FLOAT);
    test::AddSend(&worker_graph, "neg/_fetch", "neg", DT_FLOAT, "neg", kWorkerDevice,
                  worker_.worker->incarnation(), kWorkerDevice, true);
    return worker_graph;
  }

  // Registers the graphs of PullStep: the ps feeds "x" to a _Send to the worker
  // (WorkerPullGraph).
  void RegisterPull() {
    const uint64_t ps_incarnation = ps_.worker->incarnation();
    GraphDef ps_graph;
    test::AddRecv(&ps_graph, "x", DT_FLOAT, "x", kPsDevice, ps_incarnation, kPsDevice, true);
    test::AddSend(&ps_graph, "x/_send", "x", DT_FLOAT, "edge_x", kPsDevice, ps_incarnation,
                  kWorkerDevice);
    ps_handle_ = Register(&ps_, ps_graph);
    worker_handle_ = Register(&worker_, WorkerPullGraph());
  }

  // Runs step `step_id` of the ps's graph, feeding `x` (kept in *request).
  absl::Status RunPsSend(int64_t step_id, const Tensor& x, RunGraphRequest* request) {
    request->set_session_handle("s");
    request->set_graph_handle(ps_handle_);
    request->set_step_id(step_id);
    NamedTensorProto* send = request->add_send();
    send->set_name(MakeRendezvousKey(kPsDevice, ps_.worker->incarnation(), kPsDevice, "x"));
    x.ToProto(send->mutable_tensor());
    RunGraphResponse response;
    return ps_.client->RunGraph(*request, &response);
  }

  // Step `step_id` of RegisterPull's graphs: the ps sends `x`; the worker's -x.
  absl::StatusOr<Tensor> PullStep(int64_t step_id, const Tensor& x) {
    absl::Status ps_status;
    std::thread ps_thread([&] {
      RunGraphRequest request;
      ps_status = RunPsSend(step_id, x, &request);
    });
    RunGraphRequest request;
    request.set_session_handle("s");
    request.set_graph_handle(worker_handle_);
    request.set_step_id(step_id);
    request.set_timeout_in_ms(60000);
    request.add_recv_key(
        MakeRendezvousKey(kWorkerDevice, worker_.worker->incarnation(), kWorkerDevice, "neg"));
    RunGraphResponse response;
    absl::Status status = worker_.client->RunGraph(request, &response);
    ps_thread.join();
    if (!ps_status.ok()) return ps_status;
    if (!status.ok()) return status;
    return Tensor::FromProto(response.recv(0).tensor());
  }

  // Runs step `step_id` of a graph of the ps's own (a Const), so that the step ran on
  // the ps while none of RegisterPull's tensors was sent in it.
  void RunStepOnPs(int64_t step_id) {
    GraphDef g;
    test::AddConst(&g, "c", test::AsTensor<float>({4}), kPsDevice);
    RunGraphRequest run;
    run.set_session_handle("s");
    run.set_graph_handle(Register(&ps_, g));
    run.set_step_id(step_id);
    RunGraphResponse ran;
    absl::Status s = ps_.client->RunGraph(run, &ran);
    EXPECT_TRUE(s.ok()) << s;
  }

  void Cleanup(int64_t step_id) {
    CleanupGraphRequest cleanup;
    cleanup.set_step_id(step_id);
    CleanupGraphResponse cleaned;
    EXPECT_TRUE(ps_.client->CleanupGraph(cleanup, &cleaned).ok());
    EXPECT_TRUE(worker_.client->CleanupGraph(cleanup, &cleaned).ok());
  }

  Task ps_;
  Task worker_;
  std::string ps_handle_;
  std::string worker_handle_;
};

TEST_F(GrpcWorkerTest, AWorkerPullsALargeTensorFromAnotherInChunks) {
  CreateSessions();
  // 24 MiB of floats: many 1 MiB chunks, and well above gRPC's 4 MiB default.
  const Tensor big = Floats(6 << 20);
  RegisterPull();
  absl::StatusOr<Tensor> got = PullStep(42, big);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectNegated(big, *got);
  Cleanup(42);

  // Each task counted its calls by method: the worker pulled the tensor from the ps,
  // in the stream (the first reply names the ps's local socket; nothing asked for it).
  const std::string ps_rpcs = RpcText(&ps_);
  const std::string worker_rpcs = RpcText(&worker_);
  for (const char* line :
       {"overseer_worker_rpc_latency_seconds_count{method=\"RecvTensor\"} 1\n",
        "overseer_worker_rpc_latency_seconds_count{method=\"RunGraph\"} 1\n",
        "overseer_worker_rpc_latency_seconds_count{method=\"CleanupGraph\"} 1\n",
        "overseer_worker_rpc_errors_total{code=\"ABORTED\",method=\"RecvTensor\"} 0\n"}) {
    EXPECT_TRUE(absl::StrContains(ps_rpcs, line)) << line << ps_rpcs;
  }
  EXPECT_TRUE(absl::StrContains(
      worker_rpcs, "overseer_worker_rpc_latency_seconds_count{method=\"RecvTensor\"} 0\n"));
  EXPECT_TRUE(absl::StrContains(
      worker_rpcs, "overseer_worker_rpc_latency_seconds_count{method=\"RunGraph\"} 1\n"));
  EXPECT_TRUE(absl::StrContains(MetricText(&ps_), "overseer_worker_recv_tensor_local_total 0\n"));
}

TEST_F(GrpcWorkerTest, ATensorOnTheSameHostComesOverTheLocalSocketOnceItWasReached) {
  CreateSessions();
  RegisterPull();
  // The first pull learns the ps's socket and probes it; the next ones use it: above
  // kLocalTransferMinBytes over the socket, below it in the stream.
  const Tensor big = Floats(3 << 20);  // 12 MiB
  const Tensor small = Floats(1000);
  int64_t step = 1;
  for (const Tensor* t : {&big, &big, &small, &big}) {
    absl::StatusOr<Tensor> got = PullStep(step, *t);
    ASSERT_TRUE(got.ok()) << step << ": " << got.status();
    ExpectNegated(*t, *got);
    Cleanup(step++);
  }
  const std::string ps_metrics = MetricText(&ps_);
  EXPECT_TRUE(absl::StrContains(ps_metrics, "overseer_worker_recv_tensor_local_total 2\n"))
      << ps_metrics;
  // Every byte of the four tensors counted, whichever way it went.
  EXPECT_TRUE(
      absl::StrContains(ps_metrics, absl::StrCat("overseer_worker_recv_tensor_bytes_total ",
                                                 (3 * (int64_t{3} << 20) + 1000) * 4, "\n")))
      << ps_metrics;
  EXPECT_EQ(ps_.local->tokens_held(), 0);
  EXPECT_EQ(ps_.local->refused(), 0);
}

TEST_F(GrpcWorkerTest, ACallerThatNeverFetchesItsTokenFailsAndTheWorkerForgetsIt) {
  CreateSessions();
  RegisterPull();
  ASSERT_TRUE(PullStep(1, Floats(1000)).ok());  // Learns the socket.
  Cleanup(1);
  // A caller of the ps's RecvTensor that accepts a local transfer, reads the token and
  // goes away: the ps stops waiting for it, the tensor is gone with the call.
  RunGraphRequest send;
  std::thread ps_thread([&] { EXPECT_TRUE(RunPsSend(2, Floats(1 << 20), &send).ok()); });
  auto context = NewClientContext(absl::Seconds(30));
  RecvTensorRequest request;
  request.set_step_id(2);
  request.set_rendezvous_key(
      MakeRendezvousKey(kPsDevice, ps_.worker->incarnation(), kWorkerDevice, "edge_x"));
  request.set_accept_local(true);
  auto reader = WorkerService::NewStub(NewWorkerChannel(ps_.runner->address()))
                    ->RecvTensor(context.get(), request);
  RecvTensorResponse first;
  ASSERT_TRUE(reader->Read(&first));
  EXPECT_EQ(first.local_socket(), ps_.local->address());
  EXPECT_EQ(first.local_token().size(), static_cast<size_t>(kLocalTokenChars));
  EXPECT_TRUE(first.content().empty());
  EXPECT_EQ(first.total_bytes(), 4 << 20);
  context->TryCancel();
  EXPECT_FALSE(reader->Finish().ok());
  ps_thread.join();
  // The token is spent: presenting it now is refused.
  EXPECT_TRUE(Eventually([&] { return ps_.local->tokens_held() == 0; }));
  std::vector<char> bytes(4 << 20);
  LocalTransferReceiver late;
  EXPECT_EQ(late.Receive(ps_.local->address(), first.local_token(), absl::MakeSpan(bytes)).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ps_.local->refused(), 1);
  Cleanup(2);
}

TEST_F(GrpcWorkerTest, StatusCodesCrossTheWire) {
  GetStatusResponse status;
  ASSERT_TRUE(ps_.client->GetStatus({}, &status).ok());
  EXPECT_EQ(status.incarnation(), ps_.worker->incarnation());
  EXPECT_EQ(status.device_attributes(0).name(), kPsDevice);

  RunGraphRequest run;
  run.set_session_handle("never created");
  RunGraphResponse response;
  EXPECT_EQ(ps_.client->RunGraph(run, &response).code(), absl::StatusCode::kAborted);

  RecvTensorRequest recv;
  recv.set_step_id(1);
  recv.set_rendezvous_key(
      MakeRendezvousKey(kPsDevice, ps_.worker->incarnation() + 1, kWorkerDevice, "x"));
  Tensor t;
  absl::Status s = ps_.client->RecvTensor(recv, nullptr, &t);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_NE(s.message().find("/job:ps/replica:0/task:0"), std::string::npos) << s;

  // Errors are counted by method and code; every other series is there at 0.
  const std::string rpcs = RpcText(&ps_);
  for (const char* line :
       {"overseer_worker_rpc_errors_total{code=\"ABORTED\",method=\"RunGraph\"} 1\n",
        "overseer_worker_rpc_errors_total{code=\"ABORTED\",method=\"RecvTensor\"} 1\n",
        "overseer_worker_rpc_errors_total{code=\"UNAVAILABLE\",method=\"RunGraph\"} 0\n",
        "overseer_worker_rpc_errors_total{code=\"ABORTED\",method=\"GetStatus\"} 0\n",
        "overseer_worker_rpc_latency_seconds_count{method=\"GetStatus\"} 1\n"}) {
    EXPECT_TRUE(absl::StrContains(rpcs, line)) << line << rpcs;
  }
}

// A partition's _Recv from another task (RecvTensorAsync on the worker's loop) fails its
// step with the producer's error, its code kept and the tensor and task named.
TEST_F(GrpcWorkerTest, APeersErrorFailsTheStepNamingTheTensorAndTask) {
  CreateSessions();
  const uint64_t worker_incarnation = worker_.worker->incarnation();
  RunGraphRequest request;
  request.set_session_handle("s");
  request.set_graph_handle(Register(&worker_, WorkerPullGraph(ps_.worker->incarnation() + 1)));
  request.set_step_id(21);
  request.set_cleanup_on_return(true);
  request.add_recv_key(MakeRendezvousKey(kWorkerDevice, worker_incarnation, kWorkerDevice, "neg"));
  RunGraphResponse response;
  absl::Status s = worker_.client->RunGraph(request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(),
                                "receiving tensor 'edge_x' from task /job:ps/replica:0/task:0: "
                                "task /job:ps/replica:0/task:0 restarted"))
      << s;
  Cleanup(21);  // A failed step waits for its master's cleanup.
}

TEST_F(GrpcWorkerTest, CancellingAWaitingRecvTensorEndsIt) {
  RecvTensorRequest recv;
  recv.set_step_id(5);
  recv.set_rendezvous_key(
      MakeRendezvousKey(kPsDevice, ps_.worker->incarnation(), kWorkerDevice, "never"));
  CancellationManager cm;
  absl::Status s;
  std::thread receiver([&] {
    Tensor t;
    s = ps_.client->RecvTensor(recv, &cm, &t);
  });
  cm.StartCancel(absl::CancelledError("step cancelled"));
  receiver.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  // The ps's handler stops waiting too: it no longer holds a server thread.
  EXPECT_TRUE(Eventually([&] { return ps_.service->recv_tensors_waiting() == 0; }));
  CleanupGraphRequest cleanup;
  cleanup.set_step_id(5);
  CleanupGraphResponse cleaned;
  EXPECT_TRUE(ps_.client->CleanupGraph(cleanup, &cleaned).ok());
}

TEST_F(GrpcWorkerTest, AMasterThatGivesUpOnRunGraphEndsTheStep) {
  CreateSessions();
  // The worker's partition waits for a tensor of the ps's partition, which never runs
  // (as when the master dies between its RunGraph calls).
  const std::string handle = Register(&worker_, WorkerPullGraph());

  auto stub = WorkerService::NewStub(NewWorkerChannel(worker_.runner->address()));
  grpc::ClientContext context;
  grpc::Status status;
  std::thread master([&] {
    RunGraphRequest request;
    request.set_session_handle("s");
    request.set_graph_handle(handle);
    request.set_step_id(7);
    request.add_recv_key(
        MakeRendezvousKey(kWorkerDevice, worker_.worker->incarnation(), kWorkerDevice, "neg"));
    RunGraphResponse response;
    status = stub->RunGraph(&context, request, &response);
  });
  // The worker runs the step and asks the ps for the tensor (the ps's RecvTensor
  // handler waits, watched).
  ASSERT_TRUE(Eventually([&] {
    return worker_.worker->num_steps() == 1 && ps_.worker->num_steps() == 1 &&
           ps_.service->recv_tensors_waiting() == 1;
  }));
  context.TryCancel();
  master.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  // No CleanupGraph comes, yet the worker's step ends, and with it the worker's
  // RecvTensor call, so the ps's handler stops waiting as well.
  EXPECT_TRUE(Eventually([&] {
    return worker_.worker->num_steps() == 0 && ps_.service->recv_tensors_waiting() == 0;
  }));
  CleanupGraphRequest cleanup;
  cleanup.set_step_id(7);
  CleanupGraphResponse cleaned;
  EXPECT_TRUE(ps_.client->CleanupGraph(cleanup, &cleaned).ok());
}

// The value of counter `family`{thread=`thread`} in `task`'s registry; -1 if absent.
double CounterOn(Task* task, const std::string& family_name, const std::string& thread) {
  for (const prometheus::MetricFamily& family : task->runner->metrics()->Collect()) {
    if (family.name != family_name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        if (label.name == "thread" && label.value == thread) return metric.counter.value;
      }
    }
  }
  return -1;
}

double RunGraphsOn(Task* task, const std::string& thread) {
  return CounterOn(task, "overseer_worker_rungraph_total", thread);
}

double RecvTensorsOn(Task* task, const std::string& thread) {
  return CounterOn(task, "overseer_worker_recv_tensor_total", thread);
}

TEST_F(GrpcWorkerTest, ATensorAlreadyProducedIsSentFromTheThreadThatReadsTheCall) {
  CreateSessions();
  RegisterPull();
  GrpcWorkerOptions options;
  options.local_transfers = false;  // Every size in the stream.
  GrpcWorker caller(NewWorkerChannel(ps_.runner->address()), options);
  auto request_of = [&](int64_t step_id, uint64_t incarnation) {
    RecvTensorRequest request;
    request.set_step_id(step_id);
    request.set_rendezvous_key(MakeRendezvousKey(kPsDevice, incarnation, kWorkerDevice, "edge_x"));
    return request;
  };
  // One message with the status; two, the second referencing the tensor; three chunks
  // of at most 1 MiB. The ps's step ran first: each tensor is there when asked for.
  int64_t step = 0;
  for (const int64_t n : {int64_t{1000}, int64_t{4097}, int64_t{3} << 18}) {
    const Tensor x = Floats(n);
    RunGraphRequest send;
    ASSERT_TRUE(RunPsSend(++step, x, &send).ok());
    Tensor got;
    absl::Status s = caller.RecvTensor(request_of(step, ps_.worker->incarnation()), nullptr, &got);
    ASSERT_TRUE(s.ok()) << n << ": " << s;
    ASSERT_EQ(got.NumElements(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got.data<float>()[i], x.data<float>()[i]) << i;
    Cleanup(step);
  }
  EXPECT_EQ(RecvTensorsOn(&ps_, "loop"), 3);
  EXPECT_EQ(RecvTensorsOn(&ps_, "pool"), 0);

  // A call that comes before its step ran here waits on a thread of the pool.
  const Tensor x = Floats(100);
  Tensor got;
  absl::Status waited;
  const RecvTensorRequest early = request_of(++step, ps_.worker->incarnation());
  std::thread receiver([&] { waited = caller.RecvTensor(early, nullptr, &got); });
  ASSERT_TRUE(Eventually([&] { return ps_.service->recv_tensors_waiting() == 1; }));
  RunGraphRequest send;
  ASSERT_TRUE(RunPsSend(step, x, &send).ok());
  receiver.join();
  ASSERT_TRUE(waited.ok()) << waited;
  EXPECT_EQ(got.data<float>()[99], x.data<float>()[99]);
  Cleanup(step);
  EXPECT_EQ(RecvTensorsOn(&ps_, "pool"), 1);

  // One that comes after its step ran here, before its tensor, holds no thread: the
  // ps's _Send answers it, on the thread that runs the ps's step.
  RunStepOnPs(++step);
  const RecvTensorRequest after_run = request_of(step, ps_.worker->incarnation());
  std::thread second([&] { waited = caller.RecvTensor(after_run, nullptr, &got); });
  ASSERT_TRUE(Eventually([&] { return ps_.service->recv_tensors_waiting() == 1; }));
  const Tensor y = Floats(5000);  // Over 16 KiB: two messages, then the status.
  RunGraphRequest send_y;
  ASSERT_TRUE(RunPsSend(step, y, &send_y).ok());
  second.join();
  ASSERT_TRUE(waited.ok()) << waited;
  EXPECT_EQ(got.data<float>()[4999], y.data<float>()[4999]);
  Cleanup(step);
  EXPECT_EQ(RecvTensorsOn(&ps_, "producer"), 1);
  EXPECT_EQ(RecvTensorsOn(&ps_, "pool"), 1);

  // An error that needs no wait is answered on the loop too.
  EXPECT_EQ(
      caller.RecvTensor(request_of(++step, ps_.worker->incarnation() + 1), nullptr, &got).code(),
      absl::StatusCode::kAborted);
  EXPECT_EQ(RecvTensorsOn(&ps_, "loop"), 4);
  EXPECT_EQ(RecvTensorsOn(&ps_, "producer"), 1);
  EXPECT_EQ(ps_.service->recv_tensors_waiting(), 0);
  EXPECT_EQ(ps_.worker->num_steps(), 0);
}

TEST_F(GrpcWorkerTest, AWaitWithoutAThreadEndsAtItsTimeoutOrWhenTheCallerGoesAway) {
  CreateSessions();
  RunStepOnPs(9);

  RecvTensorRequest request;
  request.set_step_id(9);
  request.set_rendezvous_key(
      MakeRendezvousKey(kPsDevice, ps_.worker->incarnation(), kWorkerDevice, "never"));
  request.set_timeout_in_ms(200);
  Tensor t;
  absl::Status s = ps_.client->RecvTensor(request, nullptr, &t);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "timed out waiting for tensor 'never'")) << s;

  request.set_timeout_in_ms(0);
  CancellationManager cm;
  std::thread receiver([&] { s = ps_.client->RecvTensor(request, &cm, &t); });
  ASSERT_TRUE(Eventually([&] { return ps_.service->recv_tensors_waiting() == 1; }));
  cm.StartCancel(absl::CancelledError("step cancelled"));
  receiver.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  // The ps saw the call end and stopped waiting; the key may be waited for again.
  EXPECT_TRUE(Eventually([&] { return ps_.service->recv_tensors_waiting() == 0; }));
  EXPECT_EQ(RecvTensorsOn(&ps_, "producer"), 2);
  EXPECT_EQ(RecvTensorsOn(&ps_, "pool"), 0);
  Cleanup(9);
  EXPECT_EQ(ps_.worker->num_steps(), 0);
}

TEST_F(GrpcWorkerTest, AQuickGraphRunsOnTheThreadThatReadsTheCallsAfterItsFirstRun) {
  CreateSessions();
  GraphDef g;
  test::AddConst(&g, "c", test::AsTensor<float>({4}), kPsDevice);
  test::AddSend(&g, "c/_fetch", "c", DT_FLOAT, "c:0", kPsDevice, ps_.worker->incarnation(),
                kPsDevice, true);
  const std::string handle = Register(&ps_, g);
  for (int64_t step = 1; step <= 5; ++step) {
    RunGraphRequest request;
    request.set_session_handle("s");
    request.set_graph_handle(handle);
    request.set_step_id(step);
    request.set_cleanup_on_return(true);
    request.add_recv_key(MakeRendezvousKey(kPsDevice, ps_.worker->incarnation(), kPsDevice, "c:0"));
    RunGraphResponse response;
    ASSERT_TRUE(ps_.client->RunGraph(request, &response).ok());
    ASSERT_EQ(response.recv_size(), 1);
  }
  // The first run, of unknown length, started where it was read with its costly nodes
  // on the pool (it never waits); the others run where they were read.
  EXPECT_EQ(RunGraphsOn(&ps_, "async"), 1);
  EXPECT_EQ(RunGraphsOn(&ps_, "loop"), 4);
  EXPECT_EQ(RunGraphsOn(&ps_, "pool"), 0);
  EXPECT_EQ(ps_.worker->num_steps(), 0);
}

// The worker's partition waits only for the ps's tensor (an async _Recv): its RunGraph
// starts on the thread that reads the calls and holds no thread while it waits.
TEST_F(GrpcWorkerTest, AGraphThatWaitsOnlyForAnotherTasksTensorHoldsNoThread) {
  CreateSessions();
  RegisterPull();
  for (int64_t step = 1; step <= 2; ++step) {
    absl::Status status;
    RunGraphResponse response;
    std::thread master([&] {
      RunGraphRequest request;
      request.set_session_handle("s");
      request.set_graph_handle(worker_handle_);
      request.set_step_id(step);
      request.set_timeout_in_ms(60000);
      request.add_recv_key(
          MakeRendezvousKey(kWorkerDevice, worker_.worker->incarnation(), kWorkerDevice, "neg"));
      status = worker_.client->RunGraph(request, &response);
    });
    // The worker asked the ps for the tensor, which the ps has not produced.
    ASSERT_TRUE(Eventually([&] { return ps_.service->recv_tensors_waiting() == 1; }));
    EXPECT_EQ(RunGraphsOn(&worker_, "async"), step);
    EXPECT_EQ(RunGraphsOn(&worker_, "pool"), 0);
    RunGraphRequest send;
    ASSERT_TRUE(RunPsSend(step, test::AsTensor<float>({2, 3}), &send).ok());
    master.join();
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ(response.recv_size(), 1);
    absl::StatusOr<Tensor> neg = Tensor::FromProto(response.recv(0).tensor());
    ASSERT_TRUE(neg.ok()) << neg.status();
    test::ExpectTensorEqual(*neg, test::AsTensor<float>({-2, -3}));
    Cleanup(step);
  }
  EXPECT_EQ(worker_.worker->num_steps(), 0);
}

TEST_F(GrpcWorkerTest, QuickGraphsRunWhileAnotherGraphWaits) {
  CreateSessions();
  const uint64_t incarnation = ps_.worker->incarnation();
  GraphDef dequeues;
  test::AddDequeue(&dequeues, "dequeue", kPsDevice);
  test::AddSend(&dequeues, "dequeue/_fetch", "dequeue", DT_FLOAT, "dequeue:0", kPsDevice,
                incarnation, kPsDevice, true);
  GraphDef enqueues;
  test::AddConst(&enqueues, "v", test::AsTensor<float>({7}), kPsDevice);
  test::AddEnqueue(&enqueues, "enqueue", "v", kPsDevice);
  GraphDef quick;
  test::AddConst(&quick, "c", test::AsTensor<float>({1}), kPsDevice);
  test::AddSend(&quick, "c/_fetch", "c", DT_FLOAT, "c:0", kPsDevice, incarnation, kPsDevice, true);
  const std::string dequeue_handle = Register(&ps_, dequeues);
  const std::string enqueue_handle = Register(&ps_, enqueues);
  const std::string quick_handle = Register(&ps_, quick);
  auto request = [](const std::string& handle, int64_t step) {
    RunGraphRequest r;
    r.set_session_handle("s");
    r.set_graph_handle(handle);
    r.set_step_id(step);
    r.set_cleanup_on_return(true);
    return r;
  };

  // A step waits for an element of the empty queue.
  absl::Status waited;
  RunGraphResponse dequeued;
  std::thread waiting([&] {
    RunGraphRequest r = request(dequeue_handle, 1);
    r.add_recv_key(MakeRendezvousKey(kPsDevice, incarnation, kPsDevice, "dequeue:0"));
    waited = ps_.client->RunGraph(r, &dequeued);
  });
  ASSERT_TRUE(Eventually([&] { return ps_.worker->num_steps() == 1; }));
  // Quick graphs, on the loop's thread after their first run, are not held up by it.
  for (int64_t step = 2; step <= 6; ++step) {
    RunGraphRequest r = request(quick_handle, step);
    r.add_recv_key(MakeRendezvousKey(kPsDevice, incarnation, kPsDevice, "c:0"));
    RunGraphResponse response;
    ASSERT_TRUE(ps_.client->RunGraph(r, &response).ok());
  }
  EXPECT_GE(RunGraphsOn(&ps_, "loop"), 4);
  // Nor is a graph that may wait itself (an enqueue), which ends the first one's wait.
  RunGraphResponse ignored;
  ASSERT_TRUE(ps_.client->RunGraph(request(enqueue_handle, 7), &ignored).ok());
  waiting.join();
  ASSERT_TRUE(waited.ok()) << waited;
  ASSERT_EQ(dequeued.recv_size(), 1);
  absl::StatusOr<Tensor> value = Tensor::FromProto(dequeued.recv(0).tensor());
  ASSERT_TRUE(value.ok());
  test::ExpectTensorEqual(*value, test::AsTensor<float>({7}));
}

// A server with nothing but a completion queue loop, standing for the master's.
struct LoopServer {
  LoopServer() {
    ServerRunnerOptions options;
    options.component = "master";
    options.host = "127.0.0.1";
    options.metrics_port = -1;
    options.handle_signals = false;
    runner = std::make_unique<ServerRunner>(options);
    loop = runner->AddCompletionQueueLoop();
    EXPECT_TRUE(runner->Start().ok());
  }
  // The loop's thread, as seen by an operation completing on it.
  std::thread::id LoopThread() {
    std::thread::id id;
    absl::Notification ran;
    grpc::Alarm alarm;
    alarm.Set(loop->cq(), absl::ToChronoTime(absl::Now()), CompletionQueueLoop::NewTag([&](bool) {
                id = std::this_thread::get_id();
                ran.Notify();
              }));
    ran.WaitForNotification();
    return id;
  }
  std::unique_ptr<ServerRunner> runner;
  CompletionQueueLoop* loop = nullptr;
};

// Starts an asynchronous call with `start` (given the call's `done`), runs
// `while_waiting`, and waits for `done`: returns what it got; `thread` gets the thread
// that ran it.
template <typename Result>
Result CallAndWait(const std::function<void(std::function<void(Result)>)>& start,
                   std::thread::id* thread, const std::function<void()>& while_waiting) {
  absl::Notification finished;
  Result result;
  start([&](Result r) {
    result = std::move(r);
    *thread = std::this_thread::get_id();
    finished.Notify();
  });
  if (while_waiting) while_waiting();
  finished.WaitForNotification();
  return result;
}

absl::Status RunGraphAsyncAndWait(GrpcWorker* worker, const RunGraphRequest& request,
                                  RunGraphResponse* response, CancellationManager* cm,
                                  std::thread::id* thread,
                                  const std::function<void()>& while_running = nullptr) {
  return CallAndWait<absl::Status>(
      [&](std::function<void(absl::Status)> done) {
        worker->RunGraphAsync(&request, response, cm, std::move(done));
      },
      thread, while_running);
}

// Runs `request` with RunGraphAsync through `client`, and cancels `cm` once `running()`
// holds; returns the call's status.
absl::Status RunAndCancel(GrpcWorker* client, const RunGraphRequest& request,
                          CancellationManager* cm, const std::function<bool()>& running) {
  RunGraphResponse response;
  std::thread::id thread;
  return RunGraphAsyncAndWait(client, request, &response, cm, &thread, [&] {
    ASSERT_TRUE(Eventually(running));
    cm->StartCancel(absl::CancelledError("the client gave up"));
  });
}

TEST_F(GrpcWorkerTest, RunGraphAsyncOnALoopRepliesOnTheLoopThread) {
  CreateSessions();
  LoopServer master;
  GrpcWorkerOptions options;
  options.loop = master.loop;
  GrpcWorker client(NewWorkerChannel(worker_.runner->address()), options);
  const uint64_t incarnation = worker_.worker->incarnation();
  GraphDef graph;
  NodeDef* c = test::AddNode(&graph, "c", "Const", kWorkerDevice, {});
  SetNodeAttr(c, "dtype", DT_FLOAT);
  SetNodeAttr(c, "value", Tensor::Scalar<float>(3.0f));
  test::AddSend(&graph, "c/_fetch", "c", DT_FLOAT, "c", kWorkerDevice, incarnation, kWorkerDevice,
                true);
  RunGraphRequest request;
  request.set_session_handle("s");
  request.set_graph_handle(Register(&worker_, graph));
  request.set_step_id(11);
  request.set_cleanup_on_return(true);
  request.add_recv_key(MakeRendezvousKey(kWorkerDevice, incarnation, kWorkerDevice, "c"));
  RunGraphResponse response;
  std::thread::id thread;
  absl::Status s = RunGraphAsyncAndWait(&client, request, &response, nullptr, &thread);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(response.recv_size(), 1);
  EXPECT_EQ(Tensor::FromProto(response.recv(0).tensor())->scalar<float>(), 3.0f);
  EXPECT_EQ(thread, master.LoopThread());
  // An unknown session crosses the wire as on the synchronous call.
  request.set_session_handle("never created");
  EXPECT_EQ(RunGraphAsyncAndWait(&client, request, &response, nullptr, &thread).code(),
            absl::StatusCode::kAborted);
}

TEST_F(GrpcWorkerTest, CancellingRunGraphAsyncEndsTheCallAndTheWorkersStep) {
  CreateSessions();
  const uint64_t worker_incarnation = worker_.worker->incarnation();
  // The partition waits for a tensor of the ps that never comes.
  RunGraphRequest request;
  request.set_session_handle("s");
  request.set_graph_handle(Register(&worker_, WorkerPullGraph()));
  request.add_recv_key(MakeRendezvousKey(kWorkerDevice, worker_incarnation, kWorkerDevice, "neg"));
  LoopServer master;
  int64_t step_id = 12;
  for (CompletionQueueLoop* loop : {master.loop, static_cast<CompletionQueueLoop*>(nullptr)}) {
    SCOPED_TRACE(loop != nullptr ? "on the loop" : "without a loop");
    request.set_step_id(++step_id);
    GrpcWorkerOptions options;
    options.loop = loop;
    GrpcWorker client(NewWorkerChannel(worker_.runner->address()), options);
    CancellationManager cm;
    // Cancelled once the worker runs the step and its RecvTensor waits on the ps.
    absl::Status s = RunAndCancel(&client, request, &cm, [&] {
      return worker_.worker->num_steps() == 1 && ps_.worker->num_steps() == 1;
    });
    EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
    // The worker sees its caller give up and ends the step, and with it its RecvTensor.
    EXPECT_TRUE(Eventually([&] {
      return worker_.worker->num_steps() == 0 && ps_.worker->num_steps() == 0 &&
             ps_.service->recv_tensors_waiting() == 0;
    }));
    // Cancelled before it starts: done at once.
    RunGraphResponse response;
    std::thread::id thread;
    EXPECT_EQ(RunGraphAsyncAndWait(&client, request, &response, &cm, &thread).code(),
              absl::StatusCode::kCancelled);
  }
}

absl::StatusOr<Tensor> RecvTensorAsyncAndWait(
    GrpcWorker* worker, const RecvTensorRequest& request, CancellationManager* cm,
    std::thread::id* thread, const std::function<void()>& while_waiting = nullptr) {
  return CallAndWait<absl::StatusOr<Tensor>>(
      [&](std::function<void(absl::StatusOr<Tensor>)> done) {
        worker->RecvTensorAsync(request, cm, std::move(done));
      },
      thread, while_waiting);
}

// A worker's _Recv from another task waits without a thread: the tensor is read, and
// the kernel's `done` run, by the loop's thread, whether it comes in the stream or (but
// for the socket's read) over the local socket.
TEST_F(GrpcWorkerTest, RecvTensorAsyncOnALoopEndsOnTheLoopThread) {
  CreateSessions();
  RegisterPull();
  LoopServer loop;
  GrpcWorkerOptions options;
  options.loop = loop.loop;
  GrpcWorker client(NewWorkerChannel(ps_.runner->address()), options);
  RecvTensorRequest request;
  request.set_rendezvous_key(
      MakeRendezvousKey(kPsDevice, ps_.worker->incarnation(), kWorkerDevice, "edge_x"));
  request.set_timeout_in_ms(60000);
  int64_t step = 70;
  // Small, then big: the small one's reply names the ps's socket, the big one comes
  // over it. The first reply that names a socket ends on a pool thread, which probes
  // the socket (a connect may block); every other call ends on the loop's thread.
  bool probed = false;
  for (const Tensor& x : {Floats(1000), Floats(3 << 20)}) {
    RunGraphRequest run;
    ASSERT_TRUE(RunPsSend(++step, x, &run).ok());
    request.set_step_id(step);
    std::thread::id thread;
    absl::StatusOr<Tensor> got = RecvTensorAsyncAndWait(&client, request, nullptr, &thread);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->NumElements(), x.NumElements());
    EXPECT_EQ(got->data<float>()[x.NumElements() - 1], x.data<float>()[x.NumElements() - 1]);
    if (probed) {
      EXPECT_EQ(thread, loop.LoopThread());
    } else {
      EXPECT_NE(thread, loop.LoopThread());
    }
    probed = true;
    Cleanup(step);
  }
  EXPECT_TRUE(absl::StrContains(MetricText(&ps_), "overseer_worker_recv_tensor_local_total 1\n"))
      << MetricText(&ps_);

  // A tensor that never comes: cancelling ends the wait, on the loop's thread too.
  request.set_step_id(++step);
  RunStepOnPs(step);
  CancellationManager cm;
  std::thread::id thread;
  absl::StatusOr<Tensor> got = RecvTensorAsyncAndWait(&client, request, &cm, &thread, [&] {
    ASSERT_TRUE(Eventually([&] { return ps_.service->recv_tensors_waiting() == 1; }));
    cm.StartCancel(absl::CancelledError("the step was cancelled"));
  });
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled) << got.status();
  EXPECT_EQ(thread, loop.LoopThread());
  EXPECT_TRUE(Eventually([&] { return ps_.service->recv_tensors_waiting() == 0; }));
  Cleanup(step);
  // Cancelled before it starts: done at once.
  EXPECT_EQ(RecvTensorAsyncAndWait(&client, request, &cm, &thread).status().code(),
            absl::StatusCode::kCancelled);
}

TEST(GrpcWorkerDeadPeerTest, AnUnreachableWorkerIsUnavailable) {
  // Bind a port, then close it: nothing listens there any more.
  int port;
  {
    ServerRunnerOptions options;
    options.host = "127.0.0.1";
    options.metrics_port = -1;
    options.handle_signals = false;
    ServerRunner runner(options);
    ASSERT_TRUE(runner.Start().ok());
    port = runner.port();
  }
  GrpcWorkerOptions options;
  options.rpc_timeout = absl::Seconds(20);
  GrpcWorker dead(NewWorkerChannel(absl::StrCat("127.0.0.1:", port)), options);
  GetStatusResponse response;
  EXPECT_EQ(dead.GetStatus({}, &response).code(), absl::StatusCode::kUnavailable);
  RecvTensorRequest recv;
  recv.set_rendezvous_key(MakeRendezvousKey(kPsDevice, 1, kWorkerDevice, "x"));
  recv.set_timeout_in_ms(20000);
  Tensor t;
  EXPECT_EQ(dead.RecvTensor(recv, nullptr, &t).code(), absl::StatusCode::kUnavailable);
  // RunGraphAsync, on a loop and without one.
  LoopServer master;
  for (CompletionQueueLoop* loop : {master.loop, static_cast<CompletionQueueLoop*>(nullptr)}) {
    options.loop = loop;
    GrpcWorker dead_async(NewWorkerChannel(absl::StrCat("127.0.0.1:", port)), options);
    RunGraphRequest run;
    run.set_timeout_in_ms(20000);
    RunGraphResponse response;
    std::thread::id thread;
    EXPECT_EQ(RunGraphAsyncAndWait(&dead_async, run, &response, nullptr, &thread).code(),
              absl::StatusCode::kUnavailable);
  }
}

// RunGraph calls that came to `task` over its local call socket.
double LocalRunGraphs(Task* task) {
  for (const prometheus::MetricFamily& family : task->runner->metrics()->Collect()) {
    if (family.name == "overseer_worker_rungraph_local_total") {
      return family.metric.at(0).counter.value;
    }
  }
  return -1;
}

// The worker task serves RunGraph over its local call socket too.
class GrpcWorkerLocalCallsTest : public GrpcWorkerTest {
 protected:
  GrpcWorkerLocalCallsTest() : GrpcWorkerTest(/*worker_local_calls=*/true) {}

  // A step of a Const (3) on the worker, fetched; the graph registered once.
  RunGraphRequest ConstStep(int64_t step_id) {
    const uint64_t incarnation = worker_.worker->incarnation();
    if (const_handle_.empty()) {
      GraphDef graph;
      NodeDef* c = test::AddNode(&graph, "c", "Const", kWorkerDevice, {});
      SetNodeAttr(c, "dtype", DT_FLOAT);
      SetNodeAttr(c, "value", Tensor::Scalar<float>(3.0f));
      test::AddSend(&graph, "c/_fetch", "c", DT_FLOAT, "c", kWorkerDevice, incarnation,
                    kWorkerDevice, true);
      const_handle_ = Register(&worker_, graph);
    }
    RunGraphRequest request;
    request.set_session_handle("s");
    request.set_graph_handle(const_handle_);
    request.set_step_id(step_id);
    request.set_cleanup_on_return(true);
    request.add_recv_key(MakeRendezvousKey(kWorkerDevice, incarnation, kWorkerDevice, "c"));
    return request;
  }

  static float Fetched(const RunGraphResponse& response) {
    if (response.recv_size() != 1) return -1;
    absl::StatusOr<Tensor> t = Tensor::FromProto(response.recv(0).tensor());
    return t.ok() ? t->scalar<float>() : -1;
  }

  std::string const_handle_;
};

TEST_F(GrpcWorkerLocalCallsTest, RunGraphGoesOverTheLocalSocketOnceAReplyNamedIt) {
  CreateSessions();
  int64_t step = 0;
  RunGraphResponse response;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(worker_.client->RunGraph(ConstStep(++step), &response).ok());
    EXPECT_EQ(Fetched(response), 3.0f);
    // The first went over gRPC and its reply named the socket; the others came over it.
    EXPECT_EQ(LocalRunGraphs(&worker_), i);
  }
  // RunGraphAsync too, on a loop and without one: each new client's first call goes
  // over gRPC, its second over the socket, on the connection the first client opened.
  LoopServer master;
  for (CompletionQueueLoop* loop : {master.loop, static_cast<CompletionQueueLoop*>(nullptr)}) {
    SCOPED_TRACE(loop != nullptr ? "on the loop" : "without a loop");
    GrpcWorkerOptions options;
    options.loop = loop;
    GrpcWorker client(NewWorkerChannel(worker_.runner->address()), options);
    const double before = LocalRunGraphs(&worker_);
    for (int i = 0; i < 2; ++i) {
      std::thread::id thread;
      absl::Status s =
          RunGraphAsyncAndWait(&client, ConstStep(++step), &response, nullptr, &thread);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(Fetched(response), 3.0f);
    }
    EXPECT_EQ(LocalRunGraphs(&worker_), before + 1);
    EXPECT_EQ(worker_.service->local_call_connections(), 1);
  }
  // Errors cross as over gRPC: an unknown session is ABORTED, an unknown graph NOT_FOUND.
  RunGraphRequest unknown = ConstStep(++step);
  unknown.set_session_handle("never created");
  EXPECT_EQ(worker_.client->RunGraph(unknown, &response).code(), absl::StatusCode::kAborted);
  unknown = ConstStep(++step);
  unknown.set_graph_handle("no such graph");
  EXPECT_EQ(worker_.client->RunGraph(unknown, &response).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LocalRunGraphs(&worker_), 6);
  // A client told not to keeps to gRPC.
  GrpcWorkerOptions grpc_only;
  grpc_only.local_calls = false;
  GrpcWorker client(NewWorkerChannel(worker_.runner->address()), grpc_only);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(client.RunGraph(ConstStep(++step), &response).ok());
  EXPECT_EQ(LocalRunGraphs(&worker_), 6);
  EXPECT_EQ(worker_.worker->num_steps(), 0);
}

TEST_F(GrpcWorkerLocalCallsTest, CancellingALocalRunGraphEndsTheWorkersStep) {
  CreateSessions();
  GrpcWorker client(NewWorkerChannel(worker_.runner->address()));
  RunGraphResponse response;
  ASSERT_TRUE(client.RunGraph(ConstStep(1), &response).ok());  // Names the socket.
  // The partition waits for a tensor of the ps that never comes.
  RunGraphRequest request;
  request.set_session_handle("s");
  request.set_graph_handle(Register(&worker_, WorkerPullGraph()));
  request.set_step_id(2);
  request.add_recv_key(
      MakeRendezvousKey(kWorkerDevice, worker_.worker->incarnation(), kWorkerDevice, "neg"));
  CancellationManager cm;
  absl::Status s = RunAndCancel(&client, request, &cm, [&] {
    return worker_.worker->num_steps() == 1 && ps_.worker->num_steps() == 1;
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_EQ(LocalRunGraphs(&worker_), 1);
  // The worker hears its caller give up and ends the step, and with it its RecvTensor.
  EXPECT_TRUE(Eventually([&] {
    return worker_.worker->num_steps() == 0 && ps_.worker->num_steps() == 0 &&
           ps_.service->recv_tensors_waiting() == 0;
  }));
}

// Calls straight to the socket, as any process on the host could send them.
TEST_F(GrpcWorkerLocalCallsTest, ABadLocalCallIsRefusedAndTheSocketServesOn) {
  CreateSessions();
  const std::string address = worker_.service->local_calls_address();
  ASSERT_FALSE(address.empty());
  absl::StatusOr<std::unique_ptr<LocalCallChannel>> channel = LocalCallChannel::Connect(address);
  ASSERT_TRUE(channel.ok()) << channel.status();
  auto call = [&](uint16_t method, std::string body) {
    absl::Notification replied;
    absl::StatusOr<std::string> reply;
    (*channel)->Call(method, std::move(body), absl::Now() + absl::Seconds(60), nullptr,
                     [&](absl::StatusOr<std::string> r) {
                       reply = std::move(r);
                       replied.Notify();
                     });
    replied.WaitForNotification();
    return reply;
  };
  const absl::StatusOr<std::string> garbage =
      call(kLocalRunGraphMethod, std::string(11, static_cast<char>(0xff)));
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument) << garbage.status();
  const absl::StatusOr<std::string> unknown = call(99, "");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnimplemented) << unknown.status();
  EXPECT_TRUE(absl::StrContains(unknown.status().message(), "99")) << unknown.status();
  // The same connection serves a good call.
  const absl::StatusOr<std::string> good =
      call(kLocalRunGraphMethod, ConstStep(1).SerializeAsString());
  ASSERT_TRUE(good.ok()) << good.status();
  RunGraphResponse response;
  ASSERT_TRUE(response.ParseFromString(*good));
  EXPECT_EQ(Fetched(response), 3.0f);
}

// The socket cannot authenticate its callers: with security on there is none.
TEST(GrpcWorkerLocalCallsSecurityTest, ThereIsNoLocalCallSocketWithSecurityOn) {
  SecurityOptions token;
  token.token = "a cluster token";
  token.identity = "worker";
  ASSERT_TRUE(InstallSecurity(token).ok());
  {
    Task task("worker");
    const absl::Status serving = task.service->ServeLocalCalls(LocalCallServer::DefaultAddress());
    EXPECT_EQ(serving.code(), absl::StatusCode::kFailedPrecondition) << serving;
    EXPECT_EQ(task.service->local_calls_address(), "");
  }
  ASSERT_TRUE(InstallSecurity(SecurityOptions()).ok());
}

}  // namespace
}  // namespace overseer

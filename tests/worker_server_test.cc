// Two real worker_server processes (a ps and a worker task), each on a loopback port it
// bound itself: a 64 MiB tensor crosses from one to the other with RecvTensor, kill -9
// of the ps makes pulls from it fail UNAVAILABLE within the deadline, SIGTERM exits 0;
// bursts of waiting RecvTensor calls reuse the server's threads.

#include <dirent.h>
#include <signal.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "core/cluster/rendezvous_key.h"
#include "core/node_def_util.h"
#include "core/rpc/client_context.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "core/rpc/testing/http_get.h"
#include "gtest/gtest.h"
#include "testing/eventually.h"
#include "testing/server_process.h"
#include "worker/rpc/grpc_worker.h"
#include "worker/testing/test_graphs.h"

namespace overseer {
namespace {

// A worker_server task named by `job` (index 0) that binds a free port itself and
// learns the cluster from each session; `args` adds flags.
std::unique_ptr<test::ServerProcess> StartTask(const std::string& job,
                                               std::vector<std::string> args = {}) {
  args.insert(args.begin(), {"--job_name=" + job, "--task_index=0"});
  return std::make_unique<test::ServerProcess>("worker/worker_server", std::move(args));
}

// Whether the task's health service answers SERVING within `timeout`.
bool WaitServing(const test::ServerProcess& task, absl::Duration timeout) {
  auto stub = grpc::health::v1::Health::NewStub(NewWorkerChannel(task.target()));
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    auto context = NewClientContext(absl::Seconds(5));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    if (stub->Check(context.get(), request, &response).ok() &&
        response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      return true;
    }
  }
  return false;
}

// The ids of the process's threads now.
std::set<int> Threads(pid_t pid) {
  std::set<int> ids;
  DIR* dir = ::opendir(absl::StrCat("/proc/", pid, "/task").c_str());
  if (dir == nullptr) return ids;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ids.insert(std::atoi(entry->d_name));
  }
  ::closedir(dir);
  return ids;
}

// The value of an unlabelled metric on the task's /metrics; -1 if absent.
double Metric(const test::ServerProcess& task, const std::string& name) {
  absl::StatusOr<std::string> page = test::HttpGet(task.metrics_port(), "/metrics");
  if (!page.ok()) return -1;
  for (absl::string_view line : absl::StrSplit(*page, '\n')) {
    double value = 0;
    if (absl::ConsumePrefix(&line, name + " ") && absl::SimpleAtod(line, &value)) return value;
  }
  return -1;
}

constexpr char kPsDevice[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerDevice[] = "/job:worker/replica:0/task:0/device:CPU:0";

class WorkerServerTest : public ::testing::Test {
 protected:
  WorkerServerTest() : ps_(StartTask("ps")), worker_(StartTask("worker")) {
    GrpcWorkerOptions options;
    options.rpc_timeout = absl::Seconds(20);
    ps_client_ = std::make_unique<GrpcWorker>(NewWorkerChannel(ps_->target()), options);
    worker_client_ = std::make_unique<GrpcWorker>(NewWorkerChannel(worker_->target()), options);
  }

  // The cluster of the two tasks, as the master sends it with a session.
  ClusterDef Cluster() const {
    ClusterDef cluster;
    JobDef* ps = cluster.add_job();
    ps->set_name("ps");
    (*ps->mutable_tasks())[0] = ps_->target();
    JobDef* worker = cluster.add_job();
    worker->set_name("worker");
    (*worker->mutable_tasks())[0] = worker_->target();
    return cluster;
  }

  uint64_t Incarnation(GrpcWorker* client) {
    GetStatusResponse status;
    EXPECT_TRUE(client->GetStatus({}, &status).ok());
    return status.incarnation();
  }

  std::string Register(GrpcWorker* client, const GraphDef& graph) {
    RegisterGraphRequest request;
    request.set_session_handle("s");
    *request.mutable_graph_def() = graph;
    RegisterGraphResponse response;
    absl::Status s = client->RegisterGraph(request, &response);
    EXPECT_TRUE(s.ok()) << s;
    return response.graph_handle();
  }

  std::unique_ptr<test::ServerProcess> ps_;
  std::unique_ptr<test::ServerProcess> worker_;
  std::unique_ptr<GrpcWorker> ps_client_;
  std::unique_ptr<GrpcWorker> worker_client_;
};

TEST_F(WorkerServerTest, LargeTensorCrossesTasksThenKillAndTerm) {
  ASSERT_TRUE(WaitServing(*ps_, absl::Seconds(30))) << ps_->log();
  ASSERT_TRUE(WaitServing(*worker_, absl::Seconds(30))) << worker_->log();
  const uint64_t ps_incarnation = Incarnation(ps_client_.get());
  const uint64_t worker_incarnation = Incarnation(worker_client_.get());
  ASSERT_NE(ps_incarnation, worker_incarnation);

  CreateWorkerSessionRequest create;
  create.set_session_handle("s");
  *create.mutable_cluster() = Cluster();
  CreateWorkerSessionResponse created;
  ASSERT_TRUE(ps_client_->CreateWorkerSession(create, &created).ok());
  ASSERT_TRUE(worker_client_->CreateWorkerSession(create, &created).ok());

  // The ps fills a 64 MiB float tensor; the worker receives it and returns it.
  constexpr int32_t kElements = 16 << 20;
  GraphDef ps_graph;
  test::AddConst(&ps_graph, "dims", Tensor::FromVector<int32_t>({kElements}), kPsDevice);
  test::AddConst(&ps_graph, "value", Tensor::Scalar<float>(1.5f), kPsDevice);
  NodeDef* fill = test::AddNode(&ps_graph, "fill", "Fill", kPsDevice, {"dims", "value"});
  SetNodeAttr(fill, "T", DT_FLOAT);
  test::AddSend(&ps_graph, "fill/_send", "fill", DT_FLOAT, "edge_fill", kPsDevice, ps_incarnation,
                kWorkerDevice);
  GraphDef worker_graph;
  test::AddRecv(&worker_graph, "fill/_recv", DT_FLOAT, "edge_fill", kPsDevice, ps_incarnation,
                kWorkerDevice);
  test::AddSend(&worker_graph, "fill/_fetch", "fill/_recv", DT_FLOAT, "fetched", kWorkerDevice,
                worker_incarnation, kWorkerDevice, true);
  const std::string ps_graph_handle = Register(ps_client_.get(), ps_graph);
  const std::string worker_graph_handle = Register(worker_client_.get(), worker_graph);

  auto run_step = [&](int64_t step, bool run_ps, RunGraphResponse* response) {
    absl::Status ps_status;
    std::thread ps_thread([&] {
      if (!run_ps) return;
      RunGraphRequest request;
      request.set_session_handle("s");
      request.set_graph_handle(ps_graph_handle);
      request.set_step_id(step);
      RunGraphResponse ignored;
      ps_status = ps_client_->RunGraph(request, &ignored);
    });
    RunGraphRequest request;
    request.set_session_handle("s");
    request.set_graph_handle(worker_graph_handle);
    request.set_step_id(step);
    request.set_timeout_in_ms(30000);
    request.add_recv_key(
        MakeRendezvousKey(kWorkerDevice, worker_incarnation, kWorkerDevice, "fetched"));
    absl::Status status = worker_client_->RunGraph(request, response);
    ps_thread.join();
    EXPECT_TRUE(ps_status.ok()) << ps_status;
    return status;
  };

  RunGraphResponse response;
  absl::Status status = run_step(1, true, &response);
  ASSERT_TRUE(status.ok()) << status << "\n" << worker_->log();
  absl::StatusOr<Tensor> got = Tensor::FromProto(response.recv(0).tensor());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->NumElements(), kElements);
  const float* data = got->data<float>();
  for (int64_t i = 0; i < kElements; i += 65537) ASSERT_EQ(data[i], 1.5f) << i;

  absl::StatusOr<std::string> metrics = test::HttpGet(ps_->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  // One call, served on the thread that reads the calls, or (if it came before its
  // tensor) by the producer's thread or a thread of the pool.
  double calls = 0;
  for (const char* thread : {"loop", "producer", "pool"}) {
    calls +=
        Metric(*ps_, absl::StrCat("overseer_worker_recv_tensor_total{thread=\"", thread, "\"}"));
  }
  EXPECT_EQ(calls, 1) << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics, "overseer_worker_recv_tensor_bytes_total 67108864"))
      << *metrics;

  // kill -9 the ps: a pull from it, direct or from inside the worker's step, fails
  // UNAVAILABLE well before the step's 30 s deadline.
  ps_->Kill();
  RecvTensorRequest recv;
  recv.set_step_id(2);
  recv.set_rendezvous_key(MakeRendezvousKey(kPsDevice, ps_incarnation, kWorkerDevice, "edge_fill"));
  recv.set_timeout_in_ms(30000);
  Tensor t;
  EXPECT_EQ(ps_client_->RecvTensor(recv, nullptr, &t).code(), absl::StatusCode::kUnavailable);
  response.Clear();
  status = run_step(3, false, &response);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "/job:ps/replica:0/task:0")) << status;

  absl::StatusOr<std::string> worker_metrics = test::HttpGet(worker_->metrics_port(), "/metrics");
  ASSERT_TRUE(worker_metrics.ok());
  EXPECT_TRUE(absl::StrContains(
      *worker_metrics,
      "overseer_worker_rpc_errors_total{code=\"UNAVAILABLE\",method=\"RunGraph\"} 1"))
      << *worker_metrics;

  EXPECT_EQ(worker_->Terminate(), 0) << worker_->log();
}

// A burst of RecvTensor calls that wait for their producer, in a step that has not run
// on the task yet, holds a thread each (of the worker service's pool). The worker keeps
// those threads for the next burst, instead of ending all but two of them and starting
// new ones for every burst (what gRPC's synchronous server did by default when the
// calls waited on its threads).
TEST_F(WorkerServerTest, BurstsOfWaitingRecvTensorsReuseTheServersThreads) {
  ASSERT_TRUE(WaitServing(*ps_, absl::Seconds(30))) << ps_->log();
  const uint64_t ps_incarnation = Incarnation(ps_client_.get());
  constexpr int kCalls = 12;
  // The ps's threads while a burst of calls waits. The calls wait until the step is
  // cleaned up (their deadline only turns a hang into a failure).
  auto burst = [&](int64_t step) {
    std::vector<std::thread> calls;
    for (int i = 0; i < kCalls; ++i) {
      calls.emplace_back([&, i] {
        RecvTensorRequest request;
        request.set_step_id(step);
        request.set_rendezvous_key(MakeRendezvousKey(kPsDevice, ps_incarnation, kWorkerDevice,
                                                     absl::StrCat("never_sent_", i)));
        request.set_timeout_in_ms(120000);
        Tensor t;
        absl::Status s = ps_client_->RecvTensor(request, nullptr, &t);
        EXPECT_FALSE(s.ok());
        EXPECT_NE(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
      });
    }
    std::set<int> threads;
    EXPECT_TRUE(test::Eventually(
        [&] { return Metric(*ps_, "overseer_worker_recv_tensor_waiting") == kCalls; },
        absl::Seconds(60)))
        << "the calls never all waited on the ps";
    threads = Threads(ps_->pid());
    CleanupGraphRequest cleanup;
    cleanup.set_step_id(step);
    CleanupGraphResponse cleaned;
    EXPECT_TRUE(ps_client_->CleanupGraph(cleanup, &cleaned).ok());
    for (std::thread& call : calls) call.join();
    return threads;
  };
  const std::set<int> first = burst(1);
  int started = 0;
  for (int id : burst(2)) started += first.count(id) == 0 ? 1 : 0;
  // gRPC starts a thread when the last waiting one takes a call; with its default of two
  // kept, the second burst ran on about ten new ones. A few may still start if a thread
  // of the first burst had not gone back to waiting for calls when the second came.
  EXPECT_LE(started, 4);
}

TEST(WorkerServerFlagsTest, ATaskOutsideTheClusterExits2) {
  auto bad = StartTask("ps", {"--cluster_spec=worker=127.0.0.1:1"});
  EXPECT_EQ(bad->WaitForExit(), 2) << bad->log();
  EXPECT_TRUE(absl::StrContains(bad->log(), "not in the cluster")) << bad->log();
}

// A server binds loopback unless told otherwise, and every interface only knowingly.
TEST(WorkerServerFlagsTest, BindingEveryInterfaceNeedsInsecure) {
  auto refused = StartTask("ps", {"--bind=0.0.0.0"});
  EXPECT_EQ(refused->WaitForExit(), 1) << refused->log();
  EXPECT_TRUE(absl::StrContains(refused->log(), "pass --insecure")) << refused->log();

  auto served = StartTask("ps", {"--bind=0.0.0.0", "--insecure"});
  EXPECT_TRUE(WaitServing(*served, absl::Seconds(60))) << served->log();
}

}  // namespace
}  // namespace overseer

// Two real worker_server processes (a ps and a worker task) on free loopback ports:
// a 64 MiB tensor crosses from one to the other with RecvTensor, kill -9 of the ps
// makes pulls from it fail UNAVAILABLE within the deadline, SIGTERM exits 0.

#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/cluster/rendezvous_key.h"
#include "core/node_def_util.h"
#include "core/rpc/client_context.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "core/rpc/testing/http_get.h"
#include "gtest/gtest.h"
#include "worker/rpc/grpc_worker.h"
#include "worker/testing/test_graphs.h"

namespace overseer {
namespace {

// A port nobody listens on right now (the kernel hands out ephemeral ports in turn,
// so it is not given again at once).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// One worker_server process; the constructor returns once it logged its start-up
// line (read from its stderr, no sleeping).
class WorkerProcess {
 public:
  WorkerProcess(const std::string& job, int port, const std::string& cluster) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    const std::string binary =
        absl::StrCat(std::getenv("TEST_SRCDIR"), "/overseer/worker/worker_server");
    std::vector<std::string> args = {binary,
                                     "--job_name=" + job,
                                     "--task_index=0",
                                     "--cluster_spec=" + cluster,
                                     absl::StrCat("--port=", port),
                                     "--metrics_port=0"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    stderr_ = ::fdopen(fds[0], "r");
    char line[4096];
    while (std::fgets(line, sizeof(line), stderr_) != nullptr) {
      log_ += line;
      const char* metrics = std::strstr(line, "metrics on ");
      if (metrics != nullptr) {
        const char* colon = std::strchr(metrics + 11, ':');
        if (colon != nullptr) metrics_port_ = std::atoi(colon + 1);
        break;
      }
    }
    address_ = absl::StrCat("127.0.0.1:", port);
  }
  ~WorkerProcess() { SignalAndWait(SIGKILL); }

  // Sends `signal` and returns the exit code (-1 when killed by a signal).
  int SignalAndWait(int signal) {
    if (pid_ <= 0 || waited_) return -1;
    ::kill(pid_, signal);
    char line[4096];
    while (std::fgets(line, sizeof(line), stderr_) != nullptr) log_ += line;
    std::fclose(stderr_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Whether the health service answers SERVING within `timeout`.
  bool WaitServing(absl::Duration timeout) {
    auto stub = grpc::health::v1::Health::NewStub(NewWorkerChannel(address_));
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

  const std::string& address() const { return address_; }
  int metrics_port() const { return metrics_port_; }
  // The ids of the process's threads now.
  std::set<int> Threads() const {
    std::set<int> ids;
    DIR* dir = ::opendir(absl::StrCat("/proc/", pid_, "/task").c_str());
    if (dir == nullptr) return ids;
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] != '.') ids.insert(std::atoi(entry->d_name));
    }
    ::closedir(dir);
    return ids;
  }
  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  FILE* stderr_ = nullptr;
  std::string log_;
  std::string address_;
  int metrics_port_ = -1;
  bool waited_ = false;
};

constexpr char kPsDevice[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerDevice[] = "/job:worker/replica:0/task:0/device:CPU:0";

class WorkerServerTest : public ::testing::Test {
 protected:
  WorkerServerTest() {
    const int ps_port = FreePort();
    const int worker_port = FreePort();
    const std::string cluster =
        absl::StrCat("ps=127.0.0.1:", ps_port, ";worker=127.0.0.1:", worker_port);
    ps_ = std::make_unique<WorkerProcess>("ps", ps_port, cluster);
    worker_ = std::make_unique<WorkerProcess>("worker", worker_port, cluster);
    GrpcWorkerOptions options;
    options.rpc_timeout = absl::Seconds(20);
    ps_client_ = std::make_unique<GrpcWorker>(NewWorkerChannel(ps_->address()), options);
    worker_client_ = std::make_unique<GrpcWorker>(NewWorkerChannel(worker_->address()), options);
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

  std::unique_ptr<WorkerProcess> ps_;
  std::unique_ptr<WorkerProcess> worker_;
  std::unique_ptr<GrpcWorker> ps_client_;
  std::unique_ptr<GrpcWorker> worker_client_;
};

TEST_F(WorkerServerTest, LargeTensorCrossesTasksThenKillAndTerm) {
  ASSERT_TRUE(ps_->WaitServing(absl::Seconds(30))) << ps_->log();
  ASSERT_TRUE(worker_->WaitServing(absl::Seconds(30))) << worker_->log();
  const uint64_t ps_incarnation = Incarnation(ps_client_.get());
  const uint64_t worker_incarnation = Incarnation(worker_client_.get());
  ASSERT_NE(ps_incarnation, worker_incarnation);

  CreateWorkerSessionRequest create;
  create.set_session_handle("s");  // The cluster of the flags.
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
  test::AddSend(&ps_graph, "fill/_send", "fill", DT_FLOAT, "edge_fill", kPsDevice,
                ps_incarnation, kWorkerDevice);
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
  EXPECT_TRUE(absl::StrContains(*metrics, "overseer_worker_recv_tensor_total 1")) << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics, "overseer_worker_recv_tensor_bytes_total 67108864"))
      << *metrics;

  // kill -9 the ps: a pull from it, direct or from inside the worker's step, fails
  // UNAVAILABLE well before the step's 30 s deadline.
  ps_->SignalAndWait(SIGKILL);
  RecvTensorRequest recv;
  recv.set_step_id(2);
  recv.set_rendezvous_key(
      MakeRendezvousKey(kPsDevice, ps_incarnation, kWorkerDevice, "edge_fill"));
  recv.set_timeout_in_ms(30000);
  Tensor t;
  EXPECT_EQ(ps_client_->RecvTensor(recv, nullptr, &t).code(), absl::StatusCode::kUnavailable);
  response.Clear();
  status = run_step(3, false, &response);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "/job:ps/replica:0/task:0")) << status;

  absl::StatusOr<std::string> worker_metrics = test::HttpGet(worker_->metrics_port(), "/metrics");
  ASSERT_TRUE(worker_metrics.ok());
  EXPECT_TRUE(absl::StrContains(*worker_metrics,
                                "overseer_worker_rpc_errors_total{code=\"UNAVAILABLE\"} 1"))
      << *worker_metrics;

  EXPECT_EQ(worker_->SignalAndWait(SIGTERM), 0) << worker_->log();
}

// A burst of RecvTensor calls that wait for their producer holds a server thread each.
// The server keeps those threads waiting for the next burst, instead of ending all but
// two of them and starting new ones for every burst (gRPC's default).
TEST_F(WorkerServerTest, BurstsOfWaitingRecvTensorsReuseTheServersThreads) {
  ASSERT_TRUE(ps_->WaitServing(absl::Seconds(30))) << ps_->log();
  const uint64_t ps_incarnation = Incarnation(ps_client_.get());
  constexpr int kCalls = 8;
  // The ps's threads while a burst of calls waits.
  auto burst = [&](int64_t step) {
    std::vector<std::thread> calls;
    for (int i = 0; i < kCalls; ++i) {
      calls.emplace_back([&, i] {
        RecvTensorRequest request;
        request.set_step_id(step);
        request.set_rendezvous_key(MakeRendezvousKey(kPsDevice, ps_incarnation, kWorkerDevice,
                                                     absl::StrCat("never_sent_", i)));
        request.set_timeout_in_ms(1000);
        Tensor t;
        absl::Status s = ps_client_->RecvTensor(request, nullptr, &t);
        EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
      });
    }
    absl::SleepFor(absl::Milliseconds(400));  // The calls reach the ps and wait.
    std::set<int> threads = ps_->Threads();
    for (std::thread& call : calls) call.join();
    return threads;
  };
  const std::set<int> first = burst(1);
  absl::SleepFor(absl::Milliseconds(300));  // The burst's threads finish their calls.
  int started = 0;
  for (int id : burst(2)) started += first.count(id) == 0 ? 1 : 0;
  // gRPC starts a thread when the last waiting one takes a call; with its default of two
  // kept, the second burst ran on about six new ones.
  EXPECT_LE(started, 2);
}

TEST(WorkerServerFlagsTest, ATaskOutsideTheClusterExits2) {
  WorkerProcess bad("ps", FreePort(), "worker=127.0.0.1:1");
  EXPECT_EQ(bad.SignalAndWait(0), 2) << bad.log();
  EXPECT_TRUE(absl::StrContains(bad.log(), "not in the cluster")) << bad.log();
}

}  // namespace
}  // namespace overseer

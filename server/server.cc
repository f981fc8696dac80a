#include "server/server.h"

#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/clock.h"
#include "core/cluster/cluster_def.h"
#include "core/logging.h"
#include "core/rpc/security.h"
#include "core/rpc/server_runner.h"
#include "core/status_macros.h"
#include "master/cluster_worker_cache.h"
#include "master/master.h"
#include "master/rpc/grpc_master_service.h"
#include "worker/rpc/grpc_worker.h"
#include "worker/rpc/grpc_worker_service.h"
#include "worker/rpc/local_calls.h"
#include "worker/rpc/local_transfer.h"
#include "worker/rpc/tensor_chunks.h"
#include "worker/worker.h"

namespace overseer {
namespace {

// The master's cluster, known once the port is bound (a task at port 0 learns its
// port then). Until Set, no task: a call in that instant fails as for a cluster whose
// tasks are not up.
class LateWorkers : public MasterWorkerCacheInterface {
 public:
  void Set(std::unique_ptr<ClusterWorkerCache> workers) {
    absl::MutexLock lock(&mu_);
    workers_ = std::move(workers);
  }
  std::vector<std::string> ListTasks() const override {
    absl::MutexLock lock(&mu_);
    return workers_ != nullptr ? workers_->ListTasks() : std::vector<std::string>();
  }
  WorkerInterface* GetWorker(const std::string& task) override {
    absl::MutexLock lock(&mu_);
    return workers_ != nullptr ? workers_->GetWorker(task) : nullptr;
  }
  ClusterDef cluster_def() const override {
    absl::MutexLock lock(&mu_);
    return workers_ != nullptr ? workers_->cluster_def() : ClusterDef();
  }

 private:
  mutable absl::Mutex mu_;
  std::unique_ptr<ClusterWorkerCache> workers_ ABSL_GUARDED_BY(mu_);
};

// The port of "host:port".
absl::StatusOr<int> PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("the task's address '", address, "' is not host:port"));
  }
  return port;
}

}  // namespace

class Server::Impl {
 public:
  explicit Impl(ServerOptions options) : options_(std::move(options)) {}

  ~Impl() {
    Stop();
    Join();
    // The services and what they call go once the runner no longer serves them.
    master_service_.reset();
    master_.reset();
    worker_service_.reset();
    worker_.reset();
    runner_.reset();
  }

  absl::Status Start() {
    if (options_.job_name.empty()) return absl::InvalidArgumentError("the server needs a job name");
    absl::StatusOr<std::string> found =
        options_.cluster.TaskAddress(options_.job_name, options_.task_index);
    if (!found.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", options_.job_name, ":", options_.task_index,
                       " is not in the cluster (", options_.cluster.ToString(), ")"));
    }
    const std::string address = *found;
    ASSIGN_OR_RETURN(int port, PortOf(address));
    if (options_.port >= 0) port = options_.port;

    ServerRunnerOptions runner_options;
    runner_options.component = "server";
    runner_options.host = options_.bind;
    runner_options.insecure = options_.insecure;
    runner_options.port = port;
    runner_options.metrics_port = options_.metrics_port;
    runner_options.port_file = options_.port_file;
    runner_options.handle_signals = false;  // The program's signals stay its own.
    // As worker_server's (worker/worker_main.cc says why).
    runner_options.stream_window_bytes = kWorkerStreamWindowBytes;
    runner_options.bdp_probe = true;
    runner_options.max_pollers = kWorkerServerMaxPollers;
    runner_ = std::make_unique<ServerRunner>(runner_options);

    WorkerOptions worker_options;
    worker_options.job_name = options_.job_name;
    worker_options.task_index = options_.task_index;
    // RunGraph and RecvTensor calls arrive on this loop's thread, and the tensors this
    // worker receives from its peers are read there.
    CompletionQueueLoop* worker_loop = runner_->AddCompletionQueueLoop();
    WorkerEnv worker_env;
    worker_env.worker_cache_factory =
        [worker_loop](
            const ClusterDef& cluster) -> absl::StatusOr<std::unique_ptr<WorkerCacheInterface>> {
      GrpcWorkerOptions peers;
      peers.loop = worker_loop;
      return std::make_unique<GrpcWorkerCache>(cluster, peers);
    };
    worker_env.on_job_done = [this](const std::string& reason) {
      LOG(INFO) << "server " << options_.job_name << ":" << options_.task_index
                << ": the job is done (" << reason << ")";
      if (options_.join_until_job_done) runner_->RequestTermination();
    };
    worker_ = std::make_unique<Worker>(worker_options, worker_env);
    // Peers on this host fetch large tensors over a Unix socket (local_transfer.h).
    ASSIGN_OR_RETURN(local_transfer_,
                     LocalTransferServer::Start(LocalTransferServer::DefaultAddress()));
    worker_service_ =
        std::make_unique<GrpcWorkerService>(worker_.get(), runner_->metrics(), worker_loop,
                                            kRecvTensorChunkBytes, local_transfer_.get());
    // A master on this host sends its RunGraph calls over a Unix socket (local_calls.h).
    if (!ProcessSecurity().enabled()) {
      RETURN_IF_ERROR(worker_service_->ServeLocalCalls(LocalCallServer::DefaultAddress()));
    }
    runner_->AddService(worker_service_.get(), WorkerService::service_full_name());
    runner_->AddCollectable(worker_service_->rpc_metrics());

    step_loop_ = runner_->AddCompletionQueueLoop();
    MasterEnv master_env;
    master_env.workers = &workers_;
    master_env.probe_workers = &probe_workers_;
    master_env.clock = Clock::Real();
    master_ = std::make_unique<Master>(master_env, MasterOptions());
    master_service_ =
        std::make_unique<GrpcMasterService>(master_.get(), runner_->metrics(), step_loop_);
    runner_->AddService(master_service_.get(), MasterService::service_full_name());
    runner_->AddCollectable(master_service_->rpc_metrics());
    runner_->AddTerminationCallback([this] { master_->StopReadinessWaits(); });
    RETURN_IF_ERROR(runner_->Start());

    // This task's address with the bound port, for the master's view of the cluster.
    ClusterSpec bound;
    for (const auto& [job, addresses] : options_.cluster.jobs()) {
      std::vector<std::string> tasks = addresses;
      if (job == options_.job_name) {
        tasks[options_.task_index] =
            absl::StrCat(address.substr(0, address.rfind(':')), ":", runner_->port());
      }
      RETURN_IF_ERROR(bound.AddJob(job, std::move(tasks)));
    }
    cluster_ = bound;
    GrpcWorkerOptions peers;
    peers.loop = step_loop_;
    workers_.Set(std::make_unique<ClusterWorkerCache>(
        bound, std::make_unique<GrpcWorkerCache>(ToClusterDef(bound), peers)));
    GrpcWorkerOptions probes;
    probes.rpc_timeout = absl::Seconds(2);  // Readiness checks must not wait long.
    probe_workers_.Set(std::make_unique<ClusterWorkerCache>(
        bound, std::make_unique<GrpcWorkerCache>(ToClusterDef(bound), probes)));
    runner_->SetServing(true);
    LOG(INFO) << "server " << options_.job_name << ":" << options_.task_index << " serving on "
              << runner_->address() << " (cluster " << bound.ToString() << ")";
    waiter_ = std::thread([this] {
      runner_->WaitForTermination();
      stopped_.Notify();
    });
    return absl::OkStatus();
  }

  std::string target() const { return absl::StrCat("grpc://", runner_->address()); }
  const ClusterSpec& cluster() const { return cluster_; }

  void Join() {
    if (!waiter_.joinable()) return;  // Never started.
    stopped_.WaitForNotification();
    absl::MutexLock lock(&join_mu_);
    if (waiter_.joinable()) waiter_.join();
  }

  void Stop() {
    if (runner_ != nullptr) runner_->RequestTermination();
  }

 private:
  const ServerOptions options_;
  ClusterSpec cluster_;
  LateWorkers workers_, probe_workers_;
  std::unique_ptr<ServerRunner> runner_;
  CompletionQueueLoop* step_loop_ = nullptr;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<LocalTransferServer> local_transfer_;  // Outlives the service.
  std::unique_ptr<GrpcWorkerService> worker_service_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<GrpcMasterService> master_service_;
  std::thread waiter_;
  absl::Notification stopped_;
  absl::Mutex join_mu_;
};

absl::StatusOr<std::unique_ptr<Server>> Server::Create(ServerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<Server>> Server::CreateLocalServer() {
  ServerOptions options;
  RETURN_IF_ERROR(options.cluster.AddJob("local", {"127.0.0.1:1"}));  // Its port is replaced.
  options.job_name = "local";
  options.port = 0;
  options.join_until_job_done = false;
  return Create(std::move(options));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;
std::string Server::target() const { return impl_->target(); }
const ClusterSpec& Server::cluster() const { return impl_->cluster(); }
void Server::Join() { impl_->Join(); }
void Server::Stop() { impl_->Stop(); }

}  // namespace overseer

#include "testing/local_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"

namespace overseer {
namespace test {
namespace {

std::string Key(const std::string& job, int index) { return absl::StrCat(job, ":", index); }

// A port that was free a moment ago (the kernel's pick for port 0).
absl::StatusOr<int> FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return absl::InternalError("cannot bind a free port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return absl::StrCat(srcdir ? srcdir : ".", "/overseer/", path);
}

std::string TmpDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(LocalClusterOptions options) {
  std::unique_ptr<LocalCluster> cluster(new LocalCluster(options));
  std::vector<std::pair<std::string, int>> tasks;
  for (int i = 0; i < options.num_ps; ++i) tasks.emplace_back("ps", i);
  for (int i = 0; i < options.num_workers; ++i) tasks.emplace_back("worker", i);
  std::map<std::string, std::vector<std::string>> jobs;
  for (const auto& [job, index] : tasks) {
    absl::StatusOr<int> port = FreePort();
    if (!port.ok()) return port.status();
    jobs[job].push_back(absl::StrCat("127.0.0.1:", *port));
  }
  for (auto& [job, addresses] : jobs) {
    absl::Status added = cluster->cluster_.AddJob(job, addresses);
    if (!added.ok()) return added;
  }
  const std::string spec = cluster->cluster_.ToString();
  const std::string worker_bin = Runfile("worker/worker_server");
  for (const auto& [job, index] : tasks) {
    Process& p = cluster->processes_[Key(job, index)];
    p.address = jobs[job][index];
    p.log_path = absl::StrCat(TmpDir(), "/", job, "_", index, ".log");
    p.argv = {worker_bin, "--job_name=" + job, absl::StrCat("--task_index=", index),
              "--cluster_spec=" + spec, "--metrics_port=-1"};
    for (const std::string& flag : options.worker_flags) p.argv.push_back(flag);
  }
  absl::StatusOr<int> master_port = FreePort();
  if (!master_port.ok()) return master_port.status();
  Process& master = cluster->processes_[Key("master", 0)];
  master.address = absl::StrCat("127.0.0.1:", *master_port);
  master.log_path = absl::StrCat(TmpDir(), "/master.log");
  int metrics_port = -1;
  if (options.master_metrics) {
    absl::StatusOr<int> port = FreePort();
    if (!port.ok()) return port.status();
    metrics_port = *port;
    cluster->master_metrics_port_ = metrics_port;
  }
  master.argv = {Runfile("master/master_server"), "--cluster_spec=" + spec,
                 absl::StrCat("--port=", *master_port),
                 absl::StrCat("--metrics_port=", metrics_port)};
  for (const std::string& flag : options.master_flags) master.argv.push_back(flag);

  for (auto& [key, process] : cluster->processes_) {
    absl::Status launched = cluster->Launch(&process);
    if (!launched.ok()) return launched;
  }
  for (auto& [key, process] : cluster->processes_) {
    absl::Status serving = cluster->WaitServing(&process);
    if (!serving.ok()) return serving;
  }
  return cluster;
}

LocalCluster::~LocalCluster() {
  for (auto& [key, p] : processes_) {
    if (p.pid <= 0) continue;
    ::kill(p.pid, SIGKILL);
    ::waitpid(p.pid, nullptr, 0);
  }
}

std::string LocalCluster::master_target() const {
  return "grpc://" + processes_.at(Key("master", 0)).address;
}

absl::Status LocalCluster::Launch(Process* process) {
  const int log_fd = ::open(process->log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log_fd < 0) return absl::InternalError("cannot open " + process->log_path);
  std::vector<char*> argv;
  for (std::string& a : process->argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return absl::InternalError("fork failed");
  }
  if (pid == 0) {
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  process->pid = pid;
  return absl::OkStatus();
}

absl::Status LocalCluster::WaitServing(Process* process) {
  auto channel = grpc::CreateChannel(process->address, grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  while (absl::Now() < deadline) {
    int status = 0;
    if (::waitpid(process->pid, &status, WNOHANG) == process->pid) {
      process->pid = -1;
      return absl::InternalError(absl::StrCat(absl::StrJoin(process->argv, " "),
                                              " exited before serving:\n",
                                              ReadFile(process->log_path)));
    }
    // Blocks until the server answers or the short deadline passes (no fixed sleep).
    grpc::ClientContext context;
    context.set_wait_for_ready(true);
    context.set_deadline(absl::ToChronoTime(std::min(deadline, absl::Now() + absl::Seconds(1))));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    if (stub->Check(&context, request, &response).ok() &&
        response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      return absl::OkStatus();
    }
  }
  return absl::DeadlineExceededError(absl::StrCat(
      process->argv[0], " on ", process->address, " not SERVING after ",
      absl::FormatDuration(options_.start_timeout), ":\n", ReadFile(process->log_path)));
}

absl::StatusOr<int> LocalCluster::Stop(const std::string& job, int index, int signal) {
  auto it = processes_.find(Key(job, index));
  if (it == processes_.end() || it->second.pid <= 0) {
    return absl::NotFoundError(absl::StrCat("no running task ", Key(job, index)));
  }
  ::kill(it->second.pid, signal);
  int status = 0;
  ::waitpid(it->second.pid, &status, 0);
  it->second.pid = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

absl::Status LocalCluster::Restart(const std::string& job, int index) {
  auto it = processes_.find(Key(job, index));
  if (it == processes_.end()) return absl::NotFoundError("no task " + Key(job, index));
  if (it->second.pid > 0) {
    return absl::FailedPreconditionError(Key(job, index) + " is still running");
  }
  absl::Status launched = Launch(&it->second);
  if (!launched.ok()) return launched;
  return WaitServing(&it->second);
}

std::string LocalCluster::Log(const std::string& job, int index) const {
  auto it = processes_.find(Key(job, index));
  return it == processes_.end() ? "" : ReadFile(it->second.log_path);
}

absl::StatusOr<int> LocalCluster::WaitForExit(const std::string& job, int index,
                                              absl::Duration timeout) {
  auto it = processes_.find(Key(job, index));
  if (it == processes_.end() || it->second.pid <= 0) {
    return absl::NotFoundError(absl::StrCat("no running task ", Key(job, index)));
  }
  Process& p = it->second;
  // A pidfd becomes readable when the process exits: wait for that, not for a time.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, p.pid, 0));
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(p.pid, &status, WNOHANG);
    if (done == p.pid) {
      if (pidfd >= 0) ::close(pidfd);
      p.pid = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    const int wait_ms = static_cast<int>(
        absl::ToInt64Milliseconds(pidfd >= 0 ? left : std::min(left, absl::Milliseconds(10))));
    if (pidfd >= 0) {
      pollfd fd{pidfd, POLLIN, 0};
      ::poll(&fd, 1, std::max(wait_ms, 1));
    } else {
      ::poll(nullptr, 0, std::max(wait_ms, 1));  // Old kernel: no pidfd.
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return absl::DeadlineExceededError(
      absl::StrCat(Key(job, index), " still runs after ", absl::FormatDuration(timeout)));
}

bool LocalCluster::IsRunning(const std::string& job, int index) {
  auto it = processes_.find(Key(job, index));
  if (it == processes_.end() || it->second.pid <= 0) return false;
  int status = 0;
  if (::waitpid(it->second.pid, &status, WNOHANG) == it->second.pid) {
    it->second.pid = -1;
    return false;
  }
  return true;
}

}  // namespace test
}  // namespace overseer

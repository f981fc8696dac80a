#include "testing/cluster_launcher.h"

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/rpc/channel.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/support/channel_arguments.h"

namespace overseer {
namespace {

std::string Key(const std::string& job, int index) { return absl::StrCat(job, ":", index); }

absl::Status MakeDir(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  return absl::OkStatus();
}

// How long a server restarted on its port retries binding it (another process may
// hold it for a moment: the old socket going away, a short-lived connection).
constexpr int kBindRetrySeconds = 30;

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterLauncher>> ClusterLauncher::Start(
    ClusterLauncherOptions options) {
  if (options.log_dir.empty()) options.log_dir = TempDir();
  if (options.checkpoint_root.empty()) options.checkpoint_root = options.log_dir + "/checkpoints";
  if (options.summary_logdir.empty()) options.summary_logdir = options.log_dir + "/logdir";
  if (absl::Status s = MakeDir(options.log_dir); !s.ok()) return s;
  std::unique_ptr<ClusterLauncher> launcher(new ClusterLauncher(options));
  ClusterLauncher& l = *launcher;

  // Every server binds port 0 itself and writes the port it got to its port file; the
  // tasks learn the cluster from the master with each session, so they start first,
  // and the master starts with the cluster spec of the ports they bound.
  for (const auto& [job, count] : {std::pair<std::string, int>{"ps", options.num_ps},
                                   std::pair<std::string, int>{"worker", options.num_workers}}) {
    for (int i = 0; i < count; ++i) {
      std::vector<std::string> flags = {"--job_name=" + job, absl::StrCat("--task_index=", i),
                                        options.metrics ? "--metrics_port=0" : "--metrics_port=-1"};
      flags.insert(flags.end(), options.worker_flags.begin(), options.worker_flags.end());
      if (absl::Status s = l.Add(job, i, "worker/worker_server", std::move(flags)); !s.ok()) {
        return s;
      }
    }
  }
  if (options.checkpoint_store) {
    if (absl::Status s = MakeDir(options.checkpoint_root); !s.ok()) return s;
    std::vector<std::string> flags = {"--root=" + options.checkpoint_root,
                                      options.metrics ? "--metrics_port=0" : "--metrics_port=-1"};
    flags.insert(flags.end(), options.store_flags.begin(), options.store_flags.end());
    if (absl::Status s =
            l.Add("store", 0, "checkpoint_store/checkpoint_store_server", std::move(flags));
        !s.ok()) {
      return s;
    }
  }
  if (options.summary_writer) {
    if (absl::Status s = MakeDir(options.summary_logdir); !s.ok()) return s;
    std::vector<std::string> flags = {"--logdir=" + options.summary_logdir,
                                      options.metrics ? "--metrics_port=0" : "--metrics_port=-1"};
    flags.insert(flags.end(), options.writer_flags.begin(), options.writer_flags.end());
    if (absl::Status s =
            l.Add("writer", 0, "summary_writer/summary_writer_server", std::move(flags));
        !s.ok()) {
      return s;
    }
  }
  // Start them all, then read their ports: they come up in parallel.
  for (const auto& [job, index] : l.order_) {
    if (absl::Status s = l.StartServer(job, index); !s.ok()) return s;
  }
  std::map<std::string, std::vector<std::string>> jobs;
  for (const auto& [job, index] : l.order_) {
    if (absl::Status s = l.ReadPorts(job, index); !s.ok()) return s;
    if (job == "ps" || job == "worker") jobs[job].push_back(l.Find(job, index)->address);
  }
  for (const auto& [job, addresses] : jobs) {
    if (absl::Status s = l.cluster_.AddJob(job, addresses); !s.ok()) return s;
  }

  std::vector<std::string> master_flags = {
      "--cluster_spec=" + l.cluster_.ToString(),
      options.master_metrics || options.metrics ? "--metrics_port=0" : "--metrics_port=-1"};
  master_flags.insert(master_flags.end(), options.master_flags.begin(), options.master_flags.end());
  if (absl::Status s = l.Add("master", 0, "master/master_server", std::move(master_flags));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = l.StartServer("master", 0); !s.ok()) return s;
  if (absl::Status s = l.ReadPorts("master", 0); !s.ok()) return s;
  // servers() lists the master after the tasks, before the store and the writer.
  auto tasks_end = std::find_if(l.order_.begin(), l.order_.end(), [](const auto& server) {
    return server.first != "ps" && server.first != "worker";
  });
  std::rotate(tasks_end, l.order_.end() - 1, l.order_.end());

  for (const auto& [job, index] : l.order_) {
    if (absl::Status s = l.WaitServing(job, index); !s.ok()) return s;
  }
  return launcher;
}

absl::Status ClusterLauncher::Add(const std::string& job, int index, const std::string& binary,
                                  std::vector<std::string> flags) {
  absl::StatusOr<std::string> path = FindBinary(options_.bin_dir, binary);
  if (!path.ok()) return path.status();
  flags.insert(flags.begin(), *path);
  const std::string base = absl::StrCat(options_.log_dir, "/", job, "_", index);
  flags.push_back("--port_file=" + base + ".port");
  Server& server = servers_[Key(job, index)];
  server.flags = std::move(flags);
  server.log_path = base + ".log";
  server.port_file = base + ".port";
  order_.emplace_back(job, index);
  return absl::OkStatus();
}

absl::Status ClusterLauncher::StartServer(const std::string& job, int index) {
  Server& server = *Find(job, index);
  std::vector<std::string> argv = server.flags;
  if (server.port == 0) {
    argv.push_back("--port=0");
  } else {
    // A restart: the same port, which the cluster spec and the clients know.
    argv.push_back(absl::StrCat("--port=", server.port));
    argv.push_back(absl::StrCat("--bind_retry_seconds=", kBindRetrySeconds));
  }
  std::error_code ignored;
  std::filesystem::remove(server.port_file, ignored);  // A previous run's.
  server.process = std::make_unique<ChildProcess>(std::move(argv), server.log_path);
  return server.process->Start();
}

absl::Status ClusterLauncher::ReadPorts(const std::string& job, int index) {
  Server& server = *Find(job, index);
  absl::StatusOr<std::vector<int>> ports =
      server.process->WaitForPortFile(server.port_file, options_.start_timeout);
  if (!ports.ok()) {
    return absl::Status(ports.status().code(),
                        absl::StrCat(Key(job, index), ": ", ports.status().message()));
  }
  server.port = (*ports)[0];
  server.address = absl::StrCat("127.0.0.1:", server.port);
  server.metrics_port = ports->size() > 1 ? (*ports)[1] : -1;
  if (job == "master") master_metrics_port_ = server.metrics_port;
  return absl::OkStatus();
}

absl::Status ClusterLauncher::WaitServing(const std::string& job, int index) {
  Server& server = *Find(job, index);
  ChildProcess& process = *server.process;
  // Retry the connection every 20 ms (gRPC's default backoff starts at 1 s), so that
  // SERVING is seen within a few tens of ms of the server binding its port.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 20);
  // With the test's own security (core/rpc/security.h): a TLS cluster's health too.
  auto channel = NewChannel(server.address, args);
  auto stub = grpc::health::v1::Health::NewStub(channel);
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  while (absl::Now() < deadline) {
    if (!process.IsRunning()) {
      return absl::InternalError(
          absl::StrCat(Key(job, index), " (", absl::StrJoin(process.argv(), " "),
                       ") exited with code ", process.last_exit_code(),
                       " before serving; its log:\n", ReadWholeFile(process.stderr_path())));
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
  return absl::DeadlineExceededError(
      absl::StrCat(Key(job, index), " (", process.argv()[0], ") on ", server.address,
                   " not SERVING after ", absl::FormatDuration(options_.start_timeout),
                   "; its log:\n", ReadWholeFile(process.stderr_path())));
}

ClusterLauncher::Server* ClusterLauncher::Find(const std::string& job, int index) {
  auto it = servers_.find(Key(job, index));
  return it == servers_.end() ? nullptr : &it->second;
}

const ClusterLauncher::Server* ClusterLauncher::Find(const std::string& job, int index) const {
  auto it = servers_.find(Key(job, index));
  return it == servers_.end() ? nullptr : &it->second;
}

std::string ClusterLauncher::master_target() const { return "grpc://" + address("master", 0); }

std::string ClusterLauncher::store_target() const {
  return options_.checkpoint_store ? "grpc://" + address("store", 0) : "";
}

std::string ClusterLauncher::writer_target() const {
  return options_.summary_writer ? "grpc://" + address("writer", 0) : "";
}

std::string ClusterLauncher::address(const std::string& job, int index) const {
  const Server* server = Find(job, index);
  return server == nullptr ? "" : server->address;
}

int ClusterLauncher::metrics_port(const std::string& job, int index) const {
  const Server* server = Find(job, index);
  return server == nullptr ? -1 : server->metrics_port;
}

absl::StatusOr<int> ClusterLauncher::Stop(const std::string& job, int index, int signal,
                                          absl::Duration timeout) {
  Server* server = Find(job, index);
  if (server == nullptr || server->process == nullptr || !server->process->IsRunning()) {
    return absl::NotFoundError(absl::StrCat("no running server ", Key(job, index)));
  }
  return server->process->Stop(signal, timeout);
}

absl::Status ClusterLauncher::Restart(const std::string& job, int index) {
  Server* server = Find(job, index);
  if (server == nullptr || server->process == nullptr) {
    return absl::NotFoundError("no server " + Key(job, index));
  }
  if (server->process->IsRunning()) {
    return absl::FailedPreconditionError(Key(job, index) + " is still running");
  }
  if (absl::Status s = StartServer(job, index); !s.ok()) return s;
  if (absl::Status s = ReadPorts(job, index); !s.ok()) return s;
  return WaitServing(job, index);
}

absl::StatusOr<int> ClusterLauncher::WaitForExit(const std::string& job, int index,
                                                 absl::Duration timeout) {
  Server* server = Find(job, index);
  if (server == nullptr || server->process == nullptr) {
    return absl::NotFoundError("no server " + Key(job, index));
  }
  if (!server->process->IsRunning()) {
    if (server->process->last_exit_code() == -2) {
      return absl::NotFoundError(absl::StrCat("server ", Key(job, index), " never started"));
    }
    return server->process->last_exit_code();
  }
  return server->process->WaitForExit(timeout);
}

bool ClusterLauncher::IsRunning(const std::string& job, int index) {
  Server* server = Find(job, index);
  return server != nullptr && server->process != nullptr && server->process->IsRunning();
}

pid_t ClusterLauncher::pid(const std::string& job, int index) const {
  const Server* server = Find(job, index);
  return server == nullptr || server->process == nullptr ? -1 : server->process->pid();
}

std::string ClusterLauncher::Log(const std::string& job, int index) const {
  const Server* server = Find(job, index);
  return server == nullptr ? "" : ReadWholeFile(server->log_path);
}

std::string ClusterLauncher::log_path(const std::string& job, int index) const {
  const Server* server = Find(job, index);
  return server == nullptr ? "" : server->log_path;
}

std::vector<std::pair<std::string, int>> ClusterLauncher::servers() const { return order_; }

}  // namespace overseer

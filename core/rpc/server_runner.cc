#include "core/rpc/server_runner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/logging.h"
#include "core/port_file.h"
#include "core/rpc/keepalive.h"
#include "core/rpc/security.h"
#include "core/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/server_builder.h"

ABSL_FLAG(int, port, 0, "gRPC port to listen on; 0 picks a free port (printed at start-up)");
ABSL_FLAG(int, metrics_port, 0,
          "Prometheus metrics port (/metrics); 0 picks a free port, -1 disables");
ABSL_FLAG(int, keepalive_seconds, 10,
          "while a call is open, ping its peer after this many seconds of silence and "
          "fail the call UNAVAILABLE if the ping is not answered within as many again "
          "(finds a peer whose host died or froze; values below 1 count as 1)");
ABSL_FLAG(std::string, port_file, "",
          "once listening, write the gRPC port and the metrics port (-1: none), one per "
          "line, to this file (replaced atomically): how a launcher that passed --port=0 "
          "learns the ports");
ABSL_FLAG(int, max_receive_message_mib, 0,
          "the largest request this server accepts, in MiB; larger ones fail "
          "RESOURCE_EXHAUSTED before they are read whole. 0: the server's default: 2048 "
          "(protobuf's limit) for the master and workers, whose steps may feed that much, "
          "64 for the checkpoint store, 512 for the summary writer");
ABSL_FLAG(int, bind_retry_seconds, 0,
          "if --port is in use, retry binding it for this many seconds before exiting (a "
          "restart on the same port while the old socket is going away); 0: fail at once");

ABSL_FLAG(std::string, bind, "127.0.0.1",
          "the address the gRPC and metrics listeners bind: loopback by default; "
          "\"0.0.0.0\" or \"::\" for every interface, or one address. Anything but "
          "loopback also needs --insecure");
ABSL_FLAG(bool, insecure, false,
          "allow --bind to name an address other hosts reach, although this server takes "
          "calls from anyone who reaches its port, with no authentication or TLS "
          "(docs/security.md)");

namespace overseer {
namespace {

// The default request limits, in MiB, of the servers whose requests are pieces: a
// checkpoint shard streams in 4 MiB chunks; a summary writer gets batches of events
// (by count, so a batch of image summaries may reach a few hundred MiB).
constexpr int kCheckpointStoreMaxReceiveMib = 64;
constexpr int kSummaryWriterMaxReceiveMib = 512;

// The write end of the wake pipe of the runner that handles signals (one per process).
std::atomic<int> signal_pipe_fd{-1};

void OnTerminationSignal(int sig) {
  const int fd = signal_pipe_fd.load();
  if (fd < 0) return;
  const char byte = static_cast<char>(sig);
  const int saved = errno;
  (void)!::write(fd, &byte, 1);
  errno = saved;
}

constexpr char kWakeRequest = 0;
constexpr char kWakeExit = static_cast<char>(0xff);

// Answers every call UNAVAILABLE: the drain server's methods other than health.
class UnavailableService final : public grpc::CallbackGenericService {
 public:
  explicit UnavailableService(std::string component) : component_(std::move(component)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    // gRPC's reactor contract: the reactor deletes itself in OnDone.
    class Reactor final : public grpc::ServerGenericBidiReactor {
     public:
      explicit Reactor(const std::string& component) {
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            component + " is shutting down (draining its calls)"));
      }
      void OnDone() override { delete this; }
    };
    return new Reactor(component_);
  }

 private:
  const std::string component_;
};

}  // namespace

// What answers the port while the server drains: health says NOT_SERVING for every
// name, any other call is UNAVAILABLE.
class ServerRunner::DrainServer {
 public:
  DrainServer(const std::string& component, const std::vector<std::string>& health_names)
      : unavailable_(component) {
    for (const std::string& name : health_names) {
      health_.SetStatus(name, grpc::health::v1::HealthCheckResponse::NOT_SERVING);
    }
    health_.Shutdown();  // A Watch sends NOT_SERVING and ends.
    grpc::ServerBuilder builder;
    builder.RegisterService(&health_);
    builder.RegisterCallbackGenericService(&unavailable_);
    server_ = builder.BuildAndStart();
  }
  ~DrainServer() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }
  grpc::Server* server() const { return server_.get(); }

 private:
  HealthService health_;
  UnavailableService unavailable_;
  std::unique_ptr<grpc::Server> server_;
};

absl::Duration KeepaliveFromFlags() {
  return absl::Seconds(std::max(1, absl::GetFlag(FLAGS_keepalive_seconds)));
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4;
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

ServerRunnerOptions ServerRunnerOptionsFromFlags(std::string component) {
  ServerRunnerOptions options;
  options.component = std::move(component);
  options.host = absl::GetFlag(FLAGS_bind);
  options.insecure = absl::GetFlag(FLAGS_insecure);
  options.port = absl::GetFlag(FLAGS_port);
  options.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  options.keepalive = KeepaliveFromFlags();
  options.port_file = absl::GetFlag(FLAGS_port_file);
  options.bind_retry = absl::Seconds(std::max(0, absl::GetFlag(FLAGS_bind_retry_seconds)));
  int mib = absl::GetFlag(FLAGS_max_receive_message_mib);
  if (mib <= 0) {
    mib = options.component == "checkpoint_store" ? kCheckpointStoreMaxReceiveMib
          : options.component == "summary_writer" ? kSummaryWriterMaxReceiveMib
                                                  : 2048;
  }
  options.max_receive_message_bytes =
      mib >= 2048 ? std::numeric_limits<int>::max() : mib * (1 << 20);
  return options;
}

ServerRunner::ServerRunner(ServerRunnerOptions options)
    : options_(std::move(options)), registry_(std::make_shared<prometheus::Registry>()) {
  serving_gauge_ = &prometheus::BuildGauge()
                        .Name("overseer_server_serving")
                        .Help(
                            "1 while the server's health status is SERVING (it takes calls), "
                            "0 before it is ready and once it drains.")
                        .Register(*registry_)
                        .Add({});
}

ServerRunner::~ServerRunner() {
  health_.Shutdown();
  acceptor_.reset();  // No more connections for the servers below.
  if (server_ != nullptr && !drained_) server_->Shutdown(std::chrono::system_clock::now());
  drain_server_.reset();
  for (auto& loop : loops_) loop->Shutdown();
  if (watcher_.joinable()) {
    const char byte = kWakeExit;
    (void)!::write(wake_pipe_[1], &byte, 1);
    watcher_.join();
  }
  if (options_.handle_signals && signal_pipe_fd.load() == wake_pipe_[1]) {
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGINT, SIG_DFL);
    signal_pipe_fd.store(-1);
  }
  for (int fd : wake_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

void ServerRunner::AddService(grpc::Service* service, std::string name) {
  services_.push_back(service);
  if (!name.empty()) health_names_.push_back(std::move(name));
}

void ServerRunner::AddCollectable(std::shared_ptr<prometheus::Collectable> collectable) {
  if (metrics_endpoint_ != nullptr) {
    metrics_endpoint_->Add(std::move(collectable));
  } else {
    collectables_.push_back(std::move(collectable));
  }
}

CompletionQueueLoop* ServerRunner::AddCompletionQueueLoop() {
  loops_.push_back(std::make_unique<CompletionQueueLoop>());
  return loops_.back().get();
}

void ServerRunner::AddTerminationCallback(std::function<void()> callback) {
  termination_callbacks_.push_back(std::move(callback));
}

std::string ServerRunner::address() const { return absl::StrCat(options_.host, ":", port_); }

absl::Status ServerRunner::Start() {
  if (server_ != nullptr) return absl::FailedPreconditionError("server already started");
  const SecurityOptions& security = ProcessSecurity();
  if (!options_.insecure && !security.enabled() && !IsLoopbackHost(options_.host)) {
    return absl::InvalidArgumentError(absl::StrCat(
        options_.component, ": --bind=", options_.host,
        " would take calls from anyone who reaches this port, with no authentication or "
        "TLS; give --tls_dir (or --cluster_token_file), or pass --insecure to serve so "
        "knowingly (on a network only the cluster reaches, docs/security.md), or bind a "
        "loopback address"));
  }
  if (!security.tls() && !security.token.empty() && !IsLoopbackHost(options_.host)) {
    LOG(WARNING) << options_.component << ": the cluster token authenticates calls, but "
                 << "without TLS it crosses the network in plaintext (docs/security.md)";
  }
  // With TLS, gRPC owns the listener (a connection handed over by file descriptor can
  // only be plaintext): the port closes when the drain starts, without a drain server.
  std::shared_ptr<grpc::ServerCredentials> tls = TlsServerCredentialsOrNull();
  std::unique_ptr<ConnectionAcceptor> acceptor;
  if (tls == nullptr) {
    absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> listening =
        ConnectionAcceptor::Listen(options_.host, options_.port, options_.bind_retry);
    if (!listening.ok()) {
      return absl::Status(listening.status().code(),
                          absl::StrCat(options_.component, ": ", listening.status().message()));
    }
    acceptor = *std::move(listening);
  }
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::vector<std::string> listed(health_names_.begin() + 1, health_names_.end());
  listed.insert(listed.end(), {"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                               "grpc.reflection.v1alpha.ServerReflection"});
  reflection_v1_ = std::make_unique<ReflectionV1Service>(std::move(listed));
  grpc::ServerBuilder builder;
  builder.RegisterService(&health_);
  builder.RegisterService(reflection_v1_.get());
  builder.SetMaxReceiveMessageSize(options_.max_receive_message_bytes);
  if (options_.stream_window_bytes > 0) {
    builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, options_.stream_window_bytes);
    if (!options_.bdp_probe) builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  }
  SetServerKeepalive(&builder, options_.keepalive);
  if (options_.max_pollers > 0) {
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                                options_.max_pollers);
  }
  for (grpc::Service* service : services_) builder.RegisterService(service);
  for (auto& loop : loops_) loop->Attach(&builder);
  if (tls != nullptr) {
    RETURN_IF_ERROR(StartTlsServer(&builder, std::move(tls)));
  } else {
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) {
      return absl::InternalError(
          absl::StrCat(options_.component, ": the gRPC server did not start"));
    }
    acceptor_ = std::move(acceptor);
    port_ = acceptor_->port();
    acceptor_->SetTarget(server_.get());
  }
  SetServing(false);
  for (auto& loop : loops_) loop->Start();

  if (options_.metrics_port >= 0) {
    MetricsEndpointOptions metrics_options;
    metrics_options.host = options_.host;
    metrics_options.port = options_.metrics_port;
    metrics_options.component = options_.component;
    metrics_options.version = options_.version;
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
        MetricsEndpoint::Start(metrics_options);
    if (!endpoint.ok()) {
      return absl::Status(endpoint.status().code(),
                          absl::StrCat(options_.component, ": ", endpoint.status().message()));
    }
    metrics_endpoint_ = *std::move(endpoint);
    metrics_endpoint_->Add(registry_);
    for (auto& collectable : collectables_) metrics_endpoint_->Add(std::move(collectable));
    collectables_.clear();
    metrics_port_ = metrics_endpoint_->port();
  }

  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("cannot create a pipe: ", std::strerror(errno)));
  }
  if (options_.handle_signals) {
    signal_pipe_fd.store(wake_pipe_[1]);
    struct sigaction action = {};
    action.sa_handler = OnTerminationSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGTERM, &action, nullptr);
    ::sigaction(SIGINT, &action, nullptr);
  }
  watcher_ = std::thread([this] { WatchWakePipe(); });

  if (!options_.port_file.empty()) {
    RETURN_IF_ERROR(WritePortFile(options_.port_file, {port_, metrics_port_}));
  }

  LOG(INFO) << options_.component << " version " << options_.version << " serving gRPC on "
            << address() << ", metrics on "
            << (metrics_port_ >= 0 ? absl::StrCat(options_.host, ":", metrics_port_, "/metrics")
                                   : std::string("(disabled)"));
  return absl::OkStatus();
}

absl::Status ServerRunner::StartTlsServer(grpc::ServerBuilder* builder,
                                          std::shared_ptr<grpc::ServerCredentials> tls) {
  if (options_.port != 0) {
    // Waits out a fixed port still in use (bind_retry) with a listener of our own,
    // closed again at once: a failed BuildAndStart cannot be retried with the same
    // services.
    absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> probe =
        ConnectionAcceptor::Listen(options_.host, options_.port, options_.bind_retry);
    if (!probe.ok()) {
      return absl::Status(probe.status().code(),
                          absl::StrCat(options_.component, ": ", probe.status().message()));
    }
  }
  // Without reuseport a port in use fails to bind, as with our own listener.
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const std::string host = options_.host.find(':') != std::string::npos
                               ? absl::StrCat("[", options_.host, "]")
                               : options_.host;
  builder->AddListeningPort(absl::StrCat(host, ":", options_.port), std::move(tls), &port_);
  server_ = builder->BuildAndStart();
  if (server_ == nullptr || port_ <= 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat(options_.component, ": cannot listen on ", host, ":",
                                               options_.port, " with TLS"));
  }
  return absl::OkStatus();
}

void ServerRunner::SetServing(bool serving) {
  if (server_ == nullptr) return;
  serving_gauge_->Set(serving ? 1 : 0);
  for (const std::string& name : health_names_) {
    health_.SetStatus(name, serving ? grpc::health::v1::HealthCheckResponse::SERVING
                                    : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  }
}

void ServerRunner::WatchWakePipe() {
  char byte = 0;
  while (true) {
    const ssize_t n = ::read(wake_pipe_[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kWakeExit) return;
    if (!terminate_.HasBeenNotified()) {
      signal_ = byte;
      terminate_.Notify();
    }
  }
}

void ServerRunner::RequestTermination() {
  const char byte = kWakeRequest;
  if (wake_pipe_[1] >= 0) (void)!::write(wake_pipe_[1], &byte, 1);
}

int ServerRunner::WaitForTermination() {
  if (server_ == nullptr) return 0;
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer runs a signal's handler only once the thread that took the signal
  // (Linux picks the main thread, which waits here) is in, or next enters, a function
  // TSan intercepts; an absl futex wait is none, so SIGTERM would wait for ever. The
  // wait is cut into slices, whose clock readings let the handler run.
  while (!terminate_.WaitForNotificationWithTimeout(absl::Milliseconds(100))) {
  }
#else
  terminate_.WaitForNotification();
#endif
  LOG(INFO) << options_.component << ": "
            << (signal_ != 0 ? absl::StrCat("signal ", signal_) : std::string("termination"))
            << " received; draining calls for up to "
            << absl::FormatDuration(options_.drain_timeout);
  SetServing(false);
  for (const auto& callback : termination_callbacks_) callback();
  health_.Shutdown();  // Ends health watches, which would hold the drain up.
  // gRPC cancels the calls still running at the drain deadline, but waits for their
  // handlers to return; a handler blocked where it does not see the cancellation (a
  // RecvTensor waiting for a tensor of an abandoned step) would hold the process
  // forever. The process is ending: past the deadline and a grace period, it exits.
  const absl::Duration grace = options_.drain_timeout + absl::Seconds(5);
  std::thread([grace, component = options_.component] {
    absl::SleepFor(grace);
    LOG(WARNING) << component << ": calls still running " << absl::FormatDuration(grace)
                 << " after termination was requested; exiting without them";
    std::_Exit(0);
  }).detach();
  // New connections go to the drain server from here on; the port stays open until
  // the drain is over.
  if (acceptor_ != nullptr) {
    drain_server_ = std::make_unique<DrainServer>(options_.component, health_names_);
    if (drain_server_->server() != nullptr) acceptor_->SetTarget(drain_server_->server());
  }
  server_->Shutdown(absl::ToChronoTime(absl::Now() + options_.drain_timeout));
  server_->Wait();
  for (auto& loop : loops_) loop->Shutdown();
  drained_ = true;
  acceptor_.reset();
  drain_server_.reset();
  return signal_;
}

}  // namespace overseer

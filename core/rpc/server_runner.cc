#include "core/rpc/server_runner.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/logging.h"
#include "core/rpc/keepalive.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

ABSL_FLAG(int, port, 0, "gRPC port to listen on; 0 picks a free port (printed at start-up)");
ABSL_FLAG(int, metrics_port, 0,
          "Prometheus metrics port (/metrics); 0 picks a free port, -1 disables");
ABSL_FLAG(int, keepalive_seconds, 10,
          "while a call is open, ping its peer after this many seconds of silence and "
          "fail the call UNAVAILABLE if the ping is not answered within as many again "
          "(finds a peer whose host died or froze; values below 1 count as 1)");

namespace overseer {
namespace {

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

}  // namespace

absl::Duration KeepaliveFromFlags() {
  return absl::Seconds(std::max(1, absl::GetFlag(FLAGS_keepalive_seconds)));
}

ServerRunnerOptions ServerRunnerOptionsFromFlags(std::string component) {
  ServerRunnerOptions options;
  options.component = std::move(component);
  options.port = absl::GetFlag(FLAGS_port);
  options.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  options.keepalive = KeepaliveFromFlags();
  return options;
}

ServerRunner::ServerRunner(ServerRunnerOptions options)
    : options_(std::move(options)), registry_(std::make_shared<prometheus::Registry>()) {}

ServerRunner::~ServerRunner() {
  health_.Shutdown();
  if (server_ != nullptr && !drained_) server_->Shutdown(std::chrono::system_clock::now());
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

void ServerRunner::AddService(grpc::Service* service) { services_.push_back(service); }

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
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.RegisterService(&health_);
  // Two servers must never share a port silently (gRPC enables SO_REUSEPORT).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const std::string requested = absl::StrCat(options_.host, ":", options_.port);
  builder.SetMaxReceiveMessageSize(options_.max_receive_message_bytes);
  if (options_.stream_window_bytes > 0) {
    builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
                               options_.stream_window_bytes);
    if (!options_.bdp_probe) builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  }
  SetServerKeepalive(&builder, options_.keepalive);
  if (options_.max_pollers > 0) {
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                                options_.max_pollers);
  }
  builder.AddListeningPort(requested, grpc::InsecureServerCredentials(), &port_);
  for (grpc::Service* service : services_) builder.RegisterService(service);
  for (auto& loop : loops_) loop->Attach(&builder);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ <= 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat(options_.component, ": cannot listen on ",
                                               requested, " (port in use or not allowed)"));
  }
  SetServing(false);
  for (auto& loop : loops_) loop->Start();

  if (options_.metrics_port >= 0) {
    const std::string bind = absl::StrCat(options_.host, ":", options_.metrics_port);
    try {  // prometheus-cpp reports a failed bind only by throwing.
      exposer_ = std::make_unique<prometheus::Exposer>(bind);
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat(options_.component,
                                                 ": cannot serve metrics on ", bind, ": ",
                                                 e.what()));
    }
    exposer_->RegisterCollectable(registry_);
    const std::vector<int> ports = exposer_->GetListeningPorts();
    metrics_port_ = ports.empty() ? -1 : ports.front();
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

  LOG(INFO) << options_.component << " version " << options_.version << " serving gRPC on "
            << address() << ", metrics on "
            << (metrics_port_ >= 0 ? absl::StrCat(options_.host, ":", metrics_port_, "/metrics")
                                   : std::string("(disabled)"));
  return absl::OkStatus();
}

void ServerRunner::SetServing(bool serving) {
  if (server_ == nullptr) return;
  health_.SetStatus("", serving ? grpc::health::v1::HealthCheckResponse::SERVING
                                : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
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
            << " received; draining calls for up to " << absl::FormatDuration(options_.drain_timeout);
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
  server_->Shutdown(absl::ToChronoTime(absl::Now() + options_.drain_timeout));
  server_->Wait();
  for (auto& loop : loops_) loop->Shutdown();
  drained_ = true;
  return signal_;
}

}  // namespace overseer

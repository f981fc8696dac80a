#ifndef OVERSEER_CORE_RPC_SERVER_RUNNER_H_
#define OVERSEER_CORE_RPC_SERVER_RUNNER_H_

// What every Overseer server binary (*_main.cc) does around its services: binds the
// gRPC port (--port, 0 picks a free one) with the health service (grpc.health.v1,
// NOT_SERVING until SetServing, for the whole server ("") and for each service's name;
// core/rpc/health_service.h) and server reflection (v1 and v1alpha) on, serves
// Prometheus metrics on --metrics_port, logs one start-up line naming the address and
// version, and on SIGTERM or SIGINT drains in-flight calls (Shutdown with a deadline)
// so that main can flush and exit 0.
//
// The listening socket is the runner's own (core/rpc/connection_acceptor.h), not
// gRPC's: while the server drains, the port still accepts connections and hands them
// to a small drain server, where health checks answer NOT_SERVING and every other
// call UNAVAILABLE ("shutting down"), so that a probe during the drain learns that the
// process is going away instead of finding nothing listening.
//
// Its metrics endpoint (core/metrics/metrics_endpoint.h) serves, besides the services'
// metrics, the process_* metrics, overseer_build_info{component,version} and
//   overseer_server_serving  gauge: 1 while the health status is SERVING, else 0
//
//   ServerRunner runner(ServerRunnerOptionsFromFlags("summary_writer"));
//   runner.AddService(&service, SummaryWriterService::service_full_name());
//   RETURN_IF_ERROR(runner.Start());
//   runner.SetServing(true);
//   runner.WaitForTermination();   // returns after the drain
//   ... flush and close ...

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/metrics/metrics_endpoint.h"
#include "core/rpc/completion_queue_loop.h"
#include "core/rpc/connection_acceptor.h"
#include "core/rpc/health_service.h"
#include "core/rpc/keepalive.h"
#include "core/rpc/reflection/reflection_v1_service.h"
#include "core/version.h"
#include "grpcpp/impl/codegen/service_type.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "prometheus/collectable.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

ABSL_DECLARE_FLAG(int, port);
ABSL_DECLARE_FLAG(int, metrics_port);
ABSL_DECLARE_FLAG(int, keepalive_seconds);
ABSL_DECLARE_FLAG(std::string, port_file);
ABSL_DECLARE_FLAG(int, bind_retry_seconds);
ABSL_DECLARE_FLAG(std::string, bind);
ABSL_DECLARE_FLAG(bool, insecure);

namespace overseer {

struct ServerRunnerOptions {
  // Used in the log line and as overseer_build_info's component ("summary_writer").
  std::string component;
  std::string version = kOverseerVersion;
  // The address the gRPC and metrics listeners bind (--bind): loopback unless told
  // otherwise, so that a server on a laptop is not open to its network.
  std::string host = "127.0.0.1";
  // Start refuses a host that is not a loopback address ("0.0.0.0", "::", a host's own
  // IP or name) unless this is set (--insecure): such a server takes every call from
  // anyone who reaches the port, without authentication or TLS (docs/security.md).
  bool insecure = false;
  // 0: pick a free port (port() says which).
  int port = 0;
  // 0: pick a free port; negative: no metrics endpoint.
  int metrics_port = 0;
  // How long in-flight calls may run on after a termination request.
  absl::Duration drain_timeout = absl::Seconds(10);
  // Install SIGTERM/SIGINT handlers in Start (off for servers inside tests).
  bool handle_signals = true;
  // Largest message the server accepts; -1: no limit (protobuf's own 2 GB limit still
  // applies), so gRPC's 4 MiB default never rejects a large request. From flags
  // (--max_receive_message_mib): 2 GiB for the master and workers, 64 MiB for the
  // checkpoint store, 512 MiB for the summary writer.
  int max_receive_message_bytes = -1;
  // > 0: every stream's HTTP/2 receive window starts at this many bytes instead of
  // gRPC's 64 KiB, so that a bulk stream runs at memory speed from its first byte.
  int stream_window_bytes = 0;
  // With stream_window_bytes > 0: whether gRPC's BDP probing may still resize windows
  // (and the transport's read sizes with them). Off, the window stays fixed: a
  // checkpoint store's WriteShard streams crawled at tens of MB/s on loopback with
  // the probed window. On, worker-to-worker RecvTensor streams ran at 0.86-1.35 of a
  // raw gRPC stream on the quiet 2-core host against 0.57-0.74 with the window fixed.
  bool bdp_probe = false;
  // The server pings a client whose call is open after this long without hearing from
  // it, and cancels its calls when the ping goes unanswered as long again; it accepts
  // clients' keepalive pings (core/rpc/keepalive.h). Zero: gRPC's default (2 hours).
  absl::Duration keepalive = kDefaultKeepalive;
  // > 0: how many threads of the synchronous server may wait for calls. After a burst of
  // calls that block (RecvTensor waiting for its producer), gRPC keeps 2 of the burst's
  // threads (its default) and ends the others, then starts new threads for the next
  // burst: a thread started and ended per blocking call.
  int max_pollers = 0;
  // Not empty: once both ports are bound, Start writes the gRPC port and the metrics
  // port (-1 without one) to this file, one per line, replacing it atomically (a
  // temporary file renamed), so that a launcher that asked for port 0 can read the
  // ports back without parsing logs.
  std::string port_file;
  // A fixed port that is in use is retried for this long before Start fails (a server
  // restarted on its port while the old process's socket is still going away, or while
  // a short-lived connection holds the port). Zero: fail at once.
  absl::Duration bind_retry = absl::ZeroDuration();
};

// Options with host, insecure, port, metrics_port, keepalive, port_file and bind_retry
// from the --bind, --insecure, --port, --metrics_port, --keepalive_seconds, --port_file
// and --bind_retry_seconds flags.
ServerRunnerOptions ServerRunnerOptionsFromFlags(std::string component);

// Whether `host` is a loopback address: "localhost", 127.0.0.0/8, ::1, or ::ffff:127.x.
bool IsLoopbackHost(const std::string& host);

// --keepalive_seconds, for the channels a server opens to its peers.
absl::Duration KeepaliveFromFlags();

// Thread-safe after Start, except that at most one thread calls WaitForTermination.
class ServerRunner {
 public:
  explicit ServerRunner(ServerRunnerOptions options);
  // Stops the server (without draining) if WaitForTermination did not.
  ~ServerRunner();
  ServerRunner(const ServerRunner&) = delete;
  ServerRunner& operator=(const ServerRunner&) = delete;

  // The registry served on the metrics port; services add their metric families.
  prometheus::Registry* metrics() const { return registry_.get(); }
  std::shared_ptr<prometheus::Registry> metrics_shared() const { return registry_; }

  // Serves `collectable` on the metrics port too (kept alive by the runner), e.g. a
  // service's RpcMetrics (core/metrics/rpc_metrics.h). Before or after Start, but not
  // while Start runs.
  void AddCollectable(std::shared_ptr<prometheus::Collectable> collectable);

  // Adds a service (not owned; must outlive the runner). Before Start only. A
  // non-empty `name` (the service's full name, "overseer.MasterService") is also a
  // service of the health service, following SetServing, and listed by reflection.
  void AddService(grpc::Service* service, std::string name = "");

  // A completion queue polled by one thread of its own (core/rpc/completion_queue_loop.h)
  // for services with asynchronous methods and the client calls they make; owned by
  // the runner: attached to the server and started by Start, shut down after the
  // server (once the drain is over, or in the destructor). Before Start only.
  CompletionQueueLoop* AddCompletionQueueLoop();

  // Adds a callback that WaitForTermination runs (on its thread, in the order added)
  // once termination is requested and before the drain starts, e.g. to answer long
  // polls so that they do not hold the drain up. Before Start only.
  void AddTerminationCallback(std::function<void()> callback);

  // Binds and starts serving (health NOT_SERVING), writes the port file (if any) and
  // logs the start-up line. UNAVAILABLE if a port cannot be bound (a fixed gRPC port
  // still in use after bind_retry); INTERNAL if the port file cannot be written;
  // FAILED_PRECONDITION if already started.
  absl::Status Start();

  // Health status of the whole server (the "" service) and of every named service,
  // and overseer_server_serving.
  void SetServing(bool serving);

  // The bound gRPC port and "host:port". Valid after Start.
  int port() const { return port_; }
  std::string address() const;
  // The bound metrics port, or -1 without a metrics endpoint.
  int metrics_port() const { return metrics_port_; }
  // The server, e.g. for in-process channels. Valid after Start.
  grpc::Server* server() const { return server_.get(); }

  // Blocks until SIGTERM/SIGINT (with handle_signals) or RequestTermination, then
  // marks the server NOT_SERVING, runs the termination callbacks, stops taking new
  // calls (new connections reach the drain server: health NOT_SERVING, other calls
  // UNAVAILABLE) and waits up to drain_timeout for in-flight calls (cancelling those
  // still running); then closes the port. Returns the signal number, or 0 for
  // RequestTermination.
  int WaitForTermination();

  // Makes WaitForTermination return. Thread-safe.
  void RequestTermination();

 private:
  class DrainServer;

  void WatchWakePipe();
  // Binds the port with `tls` (gRPC's own listener) and starts the server.
  absl::Status StartTlsServer(grpc::ServerBuilder* builder,
                              std::shared_ptr<grpc::ServerCredentials> tls);

  const ServerRunnerOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* serving_gauge_;
  // Added to the metrics endpoint when Start makes it.
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::vector<grpc::Service*> services_;
  // The health service's names: "" and every named service.
  std::vector<std::string> health_names_ = {""};
  std::unique_ptr<ReflectionV1Service> reflection_v1_;
  std::unique_ptr<ConnectionAcceptor> acceptor_;
  std::unique_ptr<DrainServer> drain_server_;
  std::vector<std::unique_ptr<CompletionQueueLoop>> loops_;
  std::vector<std::function<void()>> termination_callbacks_;
  HealthService health_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;
  int port_ = -1;
  int metrics_port_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread watcher_;
  absl::Notification terminate_;
  int signal_ = 0;  // Written by the watcher before terminate_ is notified.
  bool drained_ = false;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_SERVER_RUNNER_H_

#ifndef OVERSEER_CORE_RPC_CONNECTION_ACCEPTOR_H_
#define OVERSEER_CORE_RPC_CONNECTION_ACCEPTOR_H_

// A TCP listening socket owned by us instead of by gRPC, whose connections a thread
// accepts and hands to a grpc::Server (grpc::AddInsecureChannelFromFd). ServerRunner
// uses it so that the port keeps answering while a server drains: gRPC's own
// Server::Shutdown closes its listeners at once, so a health probe made during the
// drain would be refused (UNAVAILABLE) instead of hearing NOT_SERVING. With the
// listener ours, the runner points new connections at a small drain server
// (SetTarget) while the main server finishes its calls.
//
//   ASSIGN_OR_RETURN(auto acceptor, ConnectionAcceptor::Listen("0.0.0.0", 2222, retry));
//   acceptor->SetTarget(server.get());   // Accepting starts with the first target.
//   ...
//   acceptor->SetTarget(drain_server.get());
//   acceptor.reset();                    // Closes the listener; joins the thread.

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"

namespace overseer {

// Thread-safe.
class ConnectionAcceptor {
 public:
  // Binds `host`:`port` (0: a free port; host an IP literal or a name, e.g. "0.0.0.0",
  // "127.0.0.1", "[::]") with SO_REUSEADDR and listens. A port in use is retried for
  // `bind_retry` (zero: not at all), then UNAVAILABLE naming the address;
  // INVALID_ARGUMENT for a host that does not resolve.
  static absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> Listen(const std::string& host,
                                                                    int port,
                                                                    absl::Duration bind_retry);
  // Closes the listener and joins the accepting thread; connections already handed
  // over stay with their server.
  ~ConnectionAcceptor();
  ConnectionAcceptor(const ConnectionAcceptor&) = delete;
  ConnectionAcceptor& operator=(const ConnectionAcceptor&) = delete;

  // The bound port.
  int port() const { return port_; }

  // Hands every connection accepted from now on to `server` (not owned; started, not
  // shut down, and alive until the next SetTarget or the destructor). The first call
  // starts accepting; connections that arrive before it wait in the listen backlog.
  void SetTarget(grpc::Server* server);

 private:
  ConnectionAcceptor(int listen_fd, int port, int wake_read, int wake_write);
  void AcceptLoop();

  const int listen_fd_;
  const int port_;
  const int wake_read_;
  const int wake_write_;
  absl::Mutex mu_;
  grpc::Server* target_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_RPC_CONNECTION_ACCEPTOR_H_

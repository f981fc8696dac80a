#ifndef OVERSEER_WORKER_RPC_LOCAL_CALLS_H_
#define OVERSEER_WORKER_RPC_LOCAL_CALLS_H_

// Same-host calls without gRPC: RunGraph's fast path between a caller (a master, or a
// client running direct steps) and a worker on its host. A worker listens on a Unix
// stream socket (GrpcWorkerService::ServeLocalCalls), names it in its gRPC RunGraph
// replies (initial metadata kLocalCallsMetadataKey), and serves the calls that come over
// it; a GrpcWorker that can connect to it sends its RunGraph calls there. A call costs
// one message each way on a socket kept open, with no HTTP/2 framing, no call object
// and no completion queue: partition_bench's raw fan-out over loopback TCP costs
// 0.23-0.26 of gRPC's CPU per extra target on the quiet host (docs/performance.md,
// section 2).
//
// Protocol: frames in both directions on one connection, each a 24-byte header
// (little-endian: uint32 kLocalCallMagic, uint8 kind, uint8 0, uint16 method, uint64
// call id, uint32 status code, uint32 body length) and the body:
//   kind 1, a call (client to server): the request; the id is the client's, unique
//     among its calls in flight on the connection;
//   kind 2, a cancel (client to server, no body): the client gave up on call `id`
//     (cancelled, or past its deadline); the server cancels the call's
//     CancellationManager, and any reply to it is dropped by the client;
//   kind 3, a reply (server to client): the status code of the call's status, and as
//     body the response (OK) or the status message (any other code); a reply to a call
//     the client gave up on is dropped;
//   kind 4, a ping (client to server, no body), which the server answers at once with
//   kind 5, a pong: the client's keepalive (LocalCallOptions::keepalive).
// A frame that breaks these rules (another magic, an unknown kind, a body over the
// receiver's limit, a call id in use, a kind the receiver does not take) closes the
// connection: the client's calls in flight end UNAVAILABLE, the server's are cancelled.
//
// Each connection has a thread of its own on each side, which reads its frames and
// writes what a sender could not write at once: a send never blocks (it queues), so
// a handler or a `done` that sends more on the same thread cannot deadlock with its
// peer. A server runs each call's handler on the connection's thread, as a gRPC
// completion queue loop would; a client runs each call's `done` on its channel's
// thread when the reply, the deadline or the connection's end comes.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/io/unix_socket.h"

namespace overseer {

inline constexpr uint32_t kLocalCallMagic = 0x434c564f;  // "OVLC"
inline constexpr size_t kLocalCallHeaderBytes = 24;
// The largest body a side accepts by default: protobuf's limit on one message.
inline constexpr size_t kLocalCallMaxBodyBytes = (size_t{1} << 31) - 1;

// The worker's methods over local calls: a request and a response are WorkerService's
// messages, serialized.
inline constexpr uint16_t kLocalRunGraphMethod = 1;
// The gRPC initial-metadata key under which a worker names its local call socket in its
// RunGraph replies (absent: it serves none).
inline constexpr char kLocalCallsMetadataKey[] = "x-overseer-local-calls";

namespace local_calls_internal {
class Connection;
class ServerConnection;
class ChannelState;
}  // namespace local_calls_internal

// One call that came to a LocalCallServer. Thread-safe.
class LocalCall {
 public:
  uint16_t method() const { return method_; }
  const std::string& request() const { return request_; }
  // Cancelled (CANCELLED, with the reason) when the caller gives up on the call or its
  // connection closes, or the server stops.
  CancellationManager* cancellation() { return &cancellation_; }
  // Sends the reply: `response` if `status` is OK, else `status`. The first call counts;
  // any thread. After the connection closed it goes nowhere.
  void Reply(const absl::Status& status, std::string response = {});

 private:
  friend class local_calls_internal::ServerConnection;
  LocalCall(std::weak_ptr<local_calls_internal::ServerConnection> connection, uint64_t id,
            uint16_t method, std::string request)
      : connection_(std::move(connection)),
        id_(id),
        method_(method),
        request_(std::move(request)) {}

  const std::weak_ptr<local_calls_internal::ServerConnection> connection_;
  const uint64_t id_;
  const uint16_t method_;
  const std::string request_;
  CancellationManager cancellation_;
  std::atomic<bool> replied_{false};
};

struct LocalCallOptions {
  // A frame whose body is larger closes the connection (the receiver's limit); a call
  // or reply larger fails before it is sent (RESOURCE_EXHAUSTED).
  size_t max_body_bytes = kLocalCallMaxBodyBytes;
  // The socket buffers asked for, each way (the kernel caps them at
  // net.core.wmem_max and rmem_max): large frames go in fewer writes.
  int socket_buffer_bytes = 4 << 20;
  // A client's keepalive, as a gRPC channel's (core/rpc/keepalive.h): while calls are in
  // flight and nothing came from the server for this long, the client pings it, and
  // ends the connection (UNAVAILABLE) if nothing comes within as long again: a server
  // that is stopped (SIGSTOP) or stuck, which a closed socket would not show. Zero: off.
  absl::Duration keepalive = absl::ZeroDuration();
};

// Serves the calls of the connections to a Unix stream socket. Thread-safe.
class LocalCallServer {
 public:
  // Runs on the connection's thread, once per call; the call is answered with
  // LocalCall::Reply, there or later from any thread. That thread also answers the
  // client's keepalive pings, between handlers: a handler must return well within the
  // clients' keepalive (run longer work elsewhere).
  using Handler = std::function<void(std::shared_ptr<LocalCall>)>;

  // A fresh abstract address for this process: "@overseer-calls-PID-RANDOM".
  static std::string DefaultAddress();
  // Listens on `address` (core/io/unix_socket.h: "@name" or a path). The errors of
  // ListenUnixSocket.
  static absl::StatusOr<std::unique_ptr<LocalCallServer>> Start(const std::string& address,
                                                                Handler handler,
                                                                LocalCallOptions options = {});
  // Stops accepting, closes every connection (their calls in flight are cancelled)
  // and waits for the connections' threads, unless called on one of them.
  ~LocalCallServer();
  LocalCallServer(const LocalCallServer&) = delete;
  LocalCallServer& operator=(const LocalCallServer&) = delete;

  const std::string& address() const { return address_; }
  // Connections open now.
  int connections() const;
  // Connections closed because a frame broke the protocol.
  int64_t malformed() const;

 private:
  LocalCallServer(std::string address, UniqueFd listener, UniqueFd wake, Handler handler,
                  LocalCallOptions options);
  void Accept();

  const std::string address_;
  const UniqueFd listener_;
  const UniqueFd wake_;  // An eventfd that stops Accept.
  const Handler handler_;
  const LocalCallOptions options_;
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<local_calls_internal::ServerConnection>> connections_
      ABSL_GUARDED_BY(mu_);
  // Malformed connections that left connections_.
  int64_t malformed_closed_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // Last: starts after the members it uses.
};

// A client's connection to a LocalCallServer. Thread-safe.
class LocalCallChannel {
 public:
  // The call's response, or its error.
  using Done = std::function<void(absl::StatusOr<std::string>)>;

  // Connects to `address`. UNAVAILABLE naming it if nothing listens there (another
  // host or network namespace, a stopped server).
  static absl::StatusOr<std::unique_ptr<LocalCallChannel>> Connect(const std::string& address,
                                                                   LocalCallOptions options = {});
  // Closes the connection: calls in flight end CANCELLED. Waits for the channel's
  // thread unless called on it.
  ~LocalCallChannel();
  LocalCallChannel(const LocalCallChannel&) = delete;
  LocalCallChannel& operator=(const LocalCallChannel&) = delete;

  // Sends a call. `done` runs once, with the response or: UNAVAILABLE naming the
  // socket if the connection is closed or closes first (the server went away, or a
  // frame broke the protocol); DEADLINE_EXCEEDED at `deadline`; `cancellation`'s reason
  // if it is cancelled first (it may be null); RESOURCE_EXHAUSTED if `request` is over
  // the limit; or the server's error. It runs on the channel's thread for a reply, a
  // deadline or the connection's end, on the cancelling thread for a cancellation, and
  // on this thread when the call cannot start (closed, cancelled, too large).
  void Call(uint16_t method, std::string request, absl::Time deadline,
            CancellationManager* cancellation, Done done);
  // Whether the connection is closed (every later call fails UNAVAILABLE).
  bool closed() const;
  // Calls in flight.
  int in_flight() const;
  // Pongs received (LocalCallOptions::keepalive).
  int64_t pongs() const;

 private:
  explicit LocalCallChannel(std::shared_ptr<local_calls_internal::ChannelState> state);
  const std::shared_ptr<local_calls_internal::ChannelState> state_;
};

}  // namespace overseer

#endif  // OVERSEER_WORKER_RPC_LOCAL_CALLS_H_

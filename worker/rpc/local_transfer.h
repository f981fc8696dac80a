#ifndef OVERSEER_WORKER_RPC_LOCAL_TRANSFER_H_
#define OVERSEER_WORKER_RPC_LOCAL_TRANSFER_H_

// Same-host tensor transfers: RecvTensor's fast path (docs/design.md, "Tensor
// transfers"). A worker listens on a Unix stream socket, by default in the abstract
// namespace, and names it in the first message of every RecvTensor reply
// (RecvTensorResponse.local_socket). A caller that can connect to it (checked once per
// worker and address: a probe that connects and closes) is on the same host and network
// namespace; it then sets RecvTensorRequest.accept_local, and a tensor of at least
// kLocalTransferMinBytes comes as a first message with dtype, shape, total_bytes and a
// single-use local_token instead of content. The caller connects, writes the token,
// and reads exactly total_bytes bytes, which the worker writes from the tensor's own
// buffer; then the RecvTensor call ends with the transfer's status. The bytes cross one
// Unix socket (a copy into the kernel and one out of it) instead of gRPC's HTTP/2
// framing over loopback TCP.
//
// Protocol on the socket: the client writes kLocalTokenChars token characters; the
// server answers with the tensor's bytes and closes, or closes without a byte for a
// token it does not hold (unknown, used, given up). A connection that sends nothing is
// a probe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/io/unix_socket.h"

namespace overseer {

// Smaller tensors stay in the RecvTensor stream: the socket's connect and hand-off cost
// about one round trip more.
inline constexpr int64_t kLocalTransferMinBytes = int64_t{1} << 20;
// A token's length (core/io/unix_socket.h, NewSocketToken).
inline constexpr int kLocalTokenChars = 32;
// How long the worker waits for the caller to connect with its token, and either side
// for the next byte: a live peer on the same host never pauses this long.
inline constexpr absl::Duration kLocalTransferTimeout = absl::Seconds(20);
// How long a connection may take to present its token (a caller writes it as soon as it
// connects). Connections are admitted side by side: one that stalls holds up no other.
inline constexpr absl::Duration kLocalTokenWait = absl::Seconds(2);
// Connections admitted at once; more wait in the listening socket's backlog.
inline constexpr int kMaxConnectionsAdmitted = 256;

// The worker's side. Thread-safe.
class LocalTransferServer {
 public:
  // "@overseer-worker-<pid>-<16 random hex digits>": unique on the host.
  static std::string DefaultAddress();
  // Listens on `address` (core/io/unix_socket.h: "@name" or a path) and starts the
  // thread that admits connections, each given `token_wait` to present its token. The
  // errors of ListenUnixSocket.
  static absl::StatusOr<std::unique_ptr<LocalTransferServer>> Start(
      const std::string& address, absl::Duration token_wait = kLocalTokenWait);
  // Stops the thread; tokens still awaited end CANCELLED.
  ~LocalTransferServer();

  const std::string& address() const { return address_; }

  // A new token, held until Await or Forget.
  absl::StatusOr<std::string> NewToken();
  // Waits until a connection presents `token` and returns it, or until `deadline`
  // (DEADLINE_EXCEEDED) or Forget(token) or the server's end (CANCELLED). The token is
  // spent either way: a later connection presenting it is refused.
  absl::StatusOr<UniqueFd> Await(const std::string& token, absl::Time deadline);
  // Gives up `token`: Await on it returns CANCELLED (now, or when it is called). Any
  // thread.
  void Forget(const std::string& token);
  // Drops a token that will not be awaited.
  void Drop(const std::string& token);

  // Connections that presented a token not held, or part of one (probes, which send
  // nothing, are not counted).
  int64_t refused() const;
  // Tokens held right now.
  int tokens_held() const;

 private:
  struct Slot {
    UniqueFd connection;
    bool cancelled = false;
    bool awaited = false;  // An Await waits on it (and drops it when it returns).
  };
  static bool Ready(Slot* slot) { return slot->connection.valid() || slot->cancelled; }

  // A connection whose token has not all come yet.
  struct Arriving {
    UniqueFd connection;
    absl::Time deadline;
    size_t got = 0;
    char token[kLocalTokenChars];
  };

  LocalTransferServer(std::string address, absl::Duration token_wait, UniqueFd listener,
                      UniqueFd wake);
  // The admitting thread: accepts connections and reads their tokens, all at once.
  void Serve();
  // Reads what `arriving` sent so far; true once it is done sending (a whole token, or
  // it closed or failed).
  static bool ReadToken(Arriving* arriving);
  // Hands a connection that presented a held token to its Await; closes any other (counting it
  // refused unless it sent nothing: a probe).
  void Admit(Arriving arriving);

  const std::string address_;
  const absl::Duration token_wait_;
  const UniqueFd listener_;
  const UniqueFd wake_;  // An eventfd that stops Serve.
  mutable absl::Mutex mu_;
  std::map<std::string, Slot> slots_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // Last: starts after the members it uses.
};

// Writes `data` to `connection` (the worker's part, after Await). UNAVAILABLE if the
// receiver closed the connection or took nothing for kLocalTransferTimeout.
absl::Status SendLocalTransfer(int connection, absl::string_view data);

// Whether something listens at `address`: a probe (connects and closes).
bool CanReachLocalTransfer(const std::string& address);

// The caller's side of one transfer. Thread-safe: Cancel may run on any thread while
// Receive runs.
class LocalTransferReceiver {
 public:
  // Connects to `address`, presents `token` and reads exactly data.size() bytes into
  // `data`. UNAVAILABLE naming the address if it cannot be connected, if the worker
  // closed before the last byte (it refused the token or gave up) or sent nothing for
  // kLocalTransferTimeout; CANCELLED if Cancel was called, before or during.
  absl::Status Receive(const std::string& address, const std::string& token, absl::Span<char> data);
  // Ends a Receive in progress (or the next one) CANCELLED.
  void Cancel();

 private:
  absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;  // The connection while Receive reads it.
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace overseer

#endif  // OVERSEER_WORKER_RPC_LOCAL_TRANSFER_H_

#ifndef OVERSEER_CORE_IO_UNIX_SOCKET_H_
#define OVERSEER_CORE_IO_UNIX_SOCKET_H_

// Unix domain sockets of the same-host fast paths (checkpoint local reads and writes,
// checkpoint_store/local_read.h; tensor transfers, worker/rpc/local_transfer.h).
//
// Addresses: "@name" is `name` in Linux's abstract namespace (no file; reachable by the
// processes of the host's network namespace, so not from another container or host);
// anything else is a file path of at most 107 bytes.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace overseer {

// Owns a file descriptor: closes it on destruction. Movable, not copyable.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

// A listening socket of `type` (SOCK_STREAM, SOCK_SEQPACKET) at `address`
// (close-on-exec); `what` names it in errors ("local read socket"). A file path that
// holds a socket no process listens on (left by a killed server) is replaced;
// ALREADY_EXISTS if a server still listens there or the path is another kind of file.
// INVALID_ARGUMENT for an empty or too long address.
absl::StatusOr<UniqueFd> ListenUnixSocket(const std::string& address, int type,
                                          absl::string_view what);
// A socket of `type` connected to `address`. UNAVAILABLE naming the address if nothing
// listens there (another host, another network or mount namespace, a stopped server).
absl::StatusOr<UniqueFd> ConnectUnixSocket(const std::string& address, int type,
                                           absl::string_view what);
// Bounds each blocking send and receive on `fd` by `timeout` (EAGAIN after it).
void SetSocketTimeout(int fd, absl::Duration timeout);
// A secret for a same-host exchange: 128 random bits from the kernel's CSPRNG, as 32
// hex characters. INTERNAL if the kernel gives none.
absl::StatusOr<std::string> NewSocketToken();
// "@<prefix>-<pid>-<16 random hex digits>": an abstract address unique on the host, for
// a server of this process to listen on.
std::string UniqueAbstractAddress(absl::string_view prefix);
// poll()'s timeout until `deadline`: milliseconds rounded up (a wait never ends before
// it), 0 once it passed, -1 (none) for absl::InfiniteFuture().
int PollTimeoutMs(absl::Time deadline);
// UNAVAILABLE: "<what>: <strerror(error)>".
absl::Status ErrnoStatus(int error, absl::string_view what);
// An eventfd (close-on-exec) that stops or wakes a thread polling it for POLLIN.
// UNAVAILABLE if the kernel gives none (too many open files).
absl::StatusOr<UniqueFd> NewEventFd();
// Adds 1 to the eventfd `fd`, so that a poll of it returns; logs an error naming
// `what` if the write fails.
void WakeEventFd(int fd, absl::string_view what);

}  // namespace overseer

#endif  // OVERSEER_CORE_IO_UNIX_SOCKET_H_

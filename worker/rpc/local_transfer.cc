#include "worker/rpc/local_transfer.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

constexpr char kWhat[] = "local transfer socket";
// Socket buffers asked for on both ends (the kernel caps them at net.core.*mem_max):
// fewer wake-ups per byte than the default.
constexpr int kSocketBufferBytes = 4 << 20;

}  // namespace

std::string LocalTransferServer::DefaultAddress() {
  return UniqueAbstractAddress("overseer-worker");
}

absl::StatusOr<std::unique_ptr<LocalTransferServer>> LocalTransferServer::Start(
    const std::string& address, absl::Duration token_wait) {
  ASSIGN_OR_RETURN(UniqueFd listener, ListenUnixSocket(address, SOCK_STREAM, kWhat));
  ASSIGN_OR_RETURN(UniqueFd wake, NewEventFd());
  return std::unique_ptr<LocalTransferServer>(
      new LocalTransferServer(address, token_wait, std::move(listener), std::move(wake)));
}

LocalTransferServer::LocalTransferServer(std::string address, absl::Duration token_wait,
                                         UniqueFd listener, UniqueFd wake)
    : address_(std::move(address)),
      token_wait_(token_wait),
      listener_(std::move(listener)),
      wake_(std::move(wake)),
      thread_([this] { Serve(); }) {}

LocalTransferServer::~LocalTransferServer() {
  WakeEventFd(wake_.get(), kWhat);
  thread_.join();
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  for (auto it = slots_.begin(); it != slots_.end();) {
    it->second.cancelled = true;
    it = it->second.awaited ? std::next(it) : slots_.erase(it);
  }
  // Each Await still waiting wakes, returns CANCELLED and drops its slot.
  mu_.Await(absl::Condition(
      +[](std::map<std::string, Slot>* slots) { return slots->empty(); }, &slots_));
  if (address_[0] != '@') ::unlink(address_.c_str());
}

absl::StatusOr<std::string> LocalTransferServer::NewToken() {
  ASSIGN_OR_RETURN(std::string token, NewSocketToken());
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::CancelledError("the local transfer socket is closing");
  slots_[token];
  return token;
}

absl::StatusOr<UniqueFd> LocalTransferServer::Await(const std::string& token, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto it = slots_.find(token);
  if (it == slots_.end()) return absl::NotFoundError("no such local transfer token");
  Slot* slot = &it->second;
  slot->awaited = true;
  mu_.AwaitWithDeadline(absl::Condition(&LocalTransferServer::Ready, slot), deadline);
  UniqueFd connection = std::move(slot->connection);
  const bool cancelled = slot->cancelled;
  slots_.erase(it);
  if (connection.valid()) return connection;
  if (cancelled) return absl::CancelledError("the local transfer was given up");
  return absl::DeadlineExceededError(
      absl::StrCat("the receiver did not fetch the tensor from ", kWhat, " ", address_));
}

void LocalTransferServer::Forget(const std::string& token) {
  absl::MutexLock lock(&mu_);
  auto it = slots_.find(token);
  if (it != slots_.end()) it->second.cancelled = true;  // Its Await drops it.
}

void LocalTransferServer::Drop(const std::string& token) {
  absl::MutexLock lock(&mu_);
  auto it = slots_.find(token);
  if (it != slots_.end() && !it->second.awaited) slots_.erase(it);
}

int64_t LocalTransferServer::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

int LocalTransferServer::tokens_held() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(slots_.size());
}

void LocalTransferServer::Serve() {
  std::vector<Arriving> arriving;
  std::vector<pollfd> fds;
  for (;;) {
    // While kMaxConnectionsAdmitted are arriving, the listener is left out (poll skips a
    // negative descriptor): later connections wait in its backlog.
    const bool accepting = arriving.size() < static_cast<size_t>(kMaxConnectionsAdmitted);
    fds.clear();
    fds.push_back({wake_.get(), POLLIN, 0});
    fds.push_back({accepting ? listener_.get() : -1, POLLIN, 0});
    absl::Time first_deadline = absl::InfiniteFuture();
    for (const Arriving& a : arriving) {
      fds.push_back({a.connection.get(), POLLIN, 0});
      first_deadline = std::min(first_deadline, a.deadline);
    }
    if (::poll(fds.data(), fds.size(), PollTimeoutMs(first_deadline)) < 0) {
      if (errno == EINTR) continue;
      LOG(ERROR) << kWhat << ": poll: " << std::strerror(errno);
      return;
    }
    if ((fds[0].revents & POLLIN) != 0) return;
    // Tokens that came, and connections out of time (closed: a token presented late
    // would be refused anyway, so the connection is not admitted).
    const absl::Time now = absl::Now();
    size_t kept = 0;
    for (size_t i = 0; i < arriving.size(); ++i) {
      Arriving& a = arriving[i];
      if ((fds[i + 2].revents != 0 && ReadToken(&a)) || now >= a.deadline) {
        Admit(std::move(a));
        continue;
      }
      if (kept != i) arriving[kept] = std::move(a);
      ++kept;
    }
    arriving.resize(kept);
    if (accepting && (fds[1].revents & POLLIN) != 0) {
      UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (connection.valid()) {
        Arriving a;
        a.connection = std::move(connection);
        a.deadline = now + token_wait_;
        // A caller writes its token as it connects: usually it is there already.
        if (ReadToken(&a)) {
          Admit(std::move(a));
        } else {
          arriving.push_back(std::move(a));
        }
      }
    }
  }
}

bool LocalTransferServer::ReadToken(Arriving* arriving) {
  while (arriving->got < sizeof(arriving->token)) {
    // Without blocking: the connection itself stays blocking for SendLocalTransfer.
    const ssize_t r = ::recv(arriving->connection.get(), arriving->token + arriving->got,
                             sizeof(arriving->token) - arriving->got, MSG_DONTWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (r <= 0) return true;  // Closed, or failed.
    arriving->got += static_cast<size_t>(r);
  }
  return true;
}

void LocalTransferServer::Admit(Arriving arriving) {
  if (arriving.got == 0) return;  // A probe, or a client that went away.
  UniqueFd connection = std::move(arriving.connection);
  absl::MutexLock lock(&mu_);
  auto it = arriving.got == sizeof(arriving.token)
                ? slots_.find(std::string(arriving.token, sizeof(arriving.token)))
                : slots_.end();
  if (it == slots_.end() || it->second.connection.valid() || it->second.cancelled) {
    ++refused_;
    return;  // Closed without a byte.
  }
  SetSocketTimeout(connection.get(), kLocalTransferTimeout);
  ::setsockopt(connection.get(), SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes,
               sizeof(kSocketBufferBytes));
  it->second.connection = std::move(connection);
}

absl::Status SendLocalTransfer(int connection, absl::string_view data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t r = ::send(connection, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      return errno == EAGAIN || errno == EWOULDBLOCK
                 ? absl::UnavailableError(absl::StrCat("the receiver took nothing for ",
                                                       absl::FormatDuration(kLocalTransferTimeout),
                                                       " on the ", kWhat))
                 : ErrnoStatus(errno, absl::StrCat("cannot send on the ", kWhat));
    }
    sent += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

bool CanReachLocalTransfer(const std::string& address) {
  return ConnectUnixSocket(address, SOCK_STREAM, kWhat).ok();
}

absl::Status LocalTransferReceiver::Receive(const std::string& address, const std::string& token,
                                            absl::Span<char> data) {
  ASSIGN_OR_RETURN(UniqueFd connection, ConnectUnixSocket(address, SOCK_STREAM, kWhat));
  SetSocketTimeout(connection.get(), kLocalTransferTimeout);
  ::setsockopt(connection.get(), SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes,
               sizeof(kSocketBufferBytes));
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("the local transfer was cancelled");
    fd_ = connection.get();
  }
  absl::Status status;
  if (::send(connection.get(), token.data(), token.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(token.size())) {
    status = ErrnoStatus(errno, absl::StrCat("cannot send the token to ", kWhat, " ", address));
  }
  size_t got = 0;
  while (status.ok() && got < data.size()) {
    const ssize_t r = ::recv(connection.get(), data.data() + got, data.size() - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      status = absl::UnavailableError(absl::StrCat(kWhat, " ", address, " sent nothing for ",
                                                   absl::FormatDuration(kLocalTransferTimeout)));
    } else if (r < 0) {
      status = ErrnoStatus(errno, absl::StrCat("cannot read from ", kWhat, " ", address));
    } else if (r == 0) {
      status = absl::UnavailableError(
          absl::StrCat(kWhat, " ", address, " closed after ", got, " of ", data.size(), " bytes"));
    } else {
      got += static_cast<size_t>(r);
    }
  }
  absl::MutexLock lock(&mu_);
  fd_ = -1;  // Closed as `connection` goes, after Cancel can no longer shut it down.
  if (cancelled_ && !status.ok()) return absl::CancelledError("the local transfer was cancelled");
  return status;
}

void LocalTransferReceiver::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace overseer

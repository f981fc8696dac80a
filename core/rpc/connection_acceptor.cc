#include "core/rpc/connection_acceptor.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/logging.h"
#include "grpcpp/server_posix.h"

namespace overseer {
namespace {

// Binds a new listening socket to `address`; the errno of the failure otherwise.
int BindAndListen(const addrinfo& address, int* error) {
  const int fd = ::socket(address.ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = errno;
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, address.ai_addr, address.ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    *error = errno;
    ::close(fd);
    return -1;
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return -1;
  if (bound.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> ConnectionAcceptor::Listen(
    const std::string& host, int port, absl::Duration bind_retry) {
  std::string name = host;
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  const std::string requested = absl::StrCat(host, ":", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(name.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (resolved != 0 || found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen on ", requested, ": ", ::gai_strerror(resolved)));
  }
  const addrinfo address = *found;
  const absl::Time give_up = absl::Now() + bind_retry;
  absl::Duration backoff = absl::Milliseconds(10);
  bool warned = false;
  int error = 0;
  int fd = -1;
  while ((fd = BindAndListen(address, &error)) < 0 && error == EADDRINUSE &&
         absl::Now() < give_up) {
    if (!warned) {
      LOG(WARNING) << "port " << port << " is in use; retrying for "
                   << absl::FormatDuration(bind_retry);
      warned = true;
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(200));
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", requested, ": ",
                     error == EADDRINUSE ? "the port is in use" : std::strerror(error),
                     error == EADDRINUSE && bind_retry > absl::ZeroDuration()
                         ? absl::StrCat(" (still after ", absl::FormatDuration(bind_retry), ")")
                         : std::string()));
  }
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return absl::InternalError(absl::StrCat("cannot create a pipe: ", why));
  }
  return std::unique_ptr<ConnectionAcceptor>(
      new ConnectionAcceptor(fd, BoundPort(fd), wake[0], wake[1]));
}

ConnectionAcceptor::ConnectionAcceptor(int listen_fd, int port, int wake_read, int wake_write)
    : listen_fd_(listen_fd), port_(port), wake_read_(wake_read), wake_write_(wake_write) {
  thread_ = std::thread([this] { AcceptLoop(); });
}

ConnectionAcceptor::~ConnectionAcceptor() {
  const char byte = 0;
  (void)!::write(wake_write_, &byte, 1);
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_read_);
  ::close(wake_write_);
}

void ConnectionAcceptor::SetTarget(grpc::Server* server) {
  absl::MutexLock lock(&mu_);
  target_ = server;
}

void ConnectionAcceptor::AcceptLoop() {
  {  // Connections wait in the backlog until there is a server to take them.
    absl::MutexLock lock(&mu_);
    auto has_target = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return target_ != nullptr; };
    while (!mu_.AwaitWithTimeout(absl::Condition(&has_target), absl::Milliseconds(100))) {
      pollfd wake{wake_read_, POLLIN, 0};
      if (::poll(&wake, 1, 0) > 0) return;
    }
  }
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
  while (true) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LOG(ERROR) << "poll on the listening socket failed: " << std::strerror(errno);
      return;
    }
    if (fds[1].revents != 0) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // EAGAIN: another wake-up took it; ECONNABORTED: the peer gave up; EMFILE and
      // the like: the connection waits in the backlog for the next round.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    absl::MutexLock lock(&mu_);
    grpc::AddInsecureChannelFromFd(target_, fd);  // Takes the descriptor.
  }
}

}  // namespace overseer

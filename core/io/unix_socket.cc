#include "core/io/unix_socket.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// The sockaddr of `address` and its length.
absl::Status SocketAddress(const std::string& address, absl::string_view what, sockaddr_un* addr,
                           socklen_t* len) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (address.empty() || address == "@") {
    return absl::InvalidArgumentError(absl::StrCat("empty ", what, " address"));
  }
  if (address.size() >= sizeof(addr->sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " address ", address, " is longer than ",
                                                   sizeof(addr->sun_path) - 1, " bytes"));
  }
  std::memcpy(addr->sun_path, address.data(), address.size());
  if (address[0] == '@') addr->sun_path[0] = '\0';  // The abstract namespace.
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size() +
                                (address[0] == '@' ? 0 : 1));
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> NewSocket(int type, absl::string_view what) {
  UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("cannot create a ", what));
  return fd;
}

}  // namespace

int PollTimeoutMs(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return -1;
  const absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
  return static_cast<int>(
      std::min<int64_t>(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))),
                        std::numeric_limits<int>::max()));
}

absl::Status ErrnoStatus(int error, absl::string_view what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(error)));
}

absl::StatusOr<std::string> NewSocketToken() {
  char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t r = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("getrandom: ", std::strerror(errno)));
    }
    got += static_cast<size_t>(r);
  }
  return absl::BytesToHexString(absl::string_view(bytes, sizeof(bytes)));
}

std::string UniqueAbstractAddress(absl::string_view prefix) {
  absl::StatusOr<std::string> random = NewSocketToken();
  return absl::StrCat("@", prefix, "-", ::getpid(), "-", random.ok() ? random->substr(0, 16) : "0");
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void SetSocketTimeout(int fd, absl::Duration timeout) {
  const timeval tv = absl::ToTimeval(timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

absl::StatusOr<UniqueFd> ListenUnixSocket(const std::string& address, int type,
                                          absl::string_view what) {
  sockaddr_un addr;
  socklen_t len;
  RETURN_IF_ERROR(SocketAddress(address, what, &addr, &len));
  if (address[0] != '@') {
    struct stat st;
    if (::lstat(address.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        return absl::AlreadyExistsError(
            absl::StrCat(what, " path ", address, " exists and is not a socket"));
      }
      if (ConnectUnixSocket(address, type, what).ok()) {
        return absl::AlreadyExistsError(
            absl::StrCat("another process listens on ", what, " ", address));
      }
      ::unlink(address.c_str());  // Left by a server that was killed.
    }
  }
  ASSIGN_OR_RETURN(UniqueFd fd, NewSocket(type, what));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const int error = errno;
    if (error == EADDRINUSE) {
      return absl::AlreadyExistsError(absl::StrCat(what, " ", address, " is in use"));
    }
    return ErrnoStatus(error, absl::StrCat("cannot bind ", what, " ", address));
  }
  if (::listen(fd.get(), 64) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot listen on ", what, " ", address));
  }
  return fd;
}

absl::StatusOr<UniqueFd> ConnectUnixSocket(const std::string& address, int type,
                                           absl::string_view what) {
  sockaddr_un addr;
  socklen_t len;
  RETURN_IF_ERROR(SocketAddress(address, what, &addr, &len));
  ASSIGN_OR_RETURN(UniqueFd fd, NewSocket(type, what));
  int r;
  do {
    r = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len);
  } while (r != 0 && errno == EINTR);
  if (r != 0) return ErrnoStatus(errno, absl::StrCat("cannot connect to ", what, " ", address));
  return fd;
}

absl::StatusOr<UniqueFd> NewEventFd() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, "cannot create an eventfd");
  return fd;
}

void WakeEventFd(int fd, absl::string_view what) {
  const uint64_t one = 1;
  if (::write(fd, &one, sizeof(one)) != sizeof(one)) {
    LOG(ERROR) << what << ": cannot wake a thread: " << std::strerror(errno);
  }
}

}  // namespace overseer

#include "checkpoint_store/local_read.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "checkpoint_store/bundle.h"
#include "checkpoint_store/direct_read.h"
#include "core/io/file_system.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// How much of a local read is prefetched before its first tensor is read.
constexpr uint64_t kUpfrontPrefetchBytes = uint64_t{1} << 30;

// A redeemed descriptor as a RandomAccessFile (for ReadVerifiedTensor); not owning.
class DescriptorFile : public RandomAccessFile {
 public:
  DescriptorFile(int fd, const std::string* path) : fd_(fd), path_(path) {}
  absl::StatusOr<absl::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return absl::DataLossError(
            absl::StrCat("cannot read data file ", *path_, ": ", std::strerror(errno)));
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return absl::string_view(scratch, done);
  }
  void Prefetch(uint64_t offset, size_t n) const override {
    ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_WILLNEED);
  }

 private:
  const int fd_;
  const std::string* const path_;
};

}  // namespace

absl::StatusOr<UniqueFd> ListenLocalReadSocket(const std::string& address) {
  return ListenUnixSocket(address, SOCK_SEQPACKET, "local read socket");
}

absl::StatusOr<UniqueFd> ConnectLocalReadSocket(const std::string& address) {
  return ConnectUnixSocket(address, SOCK_SEQPACKET, "local read socket");
}

absl::Status SendLocalReadPacket(int socket, absl::string_view text, absl::Span<const int> fds) {
  if (fds.size() > static_cast<size_t>(kMaxFdsPerPacket)) {
    return absl::InvalidArgumentError("too many descriptors for one packet");
  }
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerPacket)];
  if (!fds.empty()) {
    const size_t bytes = sizeof(int) * fds.size();
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(bytes);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(bytes);
    std::memcpy(CMSG_DATA(cmsg), fds.data(), bytes);
  }
  ssize_t r;
  do {
    r = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return ErrnoStatus(errno, "cannot send on the local read socket");
  return absl::OkStatus();
}

absl::Status ReceiveLocalReadPacket(int socket, std::string* text, std::vector<UniqueFd>* fds) {
  char buffer[4096];
  iovec iov{buffer, sizeof(buffer)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerPacket)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t r;
  do {
    r = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return ErrnoStatus(errno, "cannot receive on the local read socket");
  // Descriptors that arrived are owned (and closed on error) before anything is checked.
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
      fds->emplace_back(fd);
    }
  }
  if (r == 0) return absl::UnavailableError("the local read socket was closed");
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    return absl::DataLossError("a local read packet or its descriptors were truncated");
  }
  text->assign(buffer, static_cast<size_t>(r));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<UniqueFd>> RedeemLocalReadToken(const std::string& address,
                                                           const std::string& token,
                                                           absl::Duration timeout) {
  ASSIGN_OR_RETURN(UniqueFd socket, ConnectLocalReadSocket(address));
  SetSocketTimeout(socket.get(), timeout);
  RETURN_IF_ERROR(SendLocalReadPacket(socket.get(), token, {}));
  std::vector<UniqueFd> fds;
  std::string text;
  RETURN_IF_ERROR(ReceiveLocalReadPacket(socket.get(), &text, &fds));
  if (absl::StartsWith(text, "ERR ")) {
    return absl::PermissionDeniedError(
        absl::StrCat("local read socket ", address, " refused the token: ", text.substr(4)));
  }
  int total;
  if (!absl::StartsWith(text, "OK ") || !absl::SimpleAtoi(text.substr(3), &total) || total < 0) {
    return absl::DataLossError(absl::StrCat("malformed answer from local read socket ", address));
  }
  while (static_cast<int>(fds.size()) < total) {
    const size_t before = fds.size();
    RETURN_IF_ERROR(ReceiveLocalReadPacket(socket.get(), &text, &fds));
    if (text != "+" || fds.size() == before) {
      return absl::DataLossError(absl::StrCat("malformed answer from local read socket ", address));
    }
  }
  if (static_cast<int>(fds.size()) != total) {
    return absl::DataLossError(absl::StrCat("local read socket ", address, " sent ", fds.size(),
                                            " descriptors instead of ", total));
  }
  return fds;
}

absl::Status ReadTensorsLocally(const std::string& checkpoint, const OpenLocalReadResponse& grant,
                                const std::vector<UniqueFd>& files, TensorReceiver* receiver,
                                bool* allocated) {
  *allocated = false;
  if (static_cast<size_t>(grant.files_size()) != files.size()) {
    return absl::DataLossError(absl::StrCat("local read of checkpoint ", checkpoint, " got ",
                                            files.size(), " descriptors for ", grant.files_size(),
                                            " files"));
  }
  for (const LocalReadTensor& t : grant.tensors()) {
    const absl::Status header = ValidateTensorHeader(t.tensor());
    if (!header.ok() || t.file() < 0 || t.file() >= grant.files_size() || t.offset() < 0) {
      return absl::DataLossError(absl::StrCat("local read of checkpoint ", checkpoint,
                                              " has a bad entry for tensor ", t.tensor().name()));
    }
  }
  // Large tensors not in the page cache are read with O_DIRECT (direct_read.h). The
  // first kUpfrontPrefetchBytes of the others are asked for from the disk up front, so
  // the kernel reads them in the background while the first tensors are copied and
  // checked (ReadVerifiedTensor then keeps 32 MiB ahead within each tensor).
  std::vector<bool> direct;
  direct.reserve(static_cast<size_t>(grant.tensors_size()));
  uint64_t asked = 0;
  for (const LocalReadTensor& t : grant.tensors()) {
    const int fd = files[static_cast<size_t>(t.file())].get();
    const auto offset = static_cast<uint64_t>(t.offset());
    const auto size = static_cast<uint64_t>(t.tensor().size());
    direct.push_back(ShouldReadDirect(fd, offset, size));
    if (direct.back() || asked >= kUpfrontPrefetchBytes) continue;
    const uint64_t n = std::min(size, kUpfrontPrefetchBytes - asked);
    ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_WILLNEED);
    asked += n;
  }
  for (int i = 0; i < grant.tensors_size(); ++i) {
    const LocalReadTensor& t = grant.tensors(i);
    *allocated = true;
    ASSIGN_OR_RETURN(char* dst, receiver->Allocate(t.tensor()));
    const std::string& path = grant.files(t.file());
    const int fd = files[static_cast<size_t>(t.file())].get();
    const auto offset = static_cast<uint64_t>(t.offset());
    const auto size = static_cast<uint64_t>(t.tensor().size());
    absl::Status read = absl::FailedPreconditionError("not read directly");
    if (direct[static_cast<size_t>(i)]) {
      read = ReadVerifiedTensorDirect(fd, path, t.tensor().name(), offset, size, t.crc32c(), dst);
    }
    if (absl::IsFailedPrecondition(read)) {
      read = ReadVerifiedTensor(DescriptorFile(fd, &path), path, t.tensor().name(), offset, size,
                                t.crc32c(), dst);
    }
    RETURN_IF_ERROR(read);
    RETURN_IF_ERROR(receiver->Received(t.tensor()));
  }
  return absl::OkStatus();
}

}  // namespace overseer

// Fuzzes the local call socket's framing (local_calls.h) from both ends, over real
// sockets: whatever a peer writes, a LocalCallServer and a LocalCallChannel end each
// call with a reply or a status, never crash, hang or leave the other connections
// unserved. The first byte of the input says which end the rest goes to:
//   mode 0: the bytes go verbatim to a fresh connection to a server (the caller's end
//     is then closed for writing); what the server writes back must be whole frames
//     of kinds it may send (a reply, a pong), the last one possibly cut short by the
//     connection's end, and afterwards the server still answers a good call on a
//     connection of its own, and every call the server took on the connection is
//     released (answered or cancelled, and freed) soon after it ended;
//   mode 1: a channel makes one call (id 1) to a fake server, which answers it with
//     the bytes and closes: the call's `done` must run exactly once;
//   mode 2: as mode 0, for frames larger than a connection's read buffer: the next 24
//     bytes are a frame header whose length is taken modulo 1.0625 MiB (the server's
//     limit is 1 MiB), and its body is the rest of the input repeated to that length.
// The server's handler echoes method 1, fails method 2, answers method 3 only when the
// call is cancelled (the caller's cancel frame, or its connection's end) and leaves any
// other method UNIMPLEMENTED.

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/io/unix_socket.h"
#include "core/logging.h"
#include "worker/rpc/local_calls.h"

namespace overseer {
namespace {

constexpr size_t kMaxBody = size_t{1} << 20;
// Longer than any input takes: a wait that reaches it is a hang, reported as a crash.
constexpr absl::Duration kPatience = absl::Seconds(20);

LocalCallOptions Options() {
  LocalCallOptions options;
  options.max_body_bytes = kMaxBody;
  options.socket_buffer_bytes = 256 << 10;
  return options;
}

// The calls of method 3 the server handed to Handle, watched until it frees them.
ABSL_CONST_INIT absl::Mutex watched_mu(absl::kConstInit);
std::vector<std::weak_ptr<LocalCall>>* const watched ABSL_PT_GUARDED_BY(watched_mu) =
    new std::vector<std::weak_ptr<LocalCall>>;

void Handle(std::shared_ptr<LocalCall> call) {
  switch (call->method()) {
    case 1:
      call->Reply(absl::OkStatus(), call->request());
      return;
    case 2:
      call->Reply(absl::InvalidArgumentError("method 2 fails"));
      return;
    case 3: {
      {
        absl::MutexLock lock(&watched_mu);
        watched->push_back(call);
      }
      // The callback runs inside the call's own StartCancel, while the call lives.
      LocalCall* raw = call.get();
      const CancellationManager::Token token = call->cancellation()->RegisterCallback(
          [raw] { raw->Reply(absl::CancelledError("method 3 was cancelled")); });
      if (token == CancellationManager::kInvalidToken) {
        call->Reply(absl::CancelledError("method 3 was cancelled"));
      }
      return;
    }
    default:
      call->Reply(absl::UnimplementedError("no such method"));
  }
}

struct Server {
  std::unique_ptr<LocalCallServer> server;
  std::unique_ptr<LocalCallChannel> good;  // A well-behaved caller's connection.
};

Server& TheServer() {
  static Server* s = [] {
    auto* s = new Server;
    absl::StatusOr<std::unique_ptr<LocalCallServer>> server =
        LocalCallServer::Start(UniqueAbstractAddress("overseer-fuzz-calls"), Handle, Options());
    CHECK(server.ok()) << "cannot start the server";
    s->server = std::move(*server);
    absl::StatusOr<std::unique_ptr<LocalCallChannel>> good =
        LocalCallChannel::Connect(s->server->address(), Options());
    CHECK(good.ok()) << "cannot connect to the server";
    s->good = std::move(*good);
    // At exit the server stops and joins its connections' threads (the last input's
    // connection is otherwise only joined when the next one comes).
    std::atexit([] {
      TheServer().good.reset();
      TheServer().server.reset();
    });
    return s;
  }();
  return *s;
}

// Calls `method` with `request` on `channel` and waits for its end.
absl::StatusOr<std::string> CallAndWait(LocalCallChannel& channel, uint16_t method,
                                        std::string request) {
  absl::Notification ended;
  absl::StatusOr<std::string> result;
  std::atomic<int> runs{0};
  channel.Call(method, std::move(request), absl::Now() + kPatience, nullptr,
               [&](absl::StatusOr<std::string> r) {
                 result = std::move(r);
                 runs.fetch_add(1);
                 ended.Notify();
               });
  CHECK(ended.WaitForNotificationWithTimeout(kPatience + absl::Seconds(5))) << "a call never ended";
  CHECK(runs.load() == 1) << "a call's done ran more than once";
  return result;
}

void SendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t w = ::send(fd, data, size, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // The server closed the connection: the rest goes nowhere.
    data += w;
    size -= static_cast<size_t>(w);
  }
}

// What the server wrote: frames of the kinds it sends, each whole but the last.
void CheckServerOutput(const std::string& out) {
  size_t at = 0;
  while (at <= out.size() && out.size() - at >= kLocalCallHeaderBytes) {
    uint32_t magic;
    uint32_t length;
    std::memcpy(&magic, out.data() + at, 4);
    std::memcpy(&length, out.data() + at + 20, 4);
    const uint8_t kind = static_cast<uint8_t>(out[at + 4]);
    CHECK(magic == kLocalCallMagic) << "the server wrote a frame with another magic";
    CHECK(kind == 3 || kind == 5) << "the server wrote a frame of a kind it must not send";
    at += kLocalCallHeaderBytes + length;
  }
}

// Writes `bytes` to a new connection to the server, ends it for writing, reads what
// comes back until the server closes it, and checks the server still serves.
void ToServer(const std::string& bytes) {
  Server& s = TheServer();
  absl::StatusOr<UniqueFd> fd = ConnectUnixSocket(s.server->address(), SOCK_STREAM, "fuzz");
  CHECK(fd.ok()) << "cannot connect to the server";
  SetSocketTimeout(fd->get(), kPatience);
  SendAll(fd->get(), bytes.data(), bytes.size());
  ::shutdown(fd->get(), SHUT_WR);
  std::string out;
  char buffer[64 << 10];
  for (;;) {
    const ssize_t r = ::recv(fd->get(), buffer, sizeof(buffer), 0);
    if (r < 0 && errno == EINTR) continue;
    CHECK(!(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)))
        << "the server kept the connection open after its caller's end";
    if (r <= 0) break;
    out.append(buffer, static_cast<size_t>(r));
  }
  CheckServerOutput(out);
  // The server shuts the socket down first and then cancels the calls still waiting on
  // the connection: each must be freed, not kept by a long-lived server. Waiting for
  // that also ends the input with no server thread still holding them, so that
  // libFuzzer's leak check after each input sees only what stayed behind.
  const absl::Time patience = absl::Now() + kPatience;
  for (;;) {
    {
      absl::MutexLock lock(&watched_mu);
      watched->erase(std::remove_if(watched->begin(), watched->end(),
                                    [](const std::weak_ptr<LocalCall>& c) { return c.expired(); }),
                     watched->end());
      if (watched->empty()) break;
    }
    CHECK(absl::Now() < patience) << "a call outlived its connection";
    absl::SleepFor(absl::Milliseconds(1));
  }
  absl::StatusOr<std::string> echoed = CallAndWait(*s.good, 1, "still there?");
  CHECK(echoed.ok() && *echoed == "still there?") << "the server stopped serving good calls";
}

// A channel calls a fake server, which answers with `bytes` and closes.
void ToChannel(const std::string& bytes) {
  static const std::string* address = new std::string(UniqueAbstractAddress("overseer-fuzz-fake"));
  static const int listener = [] {
    absl::StatusOr<UniqueFd> fd = ListenUnixSocket(*address, SOCK_STREAM, "fuzz fake server");
    CHECK(fd.ok()) << "cannot listen";
    return fd->release();
  }();
  absl::StatusOr<std::unique_ptr<LocalCallChannel>> channel =
      LocalCallChannel::Connect(*address, Options());
  CHECK(channel.ok()) << "cannot connect to the fake server";
  UniqueFd peer(::accept(listener, nullptr, nullptr));
  CHECK(peer.valid()) << "cannot accept";
  SetSocketTimeout(peer.get(), kPatience);
  absl::Notification ended;
  std::atomic<int> runs{0};
  constexpr absl::string_view kRequest = "request";
  (*channel)->Call(1, std::string(kRequest), absl::Now() + kPatience, nullptr,
                   [&](absl::StatusOr<std::string>) {
                     runs.fetch_add(1);
                     ended.Notify();
                   });
  std::string call(kLocalCallHeaderBytes + kRequest.size(), '\0');
  CHECK(::recv(peer.get(), call.data(), call.size(), MSG_WAITALL) ==
        static_cast<ssize_t>(call.size()))
      << "the channel's call did not come whole";
  SendAll(peer.get(), bytes.data(), bytes.size());
  peer = UniqueFd();
  CHECK(ended.WaitForNotificationWithTimeout(kPatience + absl::Seconds(5)))
      << "the channel's call never ended";
  channel->reset();
  CHECK(runs.load() == 1) << "the channel's call ended more than once";
}

}  // namespace
}  // namespace overseer

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      overseer::ToServer(rest);
      break;
    case 1:
      overseer::ToChannel(rest);
      break;
    default: {
      if (rest.size() < overseer::kLocalCallHeaderBytes) return 0;
      std::string frame = rest.substr(0, overseer::kLocalCallHeaderBytes);
      uint32_t length;
      std::memcpy(&length, frame.data() + 20, 4);
      length %= static_cast<uint32_t>(overseer::kMaxBody + (overseer::kMaxBody >> 4));
      std::memcpy(frame.data() + 20, &length, 4);
      const std::string pattern = rest.substr(overseer::kLocalCallHeaderBytes);
      if (pattern.empty()) {
        frame.append(length, '\0');
      } else {
        while (frame.size() < overseer::kLocalCallHeaderBytes + length) {
          frame.append(pattern, 0, overseer::kLocalCallHeaderBytes + length - frame.size());
        }
      }
      overseer::ToServer(frame);
    }
  }
  return 0;
}

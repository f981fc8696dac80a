#include "worker/rpc/local_calls.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace overseer {
namespace local_calls_internal {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the frame header is little-endian");

constexpr char kWhat[] = "local call socket";
// What one read of a connection takes at most: a frame that fits, and the frames after
// it, come in one recv.
constexpr size_t kReadBufferBytes = 64 << 10;

enum Kind : uint8_t { kCall = 1, kCancel = 2, kReply = 3, kPing = 4, kPong = 5 };

// The frame header, as on the wire (memcpy'd: the host is little-endian).
struct Header {
  uint32_t magic = kLocalCallMagic;
  uint8_t kind = 0;
  uint8_t zero = 0;
  uint16_t method = 0;
  uint64_t id = 0;
  uint32_t code = 0;
  uint32_t length = 0;
};
static_assert(sizeof(Header) == kLocalCallHeaderBytes, "the header has no padding");

void SetBuffers(int fd, int bytes) {
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

}  // namespace

// One end of a connection: its thread reads the frames and writes what Send could not
// write at once.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(UniqueFd fd, UniqueFd wake, std::string what, size_t max_body_bytes)
      : what_(std::move(what)),
        max_body_bytes_(max_body_bytes),
        fd_(std::move(fd)),
        wake_(std::move(wake)) {}
  virtual ~Connection() = default;

  // Starts the thread, which holds the connection until it ends.
  void Start() {
    thread_ = std::thread([self = shared_from_this()] { self->Run(); });
  }

  // Queues a frame and writes what it can now without blocking. False if the
  // connection is closed.
  bool Send(Kind kind, uint16_t method, uint64_t id, uint32_t code, std::string body) {
    Out out;
    out.header.kind = kind;
    out.header.method = method;
    out.header.id = id;
    out.header.code = code;
    out.header.length = static_cast<uint32_t>(body.size());
    out.body = std::move(body);
    absl::MutexLock lock(&out_mu_);
    if (closing_) return false;
    const bool idle = out_.empty();
    out_.push_back(std::move(out));
    if (!idle) return true;  // The thread writes it after the frames before it.
    absl::Status written = FlushLocked();
    if (!written.ok()) {
      closing_ = true;
      close_reason_ = std::move(written);
      WakeEventFd(wake_.get(), kWhat);
    } else if (!out_.empty()) {
      WakeEventFd(wake_.get(), kWhat);  // The thread waits until the socket takes the rest.
    }
    return true;
  }

  // Ends the connection with `reason` (its thread then runs OnClosed(reason) and exits).
  // Any thread; the first reason counts.
  void Close(absl::Status reason) {
    absl::MutexLock lock(&out_mu_);
    if (closing_) return;
    closing_ = true;
    close_reason_ = std::move(reason);
    WakeEventFd(wake_.get(), kWhat);
  }

  bool closed() const {
    absl::MutexLock lock(&out_mu_);
    return closing_;
  }
  absl::Status close_reason() const {
    absl::MutexLock lock(&out_mu_);
    return close_reason_;
  }
  bool malformed() const { return malformed_.load(); }

  // Waits for the thread to end, unless this is the thread (then it ends on its own).
  void Join() {
    if (!thread_.joinable()) return;
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

 protected:
  // A whole frame came: on the thread. An error closes the connection, as a frame that
  // breaks the protocol.
  virtual absl::Status OnFrame(const Header& header, std::string body) = 0;
  // Before each wait: ends what is due and says when to look next.
  virtual absl::Time OnTick() { return absl::InfiniteFuture(); }
  // The connection ended: on the thread, once, last.
  virtual void OnClosed(const absl::Status& reason) = 0;

  void Wake() { WakeEventFd(wake_.get(), kWhat); }

  const std::string what_;
  const size_t max_body_bytes_;

 private:
  struct Out {
    Header header;
    std::string body;
    size_t sent = 0;  // Of header and body.
  };

  void Run() {
    absl::Status reason;
    for (;;) {
      const absl::Time next = OnTick();
      bool want_out = false;
      {
        absl::MutexLock lock(&out_mu_);
        if (closing_) break;
        want_out = !out_.empty();
      }
      pollfd fds[2] = {{fd_.get(), static_cast<short>(POLLIN | (want_out ? POLLOUT : 0)), 0},
                       {wake_.get(), POLLIN, 0}};
      if (::poll(fds, 2, PollTimeoutMs(next)) < 0) {
        if (errno == EINTR) continue;
        reason = ErrnoStatus(errno, absl::StrCat(what_, ": poll"));
        break;
      }
      if ((fds[1].revents & POLLIN) != 0) {
        uint64_t count = 0;
        if (::read(wake_.get(), &count, sizeof(count)) < 0 && errno != EAGAIN) {
          reason = ErrnoStatus(errno, absl::StrCat(what_, ": cannot read its eventfd"));
          break;
        }
      }
      if ((fds[0].revents & POLLOUT) != 0) {
        absl::MutexLock lock(&out_mu_);
        reason = FlushLocked();
        if (!reason.ok()) break;
      }
      if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        reason = ReadFrames();
        if (!reason.ok()) break;
      }
    }
    {
      absl::MutexLock lock(&out_mu_);
      if (!closing_) {
        closing_ = true;
        close_reason_ = reason;
      }
      reason = close_reason_;
      out_.clear();
    }
    ::shutdown(fd_.get(), SHUT_RDWR);  // The peer sees the end now.
    OnClosed(reason);
  }

  // Writes queued frames until the socket takes no more. OK unless the socket failed.
  absl::Status FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(out_mu_) {
    while (!out_.empty()) {
      Out& out = out_.front();
      iovec iov[2];
      int n = 0;
      if (out.sent < sizeof(Header)) {
        iov[n++] = {reinterpret_cast<char*>(&out.header) + out.sent, sizeof(Header) - out.sent};
      }
      const size_t body_sent = out.sent > sizeof(Header) ? out.sent - sizeof(Header) : 0;
      if (body_sent < out.body.size()) {
        iov[n++] = {out.body.data() + body_sent, out.body.size() - body_sent};
      }
      msghdr message = {};
      message.msg_iov = iov;
      message.msg_iovlen = n;
      const ssize_t w = ::sendmsg(fd_.get(), &message, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return absl::OkStatus();
      if (w < 0) return ErrnoStatus(errno, absl::StrCat("cannot send on the ", what_));
      out.sent += static_cast<size_t>(w);
      if (out.sent == sizeof(Header) + out.body.size()) out_.pop_front();
    }
    return absl::OkStatus();
  }

  // Reads what came and hands over each whole frame, until the socket had no more. A
  // read takes as much as the buffer holds, so that a frame costs one recv (not one for
  // its header and one for its body) and the reads end without one that finds nothing
  // (poll says when more comes). OK unless the connection ended (the peer closed it, or
  // broke the protocol).
  absl::Status ReadFrames() {
    bool drained = false;  // The last read took less than it had room for.
    for (;;) {
      if (large_) {  // A body larger than the buffer goes straight into its string.
        const size_t want = in_body_.size() - body_got_;
        const ssize_t r = Receive(in_body_.data() + body_got_, want);
        if (r < 0) return ReceiveStatus(r);
        body_got_ += static_cast<size_t>(r);
        if (body_got_ < in_body_.size()) {
          if (static_cast<size_t>(r) < want) return absl::OkStatus();
          continue;
        }
        large_ = false;
        std::string body = std::move(in_body_);
        in_body_ = std::string();
        RETURN_IF_ERROR(Deliver(in_header_, std::move(body)));
        continue;
      }
      RETURN_IF_ERROR(TakeFrames());
      if (large_) continue;
      if (drained) return absl::OkStatus();
      if (in_start_ > 0) {  // A partial frame moves to the front.
        std::memmove(in_buffer_.get(), in_buffer_.get() + in_start_, in_end_ - in_start_);
        in_end_ -= in_start_;
        in_start_ = 0;
      }
      const size_t room = kReadBufferBytes - in_end_;
      const ssize_t r = Receive(in_buffer_.get() + in_end_, room);
      if (r < 0) return ReceiveStatus(r);
      in_end_ += static_cast<size_t>(r);
      drained = static_cast<size_t>(r) < room;
    }
  }

  // recv without waiting: the bytes read (more than 0), or -1 with nothing to read now,
  // -2 at the peer's end, -3 on an error (errno).
  ssize_t Receive(char* to, size_t want) {
    for (;;) {
      const ssize_t r = ::recv(fd_.get(), to, want, MSG_DONTWAIT);
      if (r > 0) return r;
      if (r == 0) return -2;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -3;
    }
  }
  absl::Status ReceiveStatus(ssize_t r) const {
    if (r == -1) return absl::OkStatus();
    if (r == -2) return absl::UnavailableError(absl::StrCat("the ", what_, " was closed"));
    return ErrnoStatus(errno, absl::StrCat("cannot read from the ", what_));
  }

  // Hands over the whole frames in the buffer. A frame whose body does not fit in it
  // switches to reading that body straight into its string (large_).
  absl::Status TakeFrames() {
    while (in_end_ - in_start_ >= sizeof(Header)) {
      Header header;
      std::memcpy(&header, in_buffer_.get() + in_start_, sizeof(Header));
      if (absl::Status valid = CheckHeader(header); !valid.ok()) {
        malformed_ = true;
        return valid;
      }
      const char* body = in_buffer_.get() + in_start_ + sizeof(Header);
      const size_t have = in_end_ - in_start_ - sizeof(Header);
      if (have >= header.length) {
        in_start_ += sizeof(Header) + header.length;
        RETURN_IF_ERROR(Deliver(header, std::string(body, header.length)));
        continue;
      }
      if (sizeof(Header) + header.length > kReadBufferBytes) {
        in_header_ = header;
        in_body_.resize(header.length);
        std::memcpy(in_body_.data(), body, have);
        body_got_ = have;
        in_start_ = in_end_ = 0;
        large_ = true;
      }
      break;
    }
    if (in_start_ == in_end_) in_start_ = in_end_ = 0;
    return absl::OkStatus();
  }

  absl::Status Deliver(const Header& header, std::string body) {
    absl::Status handled = OnFrame(header, std::move(body));
    if (!handled.ok()) malformed_ = true;
    return handled;
  }

  absl::Status CheckHeader(const Header& header) const {
    std::string wrong;
    if (header.magic != kLocalCallMagic) {
      wrong = absl::StrCat("magic ", header.magic);
    } else if (header.kind < kCall || header.kind > kPong || header.zero != 0) {
      wrong = absl::StrCat("kind ", header.kind, ".", header.zero);
    } else if (header.length > max_body_bytes_) {
      wrong =
          absl::StrCat("a body of ", header.length, " bytes, over the limit of ", max_body_bytes_);
    }
    if (wrong.empty()) return absl::OkStatus();
    return absl::UnavailableError(
        absl::StrCat("the peer on the ", what_, " sent a malformed frame (", wrong, ")"));
  }

  const UniqueFd fd_;
  const UniqueFd wake_;  // An eventfd: Send and Close wake the thread.
  mutable absl::Mutex out_mu_;
  std::deque<Out> out_ ABSL_GUARDED_BY(out_mu_);
  bool closing_ ABSL_GUARDED_BY(out_mu_) = false;
  absl::Status close_reason_ ABSL_GUARDED_BY(out_mu_);
  std::atomic<bool> malformed_{false};
  // What was read and not handed over yet, [in_start_, in_end_) (the thread's only)...
  const std::unique_ptr<char[]> in_buffer_{new char[kReadBufferBytes]};
  size_t in_start_ = 0;
  size_t in_end_ = 0;
  // ...and a body too large for it, being read into its string.
  bool large_ = false;
  Header in_header_;
  std::string in_body_;
  size_t body_got_ = 0;
  std::thread thread_;
};

// The server's end of a connection.
class ServerConnection final : public Connection {
 public:
  ServerConnection(UniqueFd fd, UniqueFd wake, std::string what, size_t max_body_bytes,
                   LocalCallServer::Handler handler)
      : Connection(std::move(fd), std::move(wake), std::move(what), max_body_bytes),
        handler_(std::move(handler)) {}

  // LocalCall::Reply.
  void Reply(uint64_t id, const absl::Status& status, std::string response) {
    {
      absl::MutexLock lock(&calls_mu_);
      if (calls_.erase(id) == 0) return;  // The connection closed.
    }
    if (status.ok() && response.size() > max_body_bytes_) {
      Send(kReply, 0, id, static_cast<uint32_t>(absl::StatusCode::kResourceExhausted),
           absl::StrCat("the reply of ", response.size(), " bytes is over the ", what_,
                        "'s limit of ", max_body_bytes_));
      return;
    }
    Send(kReply, 0, id, static_cast<uint32_t>(status.code()),
         status.ok() ? std::move(response) : std::string(status.message()));
  }

 private:
  absl::Status OnFrame(const Header& header, std::string body) override {
    if (header.kind == kPing) {
      Send(kPong, 0, header.id, 0, std::string());
      return absl::OkStatus();
    }
    if (header.kind == kCancel) {
      std::shared_ptr<LocalCall> call;
      {
        absl::MutexLock lock(&calls_mu_);
        auto it = calls_.find(header.id);
        if (it != calls_.end()) call = it->second;
      }
      // A call already answered: nothing to cancel.
      if (call != nullptr) {
        call->cancellation()->StartCancel(absl::CancelledError("the caller gave up on the call"));
      }
      return absl::OkStatus();
    }
    if (header.kind != kCall) {
      return absl::UnavailableError(
          absl::StrCat("the peer on the ", what_, " sent a reply or pong to the server"));
    }
    std::shared_ptr<LocalCall> call(
        new LocalCall(std::static_pointer_cast<ServerConnection>(shared_from_this()), header.id,
                      header.method, std::move(body)));
    {
      absl::MutexLock lock(&calls_mu_);
      if (!calls_.emplace(header.id, call).second) {
        return absl::UnavailableError(
            absl::StrCat("the peer on the ", what_, " reused call id ", header.id));
      }
    }
    handler_(std::move(call));
    return absl::OkStatus();
  }

  void OnClosed(const absl::Status& reason) override {
    std::map<uint64_t, std::shared_ptr<LocalCall>> calls;
    {
      absl::MutexLock lock(&calls_mu_);
      calls.swap(calls_);
    }
    for (auto& [id, call] : calls) {
      call->cancellation()->StartCancel(
          absl::CancelledError(absl::StrCat("the caller's connection ended: ", reason.message())));
    }
  }

  const LocalCallServer::Handler handler_;
  absl::Mutex calls_mu_;
  // Calls not yet answered.
  std::map<uint64_t, std::shared_ptr<LocalCall>> calls_ ABSL_GUARDED_BY(calls_mu_);
};

// The client's end of a connection.
class ChannelState final : public Connection {
 public:
  ChannelState(UniqueFd fd, UniqueFd wake, std::string what, LocalCallOptions options)
      : Connection(std::move(fd), std::move(wake), std::move(what), options.max_body_bytes),
        keepalive_(options.keepalive) {}

  void Call(uint16_t method, std::string request, absl::Time deadline,
            CancellationManager* cancellation, LocalCallChannel::Done done) {
    if (request.size() > max_body_bytes_) {
      done(absl::ResourceExhaustedError(absl::StrCat("a call of ", request.size(),
                                                     " bytes is over the ", what_, "'s limit of ",
                                                     max_body_bytes_)));
      return;
    }
    uint64_t id = 0;
    bool wake = false;
    bool open = true;
    {
      absl::MutexLock lock(&mu_);
      open = !closed();
      if (open) {
        id = next_id_++;
        pending_[id] = Pending{std::move(done), deadline, cancellation};
        first_deadline_ = std::min(first_deadline_, deadline);
        // When the thread must look next for this call: its deadline, or the keepalive's
        // first ping.
        absl::Time look = deadline;
        if (keepalive_ > absl::ZeroDuration()) look = std::min(look, absl::Now() + keepalive_);
        if (look < next_deadline_) {
          next_deadline_ = look;
          wake = true;  // Sooner than it meant to.
        }
      }
    }
    if (!open) {
      done(ClosedStatus());
      return;
    }
    if (cancellation != nullptr) {
      std::weak_ptr<Connection> weak = weak_from_this();
      // It runs inside cancellation->StartCancel, whose reason is set by then.
      const CancellationManager::Token token =
          cancellation->RegisterCallback([weak, id, cancellation] {
            if (auto self = weak.lock()) {
              static_cast<ChannelState*>(self.get())->GiveUp(id, cancellation->status());
            }
          });
      if (token == CancellationManager::kInvalidToken) {
        End(id, cancellation->status());
        return;
      }
      bool ended = false;
      {
        absl::MutexLock lock(&mu_);
        auto it = pending_.find(id);
        ended = it == pending_.end();
        if (!ended) it->second.token = token;
      }
      if (ended) {  // Cancelled meanwhile: not sent.
        cancellation->DeregisterCallback(token);
        return;
      }
    }
    if (!Send(kCall, method, id, 0, std::move(request))) {
      End(id, ClosedStatus());
      return;
    }
    if (wake) Wake();
  }

  int in_flight() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(pending_.size());
  }
  int64_t pongs() const { return pongs_.load(); }

 private:
  struct Pending {
    LocalCallChannel::Done done;
    absl::Time deadline;
    CancellationManager* cancellation = nullptr;
    CancellationManager::Token token = CancellationManager::kInvalidToken;
  };

  // What a call gets once the connection is closed: UNAVAILABLE naming the socket, or
  // CANCELLED when this end closed it.
  absl::Status ClosedStatus() const {
    absl::Status reason = close_reason();
    if (absl::IsCancelled(reason) || absl::IsUnavailable(reason)) return reason;
    return absl::UnavailableError(absl::StrCat(what_, ": ", reason.message()));
  }

  // Ends call `id` with `result`; false if it ended already.
  bool End(uint64_t id, absl::StatusOr<std::string> result) {
    Pending pending;
    {
      absl::MutexLock lock(&mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return false;
      pending = std::move(it->second);
      pending_.erase(it);
    }
    if (pending.token != CancellationManager::kInvalidToken) {
      pending.cancellation->DeregisterCallback(pending.token);
    }
    pending.done(std::move(result));
    return true;
  }

  // The caller gave up on call `id` (cancelled, or past its deadline): it ends with
  // `status`, and the server is told, unless the call had ended already.
  void GiveUp(uint64_t id, absl::Status status) {
    if (End(id, std::move(status))) Send(kCancel, 0, id, 0, std::string());
  }

  absl::Status OnFrame(const Header& header, std::string body) override {
    last_heard_ = absl::Now();
    ping_sent_ = absl::InfinitePast();
    if (header.kind == kPong) {
      pongs_.fetch_add(1);
      return absl::OkStatus();
    }
    if (header.kind != kReply) {
      return absl::UnavailableError(
          absl::StrCat("the peer on the ", what_, " sent a call, cancel or ping to the client"));
    }
    if (header.code > static_cast<uint32_t>(absl::StatusCode::kUnauthenticated)) {
      return absl::UnavailableError(
          absl::StrCat("the peer on the ", what_, " sent status code ", header.code));
    }
    const auto code = static_cast<absl::StatusCode>(header.code);
    // A reply to a call given up on (cancelled, past its deadline) finds no call.
    if (code == absl::StatusCode::kOk) {
      End(header.id, std::move(body));
    } else {
      End(header.id, absl::Status(code, body));
    }
    return absl::OkStatus();
  }

  absl::Time OnTick() override {
    std::vector<uint64_t> late;
    absl::Time next = absl::InfiniteFuture();
    bool ping = false;
    const absl::Time now = absl::Now();
    {
      absl::MutexLock lock(&mu_);
      // The calls are looked through only when the first deadline came, not on every
      // frame the thread reads.
      if (now >= first_deadline_) {
        first_deadline_ = absl::InfiniteFuture();
        for (const auto& [id, pending] : pending_) {
          if (pending.deadline <= now) {
            late.push_back(id);
          } else {
            first_deadline_ = std::min(first_deadline_, pending.deadline);
          }
        }
      }
      next = first_deadline_;
      // Keepalive, while calls are in flight: a ping after keepalive_ without a frame
      // from the server; the connection ends if nothing answers it within keepalive_.
      if (keepalive_ > absl::ZeroDuration() && pending_.size() > late.size()) {
        if (ping_sent_ != absl::InfinitePast()) {
          if (now >= ping_sent_ + keepalive_) {
            Close(absl::UnavailableError(absl::StrCat(
                "no answer on the ", what_, " for ", absl::FormatDuration(now - last_heard_),
                " (keepalive ", absl::FormatDuration(keepalive_),
                "): the server is stuck or stopped")));
          }
          next = std::min(next, ping_sent_ + keepalive_);
        } else if (now >= last_heard_ + keepalive_) {
          ping = true;
          ping_sent_ = now;
          next = std::min(next, now + keepalive_);
        } else {
          next = std::min(next, last_heard_ + keepalive_);
        }
      }
      // Even idle, the thread looks again within a tick, so that a call whose deadline
      // and first ping come later needs no wake (an eventfd write and a context switch
      // per call).
      next = std::min(next, now + tick_);
      next_deadline_ = next;
    }
    if (ping) Send(kPing, 0, 0, 0, std::string());
    for (uint64_t id : late) {
      GiveUp(id, absl::DeadlineExceededError(
                     absl::StrCat("no reply on the ", what_, " by the deadline")));
    }
    return next;
  }

  void OnClosed(const absl::Status&) override {
    std::map<uint64_t, Pending> pending;
    {
      absl::MutexLock lock(&mu_);
      pending.swap(pending_);
    }
    const absl::Status status = ClosedStatus();
    for (auto& [id, p] : pending) {
      if (p.token != CancellationManager::kInvalidToken) {
        p.cancellation->DeregisterCallback(p.token);
      }
      p.done(status);
    }
  }

  const absl::Duration keepalive_;
  const absl::Duration tick_ = keepalive_ > absl::ZeroDuration() ? keepalive_ : absl::Seconds(1);
  std::atomic<int64_t> pongs_{0};
  // The keepalive's state (the thread's only): when a frame came last, and when the
  // ping not yet answered went (InfinitePast: none).
  absl::Time last_heard_ = absl::Now();
  absl::Time ping_sent_ = absl::InfinitePast();
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  // No call in flight has an earlier deadline (one that ended may: then the next look
  // through finds a later one).
  absl::Time first_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // When the thread looks next at the latest (a deadline, or the keepalive's).
  absl::Time next_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
};

}  // namespace local_calls_internal

using local_calls_internal::ChannelState;
using local_calls_internal::ServerConnection;

void LocalCall::Reply(const absl::Status& status, std::string response) {
  if (replied_.exchange(true)) return;
  if (std::shared_ptr<ServerConnection> connection = connection_.lock()) {
    connection->Reply(id_, status, std::move(response));
  }
}

std::string LocalCallServer::DefaultAddress() { return UniqueAbstractAddress("overseer-calls"); }

absl::StatusOr<std::unique_ptr<LocalCallServer>> LocalCallServer::Start(const std::string& address,
                                                                        Handler handler,
                                                                        LocalCallOptions options) {
  ASSIGN_OR_RETURN(UniqueFd listener,
                   ListenUnixSocket(address, SOCK_STREAM, local_calls_internal::kWhat));
  ASSIGN_OR_RETURN(UniqueFd wake, NewEventFd());
  return std::unique_ptr<LocalCallServer>(new LocalCallServer(
      address, std::move(listener), std::move(wake), std::move(handler), options));
}

LocalCallServer::LocalCallServer(std::string address, UniqueFd listener, UniqueFd wake,
                                 Handler handler, LocalCallOptions options)
    : address_(std::move(address)),
      listener_(std::move(listener)),
      wake_(std::move(wake)),
      handler_(std::move(handler)),
      options_(options),
      thread_([this] { Accept(); }) {}

LocalCallServer::~LocalCallServer() {
  WakeEventFd(wake_.get(), local_calls_internal::kWhat);
  thread_.join();
  std::vector<std::shared_ptr<ServerConnection>> connections;
  {
    absl::MutexLock lock(&mu_);
    connections.swap(connections_);
  }
  for (const auto& c : connections) c->Close(absl::CancelledError("the server is stopping"));
  for (const auto& c : connections) c->Join();
  if (address_[0] != '@') ::unlink(address_.c_str());
}

int LocalCallServer::connections() const {
  absl::MutexLock lock(&mu_);
  int open = 0;
  for (const auto& c : connections_) open += c->closed() ? 0 : 1;
  return open;
}

int64_t LocalCallServer::malformed() const {
  absl::MutexLock lock(&mu_);
  int64_t count = malformed_closed_;
  for (const auto& c : connections_) count += c->malformed() ? 1 : 0;
  return count;
}

void LocalCallServer::Accept() {
  for (;;) {
    pollfd fds[2] = {{wake_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LOG(ERROR) << local_calls_internal::kWhat << " " << address_
                 << ": poll: " << std::strerror(errno);
      return;
    }
    if ((fds[0].revents & POLLIN) != 0) return;
    if ((fds[1].revents & POLLIN) == 0) continue;
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) continue;  // The caller went away, or too many files: the next one.
    absl::StatusOr<UniqueFd> wake = NewEventFd();
    if (!wake.ok()) {
      LOG(ERROR) << local_calls_internal::kWhat << " " << address_ << ": " << wake.status();
      continue;
    }
    local_calls_internal::SetBuffers(fd.get(), options_.socket_buffer_bytes);
    auto connection = std::make_shared<ServerConnection>(
        std::move(fd), *std::move(wake), absl::StrCat(local_calls_internal::kWhat, " ", address_),
        options_.max_body_bytes, handler_);
    std::vector<std::shared_ptr<ServerConnection>> ended;
    {
      absl::MutexLock lock(&mu_);
      // Connections that ended leave the list (their threads end on their own).
      auto gone = std::stable_partition(connections_.begin(), connections_.end(),
                                        [](const auto& c) { return !c->closed(); });
      ended.assign(gone, connections_.end());
      connections_.erase(gone, connections_.end());
      for (const auto& c : ended) malformed_closed_ += c->malformed() ? 1 : 0;
      connections_.push_back(connection);
    }
    for (const auto& c : ended) c->Join();
    connection->Start();
  }
}

LocalCallChannel::LocalCallChannel(std::shared_ptr<ChannelState> state)
    : state_(std::move(state)) {}

absl::StatusOr<std::unique_ptr<LocalCallChannel>> LocalCallChannel::Connect(
    const std::string& address, LocalCallOptions options) {
  ASSIGN_OR_RETURN(UniqueFd fd,
                   ConnectUnixSocket(address, SOCK_STREAM, local_calls_internal::kWhat));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoStatus(errno, "cannot make the local call socket non-blocking");
  }
  local_calls_internal::SetBuffers(fd.get(), options.socket_buffer_bytes);
  ASSIGN_OR_RETURN(UniqueFd wake, NewEventFd());
  auto state = std::make_shared<ChannelState>(
      std::move(fd), std::move(wake), absl::StrCat(local_calls_internal::kWhat, " ", address),
      options);
  state->Start();
  return std::unique_ptr<LocalCallChannel>(new LocalCallChannel(std::move(state)));
}

LocalCallChannel::~LocalCallChannel() {
  state_->Close(absl::CancelledError("the local call channel was closed"));
  state_->Join();
}

void LocalCallChannel::Call(uint16_t method, std::string request, absl::Time deadline,
                            CancellationManager* cancellation, Done done) {
  state_->Call(method, std::move(request), deadline, cancellation, std::move(done));
}

bool LocalCallChannel::closed() const { return state_->closed(); }

int LocalCallChannel::in_flight() const { return state_->in_flight(); }

int64_t LocalCallChannel::pongs() const { return state_->pongs(); }

}  // namespace overseer

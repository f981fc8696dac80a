#include "bench/multiprocess.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/io/unix_socket.h"
#include "core/logging.h"
#include "core/port_file.h"
#include "core/rpc/raw_message.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/method_handler.h"
#include "grpcpp/support/sync_stream.h"

namespace overseer {
namespace bench {
namespace {

constexpr char kRawServerFlag[] = "--raw_grpc_server";
constexpr char kPortFileFlag[] = "--port_file=";
constexpr char kRelayToFlag[] = "--relay_to=";
constexpr char kStreamMethod[] = "/overseer.bench.BenchPing/Stream";
constexpr int kStreamMethodIndex = 1;  // Its index among BenchPing's methods.
constexpr uint32_t kContentField = 1;  // StreamChunk.content
// Both servers send each chunk out of a buffer of this size, cyclically, as a worker
// sends chunks of a tensor.
constexpr int64_t kSourceBytes = 64 << 20;
// The Unix stream's socket buffers: the worker's local transfer socket asks for these.
constexpr int kUnixBufferBytes = 4 << 20;

// The kSourceBytes bytes the servers send, made on first use, so that a server starts
// as fast as a bare gRPC server (the start-up baseline of recovery_bench). In memory
// placed as a large tensor's (2 MiB aligned, huge pages advised: core/tensor.cc), so
// that the baselines read memory of the kind the workers send from. Thread-safe.
class Source {
 public:
  const std::shared_ptr<const char>& Get() {
    std::call_once(made_, [this] {
      constexpr size_t kHugePage = size_t{2} << 20;
      char* bytes = static_cast<char*>(std::aligned_alloc(kHugePage, kSourceBytes));
      CHECK(bytes != nullptr) << "cannot allocate the source";
      ::madvise(bytes, kSourceBytes, MADV_HUGEPAGE);  // Advice only.
      for (int64_t i = 0; i < kSourceBytes; ++i) bytes[i] = static_cast<char>(i * 131);
      bytes_ = std::shared_ptr<const char>(bytes,
                                           [](const char* p) { std::free(const_cast<char*>(p)); });
    });
    return bytes_;
  }

 private:
  std::once_flag made_;
  std::shared_ptr<const char> bytes_;
};

// The next chunk of a cyclic send of `source`: at `*offset`, at most `chunk_bytes`
// and `left` bytes, never past the end of the source.
int64_t NextChunk(int64_t chunk_bytes, int64_t left, int64_t* offset) {
  if (*offset >= kSourceBytes) *offset = 0;
  return std::min({chunk_bytes, left, kSourceBytes - *offset});
}

class PingService final : public BenchPing::Service {
 public:
  explicit PingService(Source* source) : source_(source) {
    // Stream sends raw messages whose content references the source (no copy).
    MarkMethodStreamed(
        kStreamMethodIndex,
        new grpc::internal::SplitServerStreamingHandler<StreamRequest, grpc::ByteBuffer>(
            [this](grpc::ServerContext* context,
                   grpc::ServerSplitStreamer<StreamRequest, grpc::ByteBuffer>* stream) {
              return StreamRaw(context, stream);
            }));
  }

  grpc::Status Ping(grpc::ServerContext*, const PingRequest*, PingResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status PingOnStream(grpc::ServerContext*,
                            grpc::ServerReaderWriter<PingResponse, PingRequest>* stream) override {
    PingRequest request;
    PingResponse response;
    while (stream->Read(&request)) {
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }

 private:
  grpc::Status StreamRaw(grpc::ServerContext*,
                         grpc::ServerSplitStreamer<StreamRequest, grpc::ByteBuffer>* stream) {
    StreamRequest request;
    if (!stream->Read(&request)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request");
    }
    if (request.chunk_bytes() <= 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad chunk_bytes");
    }
    const std::shared_ptr<const char>& source = source_->Get();
    int64_t offset = 0;
    for (int64_t sent = 0; sent < request.total_bytes();) {
      const int64_t n = NextChunk(request.chunk_bytes(), request.total_bytes() - sent, &offset);
      const absl::string_view data(source.get() + offset, static_cast<size_t>(n));
      if (!stream->Write(MessageWithReferencedBytes(std::string(), kContentField, data, source))) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "gone");
      }
      sent += n;
      offset += n;
    }
    return grpc::Status::OK;
  }

  Source* const source_;
};

bool WriteFully(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// MSG_WAITALL: the kernel fills the whole buffer before returning, copying each segment
// as it arrives, instead of returning to the reader for every segment (on loopback a
// 1 GiB transfer ran at a median of 2.3 GB/s here against 1.9 with plain reads).
bool ReadFully(int fd, char* data, size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, data, n, MSG_WAITALL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Sends each write() at once instead of holding its last partial segment until the
// previous ones are acknowledged (Nagle), as gRPC's sockets do.
void SetNoDelay(int fd) {
  const int on = 1;
  CHECK(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) == 0)
      << "TCP_NODELAY: " << std::strerror(errno);
}

// A listening loopback TCP socket; its port in *port.
int ListenTcp(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK(fd >= 0) << "socket: " << std::strerror(errno);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0)
      << "bind: " << std::strerror(errno);
  CHECK(::listen(fd, 16) == 0) << "listen: " << std::strerror(errno);
  CHECK(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  *port = ntohs(addr.sin_port);
  return fd;
}

// A connection to the loopback TCP port `port`, with TCP_NODELAY.
UniqueFd ConnectTcp(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  CHECK(fd.valid()) << "socket: " << std::strerror(errno);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  CHECK(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0)
      << "connect to port " << port << ": " << std::strerror(errno);
  SetNoDelay(fd.get());
  return fd;
}

// The Unix stream socket of the raw server in process `pid`.
std::string UnixStreamAddress(pid_t pid) { return absl::StrCat("@overseer-bench-raw-", pid); }

// The stream servers: each connection sends {total_bytes, chunk_bytes} (two int64) and
// gets total_bytes, write() by write() of at most chunk_bytes, then the end of stream.
// Over loopback TCP (TCP_NODELAY), or over a Unix stream socket with the socket buffers
// the worker's local transfers ask for (worker/rpc/local_transfer.h).
class StreamServer {
 public:
  // Loopback TCP on a free port.
  explicit StreamServer(Source* source) : source_(source), tcp_(true) {
    listen_fd_ = ListenTcp(&port_);
    acceptor_ = std::thread([this] { Accept(); });
  }
  // A Unix stream socket at `address`.
  StreamServer(Source* source, const std::string& address) : source_(source), tcp_(false) {
    absl::StatusOr<UniqueFd> fd = ListenUnixSocket(address, SOCK_STREAM, "raw Unix stream");
    CHECK(fd.ok()) << fd.status();
    listen_fd_ = fd->release();
    acceptor_ = std::thread([this] { Accept(); });
  }

  ~StreamServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    for (std::thread& t : senders_) t.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }

 private:
  void Accept() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0 && errno == EINTR) continue;
      if (fd < 0 || stopping_) {
        if (fd >= 0) ::close(fd);
        return;
      }
      if (tcp_) {
        SetNoDelay(fd);
      } else {
        ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kUnixBufferBytes, sizeof(kUnixBufferBytes));
      }
      senders_.emplace_back([this, fd] {
        Send(fd);
        ::close(fd);
      });
    }
  }

  // Serves the connection's requests until it closes.
  void Send(int fd) {
    int64_t request[2];
    while (ReadFully(fd, reinterpret_cast<char*>(request), sizeof(request))) {
      const int64_t total = request[0];
      const int64_t chunk = request[1];
      if (chunk <= 0) return;
      const char* source = source_->Get().get();
      int64_t offset = 0;
      for (int64_t sent = 0; sent < total;) {
        const int64_t n = NextChunk(chunk, total - sent, &offset);
        if (!WriteFully(fd, source + offset, static_cast<size_t>(n))) return;
        sent += n;
        offset += n;
      }
    }
  }

  Source* const source_;
  const bool tcp_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::vector<std::thread> senders_;  // Only the acceptor thread adds to it.
};

std::unique_ptr<grpc::Server> StartGrpcServer(PingService* service, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  CHECK(server != nullptr && *port > 0) << "the raw gRPC server cannot listen";
  return server;
}

// Reads protobuf's varint from the byte cursor.
template <typename NextByte>
uint64_t ReadVarint(NextByte next) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const uint8_t b = next();
    value |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) break;
  }
  return value;
}

// The relay child (RawRelay): BenchPing.Ping served asynchronously on one completion
// queue, each call relayed as asynchronous Pings to the targets on the same queue, all
// on the one thread that polls it.
class Relay {
 public:
  // Relays to the raw servers' BenchPing on 127.0.0.1:`target_ports`, over channels
  // without gRPC's retries, as the master's channels to workers.
  explicit Relay(const std::vector<int>& target_ports) {
    for (int port : target_ports) {
      targets_.push_back(std::make_unique<RawClient>(port, /*tcp_port=*/0, /*unix_address=*/"",
                                                     RawChannelOptions{0, true, false}));
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    cq_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    CHECK(server_ != nullptr && port_ > 0) << "the raw relay cannot listen";
  }

  int port() const { return port_; }

  // Serves until the process is killed.
  void Run() {
    Accept();
    void* tag = nullptr;
    bool ok = false;
    while (cq_->Next(&tag, &ok)) static_cast<Tag*>(tag)->Proceed(ok);
  }

 private:
  // What the queue returns: an operation's owner, which goes on from there.
  class Tag {
   public:
    virtual ~Tag() = default;
    virtual void Proceed(bool ok) = 0;
  };

  // One Ping to a target, started by a call.
  class Call;
  class Outgoing final : public Tag {
   public:
    Outgoing(Call* call, RawClient* target, grpc::ServerCompletionQueue* cq) : call_(call) {
      reader_ = target->StartPing(&context_, PingRequest(), cq);
      reader_->Finish(&response_, &status_, this);
    }
    void Proceed(bool) override { call_->Returned(status_); }

   private:
    Call* const call_;
    grpc::ClientContext context_;
    std::unique_ptr<grpc::ClientAsyncResponseReader<PingResponse>> reader_;
    PingResponse response_;
    grpc::Status status_;
  };

  // One relayed call: the request arrives; its fan-out Pings to targets 1..fan_out
  // all return; the Ping to target 0 returns; the reply is sent.
  class Call final : public Tag {
   public:
    explicit Call(Relay* relay) : relay_(relay), responder_(&server_context_) {
      relay_->service_.RequestPing(&server_context_, &request_, &responder_, relay_->cq_.get(),
                                   relay_->cq_.get(), this);
    }

    void Proceed(bool ok) override {
      if (state_ == State::kRequested) {
        if (!ok) {  // Shutting down.
          delete this;
          return;
        }
        new Call(relay_);  // Ask for the next call.
        const int fan_out = request_.fan_out();
        if (fan_out < 0 || fan_out >= static_cast<int>(relay_->targets_.size())) {
          Reply(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "fan_out out of range"));
          return;
        }
        state_ = State::kFannedOut;
        waiting_ = fan_out;
        for (int i = 1; i <= fan_out; ++i) {
          outgoing_.push_back(
              std::make_unique<Outgoing>(this, relay_->targets_[i].get(), relay_->cq_.get()));
        }
        if (fan_out == 0) PingFirst();
        return;
      }
      delete this;  // The reply was sent.
    }

    // An Outgoing Ping returned.
    void Returned(const grpc::Status& status) {
      if (!status.ok()) {
        failed_ = status;
      }
      if (state_ == State::kFannedOut) {
        if (--waiting_ > 0) return;
        if (!failed_.ok()) {
          Reply(failed_);
          return;
        }
        PingFirst();
        return;
      }
      Reply(failed_);  // The first target's Ping.
    }

   private:
    enum class State { kRequested, kFannedOut, kRelayed, kReplied };

    void PingFirst() {
      state_ = State::kRelayed;
      outgoing_.push_back(
          std::make_unique<Outgoing>(this, relay_->targets_[0].get(), relay_->cq_.get()));
    }
    void Reply(const grpc::Status& status) {
      state_ = State::kReplied;
      responder_.Finish(PingResponse(), status, this);
    }

    Relay* const relay_;
    State state_ = State::kRequested;
    grpc::ServerContext server_context_;
    grpc::ServerAsyncResponseWriter<PingResponse> responder_;
    PingRequest request_;
    int waiting_ = 0;  // Fan-out Pings not yet returned.
    grpc::Status failed_;
    std::vector<std::unique_ptr<Outgoing>> outgoing_;
  };

  void Accept() { new Call(this); }

  BenchPing::AsyncService service_;
  std::vector<std::unique_ptr<RawClient>> targets_;  // Of the raw servers relayed to.
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// The relay's raw TCP twin: the same fan-out as Relay's, as fixed-size messages on
// loopback TCP connections kept open (TCP_NODELAY) to the targets' TCP stream servers,
// with no RPC framework: what the fan-out's one-way hops cost in the kernel and in
// wake-ups alone. A client writes fan_out (an int64) and reads it back once targets
// 1..fan_out, and then target 0, each sent kTcpPingBytes back to a 16-byte request.
// One thread, blocking calls: the fan-out's requests go out together, then its replies
// are read, as Relay's single thread does.
class TcpRelay {
 public:
  explicit TcpRelay(const std::vector<int>& target_ports) : target_ports_(target_ports) {
    listen_fd_ = UniqueFd(ListenTcp(&port_));
    thread_ = std::thread([this] { Serve(); });
  }
  // The relay lives until the process is killed.
  ~TcpRelay() { thread_.detach(); }

  int port() const { return port_; }

  // The size of each target's reply.
  static constexpr int64_t kTcpPingBytes = 16;

 private:
  // Serves one client connection at a time.
  void Serve() {
    for (;;) {
      UniqueFd client(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!client.valid()) {
        CHECK(errno == EINTR || errno == ECONNABORTED) << "accept: " << std::strerror(errno);
        continue;
      }
      SetNoDelay(client.get());
      std::vector<UniqueFd> targets;
      for (int port : target_ports_) targets.push_back(ConnectTcp(port));
      int64_t fan_out = 0;
      while (ReadFully(client.get(), reinterpret_cast<char*>(&fan_out), sizeof(fan_out))) {
        if (fan_out < 0 || fan_out >= static_cast<int64_t>(targets.size())) break;
        for (int64_t i = 1; i <= fan_out; ++i) Send(targets[i].get());
        for (int64_t i = 1; i <= fan_out; ++i) Receive(targets[i].get());
        Send(targets[0].get());
        Receive(targets[0].get());
        if (!WriteFully(client.get(), reinterpret_cast<const char*>(&fan_out), sizeof(fan_out))) {
          break;
        }
      }
    }
  }
  static void Send(int target) {
    const int64_t request[2] = {kTcpPingBytes, kTcpPingBytes};
    CHECK(WriteFully(target, reinterpret_cast<const char*>(request), sizeof(request)))
        << "a raw TCP target closed";
  }
  static void Receive(int target) {
    char reply[kTcpPingBytes];
    CHECK(ReadFully(target, reply, sizeof(reply))) << "a raw TCP target closed";
  }

  const std::vector<int> target_ports_;
  UniqueFd listen_fd_;
  int port_ = 0;
  std::thread thread_;
};

// `targets`: each target's gRPC and TCP ports, "grpc/tcp", comma-separated.
int RelayMain(const char* port_file, const char* targets) {
  std::vector<int> ports, tcp_ports;
  for (absl::string_view text : absl::StrSplit(targets, ',')) {
    const std::vector<absl::string_view> pair = absl::StrSplit(text, '/');
    int port = 0, tcp_port = 0;
    CHECK(pair.size() == 2 && absl::SimpleAtoi(pair[0], &port) &&
          absl::SimpleAtoi(pair[1], &tcp_port))
        << "bad relay target: " << text;
    ports.push_back(port);
    tcp_ports.push_back(tcp_port);
  }
  Relay relay(ports);
  TcpRelay tcp_relay(tcp_ports);
  const absl::Status written = WritePortFile(port_file, {relay.port(), tcp_relay.port()});
  CHECK(written.ok()) << written;
  relay.Run();
  return 0;
}

}  // namespace

class RawServer::InProcessServers {
 public:
  InProcessServers()
      : service_(&source_),
        tcp_(&source_),
        unix_(&source_, UnixStreamAddress(::getpid())),
        grpc_(StartGrpcServer(&service_, &grpc_port_)) {}
  ~InProcessServers() { grpc_->Shutdown(); }

  int grpc_port() const { return grpc_port_; }
  int tcp_port() const { return tcp_.port(); }

 private:
  Source source_;
  PingService service_;
  StreamServer tcp_;
  StreamServer unix_;
  int grpc_port_ = 0;
  std::unique_ptr<grpc::Server> grpc_;
};

void UseRunfilesOf(const char* argv0) {
  if (std::getenv("TEST_SRCDIR") == nullptr) {
    const std::string runfiles = std::string(argv0) + ".runfiles";
    CHECK(::access(runfiles.c_str(), F_OK) == 0)
        << runfiles << " not found: build the benchmark with bazel";
    ::setenv("TEST_SRCDIR", runfiles.c_str(), 1);
  }
  if (std::getenv("TEST_TMPDIR") == nullptr) {
    char dir[] = "/tmp/overseer_bench.XXXXXX";
    CHECK(::mkdtemp(dir) != nullptr) << "mkdtemp failed";
    ::setenv("TEST_TMPDIR", dir, 1);
  }
}

bool IsRawServer(int argc, char** argv) {
  return (argc == 3 ||
          (argc == 4 && std::strncmp(argv[3], kRelayToFlag, std::strlen(kRelayToFlag)) == 0)) &&
         std::strcmp(argv[1], kRawServerFlag) == 0 &&
         std::strncmp(argv[2], kPortFileFlag, std::strlen(kPortFileFlag)) == 0;
}

int RawServerMain(int argc, char** argv) {
  CHECK(IsRawServer(argc, argv)) << "usage: " << argv[0] << " " << kRawServerFlag << " "
                                 << kPortFileFlag << "<path> [" << kRelayToFlag
                                 << "<grpc port>/<tcp port>[,...]]";
  if (argc == 4) {
    return RelayMain(argv[2] + std::strlen(kPortFileFlag), argv[3] + std::strlen(kRelayToFlag));
  }
  Source source;
  PingService service(&source);
  StreamServer tcp(&source);
  StreamServer unix_stream(&source, UnixStreamAddress(::getpid()));
  int grpc_port = 0;
  const std::unique_ptr<grpc::Server> server = StartGrpcServer(&service, &grpc_port);
  const absl::Status written =
      WritePortFile(argv[2] + std::strlen(kPortFileFlag), {grpc_port, tcp.port()});
  CHECK(written.ok()) << written;
  for (;;) ::pause();  // Until SIGTERM, or SIGKILL when the parent dies.
}

RawClient::RawClient(int grpc_port, int tcp_port, std::string unix_address,
                     RawChannelOptions options)
    : tcp_port_(tcp_port), unix_address_(std::move(unix_address)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A connection of its own, not one shared with other clients of the same address.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (options.stream_window_bytes > 0) {
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, options.stream_window_bytes);
  }
  if (!options.bdp_probe) args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  if (!options.retries) args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(grpc_port),
                                       grpc::InsecureChannelCredentials(), args);
  stub_ = BenchPing::NewStub(channel_);
}

std::unique_ptr<grpc::ClientAsyncResponseReader<PingResponse>> RawClient::StartPing(
    grpc::ClientContext* context, const PingRequest& request, grpc::CompletionQueue* cq) {
  return stub_->AsyncPing(context, request, cq);
}

void RawClient::Ping(int fan_out) {
  grpc::ClientContext context;
  PingRequest request;
  request.set_fan_out(fan_out);
  PingResponse response;
  const grpc::Status s = stub_->Ping(&context, request, &response);
  CHECK(s.ok()) << s.error_message();
}

void RawClient::PingOnStream() {
  if (ping_stream_ == nullptr) {
    stream_context_ = std::make_unique<grpc::ClientContext>();
    ping_stream_ = stub_->PingOnStream(stream_context_.get());
  }
  PingRequest request;
  PingResponse response;
  CHECK(ping_stream_->Write(request));
  CHECK(ping_stream_->Read(&response));
}

void RawClient::Transfer(int64_t total_bytes, int64_t chunk_bytes, char* dest) {
  grpc::ClientContext context;
  StreamRequest request;
  request.set_total_bytes(total_bytes);
  request.set_chunk_bytes(chunk_bytes);
  std::unique_ptr<grpc::ClientReader<StreamChunk>> reader = stub_->Stream(&context, request);
  StreamChunk chunk;
  int64_t received = 0;
  while (reader->Read(&chunk)) {
    CHECK(received + static_cast<int64_t>(chunk.content().size()) <= total_bytes);
    std::memcpy(dest + received, chunk.content().data(), chunk.content().size());
    received += static_cast<int64_t>(chunk.content().size());
  }
  const grpc::Status s = reader->Finish();
  CHECK(s.ok()) << s.error_message();
  CHECK(received == total_bytes) << received << " of " << total_bytes;
}

void RawClient::TransferRawBytes(int64_t total_bytes, int64_t chunk_bytes, char* dest) {
  const grpc::internal::RpcMethod method(kStreamMethod, grpc::internal::RpcMethod::SERVER_STREAMING,
                                         channel_);
  grpc::ClientContext context;
  StreamRequest request;
  request.set_total_bytes(total_bytes);
  request.set_chunk_bytes(chunk_bytes);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel_.get(), method,
                                                                    &context, request));
  grpc::ByteBuffer message;
  std::vector<grpc::Slice> slices;
  int64_t received = 0;
  while (reader->Read(&message)) {
    CHECK(message.Dump(&slices).ok());
    size_t s = 0, at = 0;
    auto next = [&]() -> uint8_t {
      while (at == slices[s].size()) ++s, at = 0;
      return slices[s].begin()[at++];
    };
    CHECK(ReadVarint(next) == ((kContentField << 3) | 2));  // The content field's key.
    const int64_t length = static_cast<int64_t>(ReadVarint(next));
    CHECK(received + length <= total_bytes);
    for (int64_t copied = 0; copied < length; ++s, at = 0) {
      const size_t n = std::min<size_t>(slices[s].size() - at, length - copied);
      std::memcpy(dest + received + copied, slices[s].begin() + at, n);
      copied += static_cast<int64_t>(n);
    }
    received += length;
  }
  const grpc::Status status = reader->Finish();
  CHECK(status.ok()) << status.error_message();
  CHECK(received == total_bytes) << received << " of " << total_bytes;
}

namespace {

// Starts `argv0` as a raw child (RawServerMain) with `extra` arguments, its output in
// $TEST_TMPDIR/<name>_<n>.log; returns it once it wrote its `count` ports to *ports.
std::unique_ptr<ChildProcess> StartRawChild(const char* argv0, const std::string& name,
                                            const std::vector<std::string>& extra, size_t count,
                                            std::vector<int>* ports) {
  static std::atomic<int> next{0};
  const std::string base = absl::StrCat(TempDir(), "/", name, "_", next++);
  const std::string port_file = base + ".port";
  std::remove(port_file.c_str());
  std::vector<std::string> args = {argv0, kRawServerFlag, kPortFileFlag + port_file};
  args.insert(args.end(), extra.begin(), extra.end());
  auto process = std::make_unique<ChildProcess>(std::move(args), base + ".log");
  process->set_die_with_parent(true);  // Never outlive the benchmark.
  const absl::Status started = process->Start();
  CHECK(started.ok()) << started;
  absl::StatusOr<std::vector<int>> written = process->WaitForPortFile(port_file, absl::Minutes(1));
  CHECK(written.ok() && written->size() == count)
      << "the " << name << " child did not start: " << written.status();
  *ports = *std::move(written);
  return process;
}

}  // namespace

RawServer::RawServer(const char* argv0) {
  std::vector<int> ports;
  process_ = StartRawChild(argv0, "raw_server", {}, 2, &ports);
  grpc_port_ = ports[0];
  tcp_port_ = ports[1];
  Connect();
}

std::unique_ptr<RawServer> RawServer::InProcess() {
  std::unique_ptr<RawServer> server(new RawServer());
  server->in_process_ = std::make_unique<InProcessServers>();
  server->grpc_port_ = server->in_process_->grpc_port();
  server->tcp_port_ = server->in_process_->tcp_port();
  server->Connect();
  return server;
}

void RawServer::Connect() { client_ = NewClient(); }

RawServer::~RawServer() {
  client_.reset();
  in_process_.reset();
  if (process_ != nullptr && process_->IsRunning()) {
    (void)process_->Stop(SIGTERM, absl::Minutes(1));  // Else the destructor SIGKILLs it.
  }
}

std::unique_ptr<RawClient> RawServer::NewClient(RawChannelOptions options) const {
  return std::make_unique<RawClient>(
      grpc_port_, tcp_port_, UnixStreamAddress(process_ != nullptr ? process_->pid() : ::getpid()),
      options);
}

RawRelay::RawRelay(const char* argv0, const RawServer& target) : RawRelay(argv0, {&target}) {}

RawRelay::RawRelay(const char* argv0, const std::vector<const RawServer*>& targets) {
  CHECK(!targets.empty()) << "a relay needs a target";
  std::string flag = kRelayToFlag;
  for (size_t i = 0; i < targets.size(); ++i) {
    absl::StrAppend(&flag, i == 0 ? "" : ",", targets[i]->grpc_port(), "/", targets[i]->tcp_port());
  }
  std::vector<int> ports;
  process_ = StartRawChild(argv0, "raw_relay", {flag}, 2, &ports);
  client_ = std::make_unique<RawClient>(ports[0], 0, std::string(), RawChannelOptions());
  tcp_port_ = ports[1];
}

void RawRelay::PingTcp(int fan_out) {
  if (!tcp_.valid()) tcp_ = ConnectTcp(tcp_port_);
  int64_t message = fan_out;
  CHECK(WriteFully(tcp_.get(), reinterpret_cast<const char*>(&message), sizeof(message)));
  CHECK(ReadFully(tcp_.get(), reinterpret_cast<char*>(&message), sizeof(message)) &&
        message == fan_out)
      << "the raw TCP relay closed (fan_out out of range?)";
}

RawRelay::~RawRelay() {
  client_.reset();
  if (process_->IsRunning()) (void)process_->Stop(SIGTERM, absl::Minutes(1));
}

void RawClient::TcpTransfer(int64_t total_bytes, int64_t chunk_bytes, char* dest) {
  if (tcp_fd_ < 0) tcp_fd_ = ConnectTcp(tcp_port_).release();
  const int64_t request[2] = {total_bytes, chunk_bytes};
  CHECK(WriteFully(tcp_fd_, reinterpret_cast<const char*>(request), sizeof(request)));
  CHECK(ReadFully(tcp_fd_, dest, static_cast<size_t>(total_bytes))) << "the TCP stream ended early";
}

void RawClient::UnixTransfer(int64_t total_bytes, int64_t chunk_bytes, char* dest) {
  if (!unix_fd_.valid()) {
    absl::StatusOr<UniqueFd> fd = ConnectUnixSocket(unix_address_, SOCK_STREAM, "raw Unix stream");
    CHECK(fd.ok()) << fd.status();
    unix_fd_ = *std::move(fd);
    ::setsockopt(unix_fd_.get(), SOL_SOCKET, SO_RCVBUF, &kUnixBufferBytes,
                 sizeof(kUnixBufferBytes));
  }
  const int64_t request[2] = {total_bytes, chunk_bytes};
  CHECK(WriteFully(unix_fd_.get(), reinterpret_cast<const char*>(request), sizeof(request)));
  CHECK(ReadFully(unix_fd_.get(), dest, static_cast<size_t>(total_bytes)))
      << "the Unix stream ended early";
}

RawClient::~RawClient() {
  if (ping_stream_ != nullptr) {
    ping_stream_->WritesDone();
    ping_stream_->Finish();
  }
  if (tcp_fd_ >= 0) ::close(tcp_fd_);
}

}  // namespace bench
}  // namespace overseer

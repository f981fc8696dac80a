#ifndef OVERSEER_BENCH_MULTIPROCESS_H_
#define OVERSEER_BENCH_MULTIPROCESS_H_

// Helpers of the benchmarks that run several processes: a local cluster started from
// the bench binary's runfiles, and the raw baselines (raw gRPC of bench/ping.proto, a
// raw loopback TCP stream and a raw Unix stream) served by a child process that is the bench binary
// itself re-executed with a flag, or by a server in this process.
//
//   int main(int argc, char** argv) {
//     if (bench::IsRawServer(argc, argv)) return bench::RawServerMain(argc, argv);
//     bench::UseRunfilesOf(argv[0]);
//     bench::RawServer raw(argv[0]);
//     ... raw.Ping() ... raw.Transfer(bytes, chunk, dest) ... raw.TcpTransfer(bytes, dest)
//   }
//
// The raw gRPC stream sends every chunk by reference (no copy into a protobuf message,
// core/rpc/raw_message.h), as the worker's RecvTensor and the checkpoint store's
// ReadTensors do. The TCP stream write()s each chunk from the same source buffer and
// the receiver read()s straight into its destination, on a connection kept from one
// transfer to the next with TCP_NODELAY (as gRPC's): one copy on each side, the least
// that moving bytes between two processes over loopback costs on this host.
// (SO_RCVLOWAT, which gRPC's newer readers set to be woken less often, stalled
// transfers for good on this host's kernel, so the reader is woken per packet.)

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/ping.grpc.pb.h"
#include "core/io/unix_socket.h"
#include "grpcpp/channel.h"
#include "testing/child_process.h"

namespace overseer {
namespace bench {

// Points TEST_SRCDIR at `argv0`'s runfiles (unless set, as under bazel run/test) so
// test::LocalCluster finds the server binaries, and TEST_TMPDIR (unless set) at a new
// directory under /tmp for the servers' logs.
void UseRunfilesOf(const char* argv0);

// True when the binary was started as the raw server child (or the raw relay child).
bool IsRawServer(int argc, char** argv);
// Serves BenchPing and the TCP stream on free loopback ports and the Unix stream at
// "@overseer-bench-raw-<pid>", writes both ports to the port file its command line
// names (core/port_file.h), and serves until killed (it dies with its parent). Started
// as a relay (RawRelay), serves the relay's Ping instead. Returns the exit code.
int RawServerMain(int argc, char** argv);

// How a client's channel receives a stream: the HTTP/2 stream window (0: gRPC's
// default) and whether gRPC's BDP probing may resize it, to match the peer a figure
// compares with (a worker's channel, a checkpoint store's); and whether gRPC's own
// retries wrap its calls (off, as on the master's channels to workers).
struct RawChannelOptions {
  int stream_window_bytes = 0;
  bool bdp_probe = true;
  bool retries = true;
};

// A client of the raw servers, with connections of its own (one gRPC channel, one TCP
// connection opened by the first TcpTransfer). Thread-compatible: one call at a time
// (one client per thread for parallel streams).
class RawClient {
 public:
  RawClient(int grpc_port, int tcp_port, std::string unix_address, RawChannelOptions options);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // One empty unary round trip. To a relay (RawRelay), `fan_out` asks it to ping that
  // many of its targets after the first in parallel before it pings the first.
  void Ping(int fan_out = 0);
  // One empty round trip on a stream kept open.
  void PingOnStream();
  // The same round trip started on `cq`, for a caller that polls it (the relay).
  std::unique_ptr<grpc::ClientAsyncResponseReader<PingResponse>> StartPing(
      grpc::ClientContext* context, const PingRequest& request, grpc::CompletionQueue* cq);
  // Streams `total_bytes` from the server in messages of `chunk_bytes`, parses each
  // into a StreamChunk and copies its content into `dest` (at least total_bytes long),
  // as a RecvTensor receiver does.
  void Transfer(int64_t total_bytes, int64_t chunk_bytes, char* dest);
  // The same stream read as raw bytes (no protobuf parse): each message's content is
  // copied from gRPC's slices straight into `dest`, as a ReadTensors receiver does.
  void TransferRawBytes(int64_t total_bytes, int64_t chunk_bytes, char* dest);
  // Receives `total_bytes` over the client's loopback TCP connection, which the server
  // write()s in pieces of `chunk_bytes` from the same source, read() straight into
  // `dest`.
  void TcpTransfer(int64_t total_bytes, int64_t chunk_bytes, char* dest);
  // The same over a Unix stream socket (with the socket buffers of the worker's local
  // transfers, worker/rpc/local_transfer.h): the physical reference of a same-host
  // transfer.
  void UnixTransfer(int64_t total_bytes, int64_t chunk_bytes, char* dest);

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<BenchPing::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> stream_context_;
  std::unique_ptr<grpc::ClientReaderWriter<PingRequest, PingResponse>> ping_stream_;
  const int tcp_port_;
  int tcp_fd_ = -1;
  const std::string unix_address_;
  UniqueFd unix_fd_;
};

// The raw servers, in a child process or in this one, and a default client. CHECK-fails
// when they cannot start (benchmarks have no user input to report errors for).
class RawServer {
 public:
  // In a child process (testing/child_process.h): `argv0` re-executed (its main must
  // call RawServerMain when IsRawServer), its output in $TEST_TMPDIR/raw_server_<n>.log.
  explicit RawServer(const char* argv0);
  // In this process.
  static std::unique_ptr<RawServer> InProcess();
  // Stops the servers (SIGTERMs and reaps the child).
  ~RawServer();
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;

  // A client with its own connection.
  std::unique_ptr<RawClient> NewClient(RawChannelOptions options = {}) const;

  // The port of its gRPC server (BenchPing) on 127.0.0.1.
  int grpc_port() const { return grpc_port_; }
  // The port of its TCP stream server on 127.0.0.1.
  int tcp_port() const { return tcp_port_; }
  // The server's process (this one for InProcess).
  pid_t pid() const { return process_ != nullptr ? process_->pid() : ::getpid(); }

  // Calls of the default client (gRPC's default channel settings).
  void Ping() { client_->Ping(); }
  void PingOnStream() { client_->PingOnStream(); }
  void Transfer(int64_t total_bytes, int64_t chunk_bytes, char* dest) {
    client_->Transfer(total_bytes, chunk_bytes, dest);
  }
  void TransferRawBytes(int64_t total_bytes, int64_t chunk_bytes, char* dest) {
    client_->TransferRawBytes(total_bytes, chunk_bytes, dest);
  }
  void TcpTransfer(int64_t total_bytes, int64_t chunk_bytes, char* dest) {
    client_->TcpTransfer(total_bytes, chunk_bytes, dest);
  }
  void UnixTransfer(int64_t total_bytes, int64_t chunk_bytes, char* dest) {
    client_->UnixTransfer(total_bytes, chunk_bytes, dest);
  }

 private:
  class InProcessServers;
  RawServer() = default;
  void Connect();

  std::unique_ptr<ChildProcess> process_;
  std::unique_ptr<InProcessServers> in_process_;
  int grpc_port_ = 0;
  int tcp_port_ = 0;
  std::unique_ptr<RawClient> client_;
};

// The raw baseline of a call relayed by a process in the middle, as a step is by the
// master: a child process whose BenchPing.Ping calls Ping of another raw server and
// replies when that returns. It serves on one completion queue polled by one thread,
// which also starts the inner call and reads its reply, as the master's RunStep loop
// does (core/rpc/completion_queue_loop.h): four one-way hops and two processes' work
// per call, against a ping's two and one. Raw gRPC, empty messages, none of Overseer's
// code in the relay. CHECK-fails when it cannot start.
//
// Given several targets, it is also the raw baseline of a step fanned out to tasks, as
// a step of several partitions is by the master (master/step_runner.h): Ping(n) pings
// targets 1..n in parallel, and when all have returned pings target 0 (as the master
// runs forwarding producers first and then their consumer), then replies.
class RawRelay {
 public:
  // Relays to `target` (which must outlive the relay).
  RawRelay(const char* argv0, const RawServer& target);
  // Relays to `targets` (at least one; they must outlive the relay).
  RawRelay(const char* argv0, const std::vector<const RawServer*>& targets);
  ~RawRelay();
  RawRelay(const RawRelay&) = delete;
  RawRelay& operator=(const RawRelay&) = delete;

  // One relayed empty round trip: this process -> relay -> target and back; with
  // `fan_out`, through targets 1..fan_out first (fewer than the targets).
  void Ping(int fan_out = 0) { client_->Ping(fan_out); }
  // The same relayed round trip and fan-out with no RPC framework: fixed-size messages
  // on loopback TCP connections kept open (TCP_NODELAY) from this process to the relay
  // and from the relay to each target's TCP stream server, served by one thread of the
  // relay with blocking calls. What the hops cost in the kernel and in wake-ups alone.
  void PingTcp(int fan_out = 0);
  pid_t pid() const { return process_->pid(); }

 private:
  std::unique_ptr<ChildProcess> process_;
  std::unique_ptr<RawClient> client_;
  int tcp_port_ = 0;
  UniqueFd tcp_;  // To the relay's TCP twin, opened by the first PingTcp.
};

}  // namespace bench
}  // namespace overseer

#endif  // OVERSEER_BENCH_MULTIPROCESS_H_

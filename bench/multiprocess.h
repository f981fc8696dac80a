#ifndef OVERSEER_BENCH_MULTIPROCESS_H_
#define OVERSEER_BENCH_MULTIPROCESS_H_

// Helpers of the benchmarks that run several processes: a local cluster started from
// the bench binary's runfiles, and the raw gRPC baseline (bench/ping.proto) served by
// a child process that is the bench binary itself re-executed with a flag.
//
//   int main(int argc, char** argv) {
//     if (bench::IsRawServer(argc, argv)) return bench::RawServerMain();
//     bench::UseRunfilesOf(argv[0]);
//     bench::RawServer raw(argv[0]);
//     ... raw.Ping() ... raw.Transfer(bytes, chunk) ...
//   }

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bench/ping.grpc.pb.h"

namespace overseer {
namespace bench {

// Points TEST_SRCDIR at `argv0`'s runfiles (unless set, as under bazel run/test) so
// test::LocalCluster finds the server binaries, and TEST_TMPDIR (unless set) at a new
// directory under /tmp for the servers' logs.
void UseRunfilesOf(const char* argv0);

// True when the binary was started as the raw gRPC server child.
bool IsRawServer(int argc, char** argv);
// Serves BenchPing on a free loopback port, prints the port on stdout, and serves
// until stdin closes (the parent exited) or SIGTERM. Returns the exit code.
int RawServerMain();

// The raw gRPC server in a child process, and a client of it. CHECK-fails when the
// child cannot start (benchmarks have no user input to report errors for).
class RawServer {
 public:
  explicit RawServer(const char* argv0);
  // SIGTERMs and reaps the child.
  ~RawServer();
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;

  // One empty unary round trip.
  void Ping();
  // Streams `total_bytes` from the child in messages of `chunk_bytes` and copies them
  // into `dest` (at least total_bytes long), as a tensor receiver would.
  void Transfer(int64_t total_bytes, int64_t chunk_bytes, char* dest);

 private:
  pid_t pid_ = -1;
  std::unique_ptr<BenchPing::Stub> stub_;
};

}  // namespace bench
}  // namespace overseer

#endif  // OVERSEER_BENCH_MULTIPROCESS_H_

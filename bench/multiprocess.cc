#include "bench/multiprocess.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/logging.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/channel_arguments.h"

namespace overseer {
namespace bench {
namespace {

constexpr char kRawServerFlag[] = "--raw_grpc_server";
// The server copies each chunk out of a buffer of this size, cyclically, as the
// worker copies chunks out of a tensor.
constexpr int64_t kSourceBytes = 64 << 20;

class PingService final : public BenchPing::Service {
 public:
  PingService() : source_(static_cast<size_t>(kSourceBytes), '\0') {
    for (size_t i = 0; i < source_.size(); ++i) source_[i] = static_cast<char>(i * 131);
  }

  grpc::Status Ping(grpc::ServerContext*, const PingRequest*, PingResponse*) override {
    return grpc::Status::OK;
  }

  grpc::Status Stream(grpc::ServerContext*, const StreamRequest* request,
                      grpc::ServerWriter<StreamChunk>* writer) override {
    if (request->chunk_bytes() <= 0 || request->chunk_bytes() > kSourceBytes) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad chunk_bytes");
    }
    StreamChunk chunk;
    int64_t offset = 0;
    for (int64_t sent = 0; sent < request->total_bytes();) {
      const int64_t n = std::min(request->chunk_bytes(), request->total_bytes() - sent);
      if (offset + n > kSourceBytes) offset = 0;
      chunk.mutable_content()->assign(source_.data() + offset, static_cast<size_t>(n));
      if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "gone");
      sent += n;
      offset += n;
    }
    return grpc::Status::OK;
  }

 private:
  std::string source_;
};

}  // namespace

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
  return argc == 2 && std::strcmp(argv[1], kRawServerFlag) == 0;
}

int RawServerMain() {
  PingService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "raw gRPC server: cannot listen\n");
    return 1;
  }
  std::printf("%d\n", port);
  std::fflush(stdout);
  server->Wait();
  return 0;
}

RawServer::RawServer(const char* argv0) {
  int out[2];
  CHECK(::pipe(out) == 0) << "pipe failed";
  pid_ = ::fork();
  CHECK(pid_ >= 0) << "fork failed";
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the benchmark
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    ::execl(argv0, argv0, kRawServerFlag, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  FILE* from_child = ::fdopen(out[0], "r");
  int port = 0;
  CHECK(std::fscanf(from_child, "%d", &port) == 1 && port > 0)
      << "the raw gRPC server child did not start";
  std::fclose(from_child);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  stub_ = BenchPing::NewStub(grpc::CreateCustomChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
}

RawServer::~RawServer() {
  stub_.reset();
  ::kill(pid_, SIGTERM);
  ::waitpid(pid_, nullptr, 0);
}

void RawServer::Ping() {
  grpc::ClientContext context;
  PingRequest request;
  PingResponse response;
  const grpc::Status s = stub_->Ping(&context, request, &response);
  CHECK(s.ok()) << s.error_message();
}

void RawServer::Transfer(int64_t total_bytes, int64_t chunk_bytes, char* dest) {
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

}  // namespace bench
}  // namespace overseer

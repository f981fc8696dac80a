#include "checkpoint_store/rpc/grpc_checkpoint_store.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/local_read_server.h"
#include "checkpoint_store/location.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"
#include "core/logging.h"
#include "core/rpc/server_runner.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

TEST(GrpcCheckpointStoreTest, SaveReadLatestOverTheWire) {
  const std::string root = std::string(std::getenv("TEST_TMPDIR")) + "/grpc";
  auto store = CheckpointStore::Open(FileSystem::Posix(), root, Clock::Real());
  ASSERT_TRUE(store.ok());
  GrpcCheckpointStoreService service(store->get());
  ServerRunnerOptions options;
  options.component = "checkpoint_store";
  options.metrics_port = -1;
  options.handle_signals = false;
  ServerRunner runner(options);
  runner.AddService(&service);
  ASSERT_TRUE(runner.Start().ok());

  auto where =
      ResolveCheckpointLocation("grpc://localhost:" + std::to_string(runner.port()) + "/exp/run1");
  ASSERT_TRUE(where.ok()) << where.status();
  EXPECT_EQ(where->run, "exp/run1");
  BeginCheckpointRequest begin;
  begin.set_run(where->run);
  begin.set_name("model.ckpt-3");
  begin.set_num_shards(1);
  auto id = where->store->BeginCheckpoint(begin);
  ASSERT_TRUE(id.ok()) << id.status();
  // 3 MiB tensor: several chunks each way.
  const int64_t n = 3 << 18;
  std::string big(static_cast<size_t>(n * 4), '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  TensorHeader header;
  header.set_name("w");
  header.set_dtype(DT_FLOAT);
  header.mutable_shape()->add_dim()->set_size(n);
  header.set_size(n * 4);
  {
    auto writer = where->store->OpenShard(*id, 0);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->AddTensor(header, big).ok());
    absl::Status closed = (*writer)->Close();
    ASSERT_TRUE(closed.ok()) << closed;
  }
  auto info = where->store->CommitCheckpoint(*id);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->step(), 3);
  EXPECT_TRUE(FileSystem::Posix()->FileExists(root + "/exp/run1/model.ckpt-3.index").ok());
  auto latest = where->store->LatestCheckpoint(where->run);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->name(), "model.ckpt-3");
  std::string got;
  ASSERT_TRUE(where->store
                  ->ReadTensors(where->run, "model.ckpt-3", {"w"},
                                [&](const TensorHeader& h, absl::string_view data) {
                                  EXPECT_EQ(h.name(), "w");
                                  got = std::string(data);
                                  return absl::OkStatus();
                                })
                  .ok());
  EXPECT_EQ(got, big);
  begin.set_run("../escape");
  EXPECT_EQ(where->store->BeginCheckpoint(begin).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(where->store->CommitCheckpoint("nope").status().code(), absl::StatusCode::kNotFound);
  runner.RequestTermination();
  runner.WaitForTermination();
}

// Tensors larger than one message (sent in chunks and assembled by the client) and
// small ones after them, read twice: the second read reuses the pooled buffers of the
// first on both sides, which still hold the old bytes and a larger size.
TEST(GrpcCheckpointStoreTest, ChunkedTensorsReadTwiceFromReusedBuffers) {
  const std::string root = std::string(std::getenv("TEST_TMPDIR")) + "/chunked";
  auto store = CheckpointStore::Open(FileSystem::Posix(), root, Clock::Real());
  ASSERT_TRUE(store.ok());
  GrpcCheckpointStoreService service(store->get());
  ServerRunnerOptions options;
  options.component = "checkpoint_store";
  options.metrics_port = -1;
  options.handle_signals = false;
  options.stream_window_bytes = kCheckpointStoreStreamWindowBytes;
  ServerRunner runner(options);
  runner.AddService(&service);
  ASSERT_TRUE(runner.Start().ok());
  auto remote = GrpcCheckpointStore::Connect("localhost:" + std::to_string(runner.port()));

  // Above the 64 MiB of one message: 68 MiB (chunked), then 100 bytes, 64 MiB + 4
  // bytes (chunked, a short last chunk), 0 bytes.
  const std::vector<int64_t> floats = {17 << 20, 25, (16 << 20) + 1, 0};
  std::vector<std::string> contents;
  BeginCheckpointRequest begin;
  begin.set_run("big");
  begin.set_name("model.ckpt-1");
  begin.set_num_shards(1);
  auto id = remote->BeginCheckpoint(begin);
  ASSERT_TRUE(id.ok()) << id.status();
  {
    auto writer = remote->OpenShard(*id, 0);
    ASSERT_TRUE(writer.ok());
    for (size_t t = 0; t < floats.size(); ++t) {
      std::string bytes(static_cast<size_t>(floats[t] * 4), '\0');
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + t);
      TensorHeader header;
      header.set_name("t" + std::to_string(t));
      header.set_dtype(DT_FLOAT);
      header.mutable_shape()->add_dim()->set_size(floats[t]);
      header.set_size(floats[t] * 4);
      ASSERT_TRUE((*writer)->AddTensor(header, bytes).ok());
      contents.push_back(std::move(bytes));
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  ASSERT_TRUE(remote->CommitCheckpoint(*id).ok());

  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::string> names;
    std::vector<std::string> got;
    absl::Status read = remote->ReadTensors("big", "model.ckpt-1", {"t0", "t1", "t2", "t3"},
                                            [&](const TensorHeader& h, absl::string_view data) {
                                              names.push_back(h.name());
                                              got.emplace_back(data);
                                              return absl::OkStatus();
                                            });
    ASSERT_TRUE(read.ok()) << read;
    EXPECT_EQ(names, (std::vector<std::string>{"t0", "t1", "t2", "t3"}));
    ASSERT_EQ(got.size(), contents.size());
    for (size_t t = 0; t < contents.size(); ++t) {
      EXPECT_TRUE(got[t] == contents[t]) << "tensor t" << t << " of pass " << pass << " has "
                                         << got[t].size() << " bytes, wrote " << contents[t].size();
    }
  }
  runner.RequestTermination();
  runner.WaitForTermination();
}

// A store served over loopback with checkpoint "model.ckpt-1" of run "r" holding
// `floats[i]` floats in tensor "t<i>" (bytes from Pattern).
// Inverts the byte at `offset` of the file at `path`.
void FlipByte(const std::string& path, std::streamoff offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  const char byte = static_cast<char>(f.get());
  f.seekp(offset);
  f.put(static_cast<char>(byte ^ 0xff));
  ASSERT_TRUE(f.good()) << path;
}

// A local-read socket path that a test can make unreachable: it lies in a fresh
// directory in /tmp (a socket path holds at most 107 bytes, fewer than TEST_TMPDIR
// under a default bazel output base), and Remove deletes the socket file and the
// directory, so that a store keeps serving a socket no client can reach.
class GoneSocket {
 public:
  GoneSocket() {
    char dir[] = "/tmp/overseer-gcs-XXXXXX";
    if (::mkdtemp(dir) != nullptr) dir_ = dir;
  }
  bool made() const { return !dir_.empty(); }
  std::string path() const { return dir_ + "/gone.sock"; }
  bool Remove() const { return ::unlink(path().c_str()) == 0 && ::rmdir(dir_.c_str()) == 0; }

 private:
  std::string dir_;
};

class ServedCheckpoint {
 public:
  // With `local_read_socket`, the store also serves local reads there.
  ServedCheckpoint(const std::string& dir, const std::vector<int64_t>& floats,
                   const std::string& local_read_socket = "")
      : root_(std::string(std::getenv("TEST_TMPDIR")) + "/" + dir),
        store_(*CheckpointStore::Open(FileSystem::Posix(), root_, Clock::Real())),
        local_reads_(StartLocalReads(store_.get(), local_read_socket)),
        service_(store_.get(), local_reads_.get()),
        runner_(Options()) {
    runner_.AddService(&service_);
    CHECK(runner_.Start().ok());
    remote_ = GrpcCheckpointStore::Connect(
        address(), GrpcCheckpointStore::LocalReadsFromEnvironment(), &clock_);
    BeginCheckpointRequest begin;
    begin.set_run("r");
    begin.set_name("model.ckpt-1");
    begin.set_num_shards(1);
    auto id = remote_->BeginCheckpoint(begin);
    CHECK(id.ok()) << id.status();
    auto writer = remote_->OpenShard(*id, 0);
    CHECK(writer.ok());
    for (size_t t = 0; t < floats.size(); ++t) {
      TensorHeader header;
      header.set_name("t" + std::to_string(t));
      header.set_dtype(DT_FLOAT);
      header.mutable_shape()->add_dim()->set_size(floats[t]);
      header.set_size(floats[t] * 4);
      contents_.push_back(Pattern(static_cast<size_t>(header.size()), static_cast<int>(t)));
      CHECK((*writer)->AddTensor(header, contents_.back()).ok());
    }
    CHECK((*writer)->Close().ok());
    CHECK(remote_->CommitCheckpoint(*id).ok());
  }
  ~ServedCheckpoint() {
    runner_.RequestTermination();
    runner_.WaitForTermination();
  }

  static std::string Pattern(size_t n, int seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 13 + seed);
    return s;
  }
  std::string address() const { return "localhost:" + std::to_string(runner_.port()); }
  std::string data_file() const { return root_ + "/r/model.ckpt-1.data-00000-of-00001"; }
  GrpcCheckpointStore* remote() { return remote_.get(); }
  LocalReadServer* local_reads() { return local_reads_.get(); }
  test::FakeClock* clock() { return &clock_; }  // The remote()'s.
  const std::vector<std::string>& contents() const { return contents_; }

 private:
  static std::unique_ptr<LocalReadServer> StartLocalReads(CheckpointStore* store,
                                                          const std::string& socket) {
    if (socket.empty()) return nullptr;
    LocalReadServerOptions options;
    options.socket = socket;
    options.clock = Clock::Real();
    auto server = LocalReadServer::Start(store, options);
    CHECK(server.ok()) << server.status();
    return *std::move(server);
  }
  static ServerRunnerOptions Options() {
    ServerRunnerOptions options;
    options.component = "checkpoint_store";
    options.metrics_port = -1;
    options.handle_signals = false;
    options.stream_window_bytes = kCheckpointStoreStreamWindowBytes;
    return options;
  }

  const std::string root_;
  test::FakeClock clock_;  // Outlives remote_.
  std::unique_ptr<CheckpointStore> store_;
  std::unique_ptr<LocalReadServer> local_reads_;
  GrpcCheckpointStoreService service_;
  ServerRunner runner_;
  std::unique_ptr<GrpcCheckpointStore> remote_;
  std::vector<std::string> contents_;
};

// The service writes raw bytes, but they are ReadTensorsResponse messages: the
// protobuf stub (as any generated client, e.g. python3-grpcio's) reads them.
TEST(GrpcCheckpointStoreTest, ProtobufStubReadsTheStream) {
  ServedCheckpoint served("stub", {(2 << 20) + 3, 5, 0});  // 8 MiB + 12 bytes: 3 messages.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(65 << 20);
  auto stub = CheckpointStoreService::NewStub(
      grpc::CreateCustomChannel(served.address(), grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  ReadTensorsRequest request;
  request.set_run("r");
  request.set_name("model.ckpt-1");
  auto reader = stub->ReadTensors(&context, request);
  ReadTensorsResponse message;
  std::vector<std::string> names;
  std::vector<std::string> got;
  int messages = 0;
  while (reader->Read(&message)) {
    ++messages;
    if (message.has_tensor()) {
      names.push_back(message.tensor().name());
      got.emplace_back();
    }
    ASSERT_FALSE(got.empty());
    got.back() += message.data();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(messages, 5);
  EXPECT_EQ(names, (std::vector<std::string>{"t0", "t1", "t2"}));
  ASSERT_EQ(got.size(), 3u);
  for (size_t t = 0; t < got.size(); ++t) EXPECT_TRUE(got[t] == served.contents()[t]) << t;
}

// Reads every tensor of run "r"'s model.ckpt-1, appending the names received to *names.
absl::Status ReadAllNames(GrpcCheckpointStore* store, std::vector<std::string>* names) {
  return store->ReadTensors("r", "model.ckpt-1", {},
                            [names](const TensorHeader& h, absl::string_view) {
                              names->push_back(h.name());
                              return absl::OkStatus();
                            });
}

// A flipped byte in the data file: the tensors before it arrive, the damaged one never
// does, and the read fails DATA_LOSS naming the tensor and the file.
TEST(GrpcCheckpointStoreTest, CorruptedTensorIsDataLossOverTheWire) {
  ServedCheckpoint served("corrupt", {1 << 20, 3 << 20, 7});
  FlipByte(served.data_file(), (4 << 20) + (5 << 20));  // Inside t1.
  std::vector<std::string> names;
  absl::Status read = ReadAllNames(served.remote(), &names);
  EXPECT_EQ(read.code(), absl::StatusCode::kDataLoss) << read;
  EXPECT_NE(read.message().find("tensor t1"), std::string::npos) << read;
  EXPECT_NE(read.message().find(served.data_file()), std::string::npos) << read;
  EXPECT_EQ(names, std::vector<std::string>{"t0"});
  // A missing tensor is NOT_FOUND, and the next read on the same client works.
  EXPECT_EQ(served.remote()->ReadTensors("r", "model.ckpt-1", {"t0", "nope"}, nullptr).code(),
            absl::StatusCode::kNotFound);
  std::string t2;
  ASSERT_TRUE(served.remote()
                  ->ReadTensors("r", "model.ckpt-1", {"t2"},
                                [&](const TensorHeader&, absl::string_view data) {
                                  t2 = std::string(data);
                                  return absl::OkStatus();
                                })
                  .ok());
  EXPECT_EQ(t2, served.contents()[2]);
}

// A consumer that fails stops the stream: the error comes back, the server is not left
// sending, and the client reads again.
TEST(GrpcCheckpointStoreTest, ConsumerErrorCancelsTheStream) {
  ServedCheckpoint served("cancel", {4 << 20, 4 << 20, 4 << 20, 4 << 20});
  int calls = 0;
  absl::Status read = served.remote()->ReadTensors("r", "model.ckpt-1", {},
                                                   [&](const TensorHeader&, absl::string_view) {
                                                     ++calls;
                                                     return absl::AbortedError("enough");
                                                   });
  EXPECT_EQ(read, absl::AbortedError("enough"));
  EXPECT_EQ(calls, 1);
  calls = 0;
  ASSERT_TRUE(served.remote()
                  ->ReadTensors("r", "model.ckpt-1", {},
                                [&](const TensorHeader&, absl::string_view) {
                                  ++calls;
                                  return absl::OkStatus();
                                })
                  .ok());
  EXPECT_EQ(calls, 4);
}

// Reads all of `name` of run "r" through `store`: the tensors by name, in order.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ReadAll(
    CheckpointStoreInterface* store, const std::vector<std::string>& names = {}) {
  std::vector<std::pair<std::string, std::string>> got;
  absl::Status read = store->ReadTensors("r", "model.ckpt-1", names,
                                         [&](const TensorHeader& h, absl::string_view data) {
                                           got.emplace_back(h.name(), std::string(data));
                                           return absl::OkStatus();
                                         });
  if (!read.ok()) return read;
  return got;
}

std::string AbstractSocket(const std::string& name) {
  return "@overseer-grpc-checkpoint-store-test-" + std::to_string(::getpid()) + "-" + name;
}

// On the store's host the client reads the files itself: the store hands out one
// token's descriptors, bytes never stream, and the values are bit-identical to the
// stream's (a client with local reads off).
TEST(GrpcCheckpointStoreTest, LocalReadsOnTheSameHostMatchTheStream) {
  ServedCheckpoint served("local", {(5 << 18) + 3, 11, 0, 1 << 20}, AbstractSocket("local"));
  auto local = ReadAll(served.remote());
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(served.remote()->local_reads(), 1);
  EXPECT_EQ(served.remote()->streamed_reads(), 0);
  EXPECT_EQ(served.local_reads()->reads_served(), 1);
  auto streaming = GrpcCheckpointStore::Connect(served.address(), /*local_reads=*/false);
  auto streamed = ReadAll(streaming.get());
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(streaming->streamed_reads(), 1);
  EXPECT_EQ(served.local_reads()->reads_served(), 1);
  ASSERT_EQ(local->size(), 4u);
  EXPECT_TRUE(*local == *streamed);
  for (size_t t = 0; t < local->size(); ++t) {
    EXPECT_EQ((*local)[t].first, "t" + std::to_string(t));
    EXPECT_TRUE((*local)[t].second == served.contents()[t]) << t;
  }
  // Errors of the checkpoint itself come back as the stream reports them.
  EXPECT_EQ(ReadAll(served.remote(), {"t0", "nope"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(served.remote()->streamed_reads(), 0);
}

// A store that serves no local reads (as one from before them) answers UNIMPLEMENTED,
// and one whose socket cannot be connected (here: its file is gone, as for a client
// on another host or in another container) gives a token nobody can redeem: either
// way the client streams instead.
TEST(GrpcCheckpointStoreTest, FallsBackToTheStream) {
  ServedCheckpoint plain("plain", {1 << 18, 5});
  auto got = ReadAll(plain.remote());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(plain.remote()->streamed_reads(), 1);
  EXPECT_EQ(plain.remote()->local_reads(), 0);
  EXPECT_TRUE((*got)[0].second == plain.contents()[0]);

  GoneSocket socket;
  ASSERT_TRUE(socket.made());
  ServedCheckpoint served("gone", {1 << 18, 5}, socket.path());
  ASSERT_TRUE(socket.Remove());
  got = ReadAll(served.remote());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(served.remote()->streamed_reads(), 1);
  EXPECT_EQ(served.remote()->local_reads(), 0);
  EXPECT_EQ(served.local_reads()->reads_served(), 0);
  EXPECT_TRUE((*got)[1].second == served.contents()[1]);
  // The unreachable socket is remembered: the next read streams without asking.
  ASSERT_TRUE(ReadAll(served.remote()).ok());
  EXPECT_EQ(served.remote()->streamed_reads(), 2);
  EXPECT_EQ(served.local_reads()->tokens_held(), 1);  // Only the first read's.
}

// The unreachable socket is left alone for five minutes of the client's clock, then
// asked for again.
TEST(GrpcCheckpointStoreTest, AnUnreachableSocketIsAskedForAgainAfterFiveMinutes) {
  GoneSocket socket;
  ASSERT_TRUE(socket.made());
  ServedCheckpoint served("gone_later", {1 << 10, 5}, socket.path());
  ASSERT_TRUE(socket.Remove());
  ASSERT_TRUE(ReadAll(served.remote()).ok());
  EXPECT_EQ(served.local_reads()->tokens_held(), 1);
  served.clock()->Advance(absl::Minutes(5) - absl::Seconds(1));
  ASSERT_TRUE(ReadAll(served.remote()).ok());
  EXPECT_EQ(served.local_reads()->tokens_held(), 1);  // Still within the backoff.
  served.clock()->Advance(absl::Seconds(1));
  ASSERT_TRUE(ReadAll(served.remote()).ok());
  EXPECT_EQ(served.local_reads()->tokens_held(), 2);  // Asked again.
  EXPECT_EQ(served.remote()->streamed_reads(), 3);
  EXPECT_EQ(served.remote()->local_reads(), 0);
}

// A flipped byte read through the local path: DATA_LOSS naming the tensor and the
// file, the tensors before it received, and no fallback to the stream.
TEST(GrpcCheckpointStoreTest, CorruptedTensorIsDataLossThroughTheLocalPath) {
  ServedCheckpoint served("local_corrupt", {1 << 20, 3 << 20, 7}, AbstractSocket("corrupt"));
  FlipByte(served.data_file(), (4 << 20) + (5 << 20));  // Inside t1.
  std::vector<std::string> names;
  absl::Status read = ReadAllNames(served.remote(), &names);
  EXPECT_EQ(read.code(), absl::StatusCode::kDataLoss) << read;
  EXPECT_NE(read.message().find("checksum of tensor t1"), std::string::npos) << read;
  EXPECT_NE(read.message().find(served.data_file()), std::string::npos) << read;
  EXPECT_EQ(names, std::vector<std::string>{"t0"});
  EXPECT_EQ(served.local_reads()->reads_served(), 1);
  EXPECT_EQ(served.remote()->streamed_reads(), 0);
  // The stream words it the same way.
  auto streaming = GrpcCheckpointStore::Connect(served.address(), /*local_reads=*/false);
  const absl::Status streamed = streaming->ReadTensors(
      "r", "model.ckpt-1", {},
      [](const TensorHeader&, absl::string_view) { return absl::OkStatus(); });
  EXPECT_EQ(streamed, read);
}

}  // namespace
}  // namespace overseer

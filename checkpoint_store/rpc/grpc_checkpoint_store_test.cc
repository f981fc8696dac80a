#include "checkpoint_store/rpc/grpc_checkpoint_store.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/local_read.h"
#include "checkpoint_store/local_read_server.h"
#include "checkpoint_store/location.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"
#include "core/logging.h"
#include "core/rpc/server_runner.h"
#include "core/status_macros.h"
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

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 13 + seed);
  return s;
}

// Writes checkpoint `name` of run "r" through `store`, one shard: tensor "t<i>" holds
// floats[i] floats, the bytes Pattern(4 * floats[i], i), sent from memory that starts
// `misalign` bytes past a 4 KiB boundary. Returns each tensor's bytes.
absl::StatusOr<std::vector<std::string>> WriteCheckpoint(CheckpointStoreInterface* store,
                                                         const std::string& name,
                                                         const std::vector<int64_t>& floats,
                                                         size_t misalign = 0) {
  BeginCheckpointRequest begin;
  begin.set_run("r");
  begin.set_name(name);
  begin.set_num_shards(1);
  ASSIGN_OR_RETURN(std::string id, store->BeginCheckpoint(begin));
  ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer, store->OpenShard(id, 0));
  std::vector<std::string> contents;
  for (size_t t = 0; t < floats.size(); ++t) {
    TensorHeader header;
    header.set_name("t" + std::to_string(t));
    header.set_dtype(DT_FLOAT);
    header.mutable_shape()->add_dim()->set_size(floats[t]);
    header.set_size(floats[t] * 4);
    contents.push_back(Pattern(static_cast<size_t>(header.size()), static_cast<int>(t)));
    const size_t blocks = (contents.back().size() + misalign) / 4096 + 1;
    std::unique_ptr<char, decltype(&std::free)> memory(
        static_cast<char*>(std::aligned_alloc(4096, blocks * 4096)), &std::free);
    std::memcpy(memory.get() + misalign, contents.back().data(), contents.back().size());
    RETURN_IF_ERROR(writer->AddTensor(
        header, absl::string_view(memory.get() + misalign, contents.back().size())));
  }
  RETURN_IF_ERROR(writer->Close());
  RETURN_IF_ERROR(store->CommitCheckpoint(id).status());
  return contents;
}

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
    auto contents = WriteCheckpoint(remote_.get(), "model.ckpt-1", floats);
    CHECK(contents.ok()) << contents.status();
    contents_ = *std::move(contents);
  }
  ~ServedCheckpoint() {
    runner_.RequestTermination();
    runner_.WaitForTermination();
  }

  std::string address() const { return "localhost:" + std::to_string(runner_.port()); }
  std::string data_file(const std::string& name = "model.ckpt-1") const {
    return root_ + "/r/" + name + ".data-00000-of-00001";
  }
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

std::string FileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// On the store's host the client writes each shard's data file itself: the file is
// byte for byte the one the WriteShard stream gives (the same layout, the same
// zeros before large tensors), from aligned memory (large tensors go to the disk from
// there) and from unaligned memory (staged), with O_DIRECT and through the page cache,
// and reads find the same bytes.
TEST(GrpcCheckpointStoreTest, LocalWritesMatchTheStreamByteForByte) {
  ServedCheckpoint served("local_write", {}, AbstractSocket("local_write"));
  // A large tensor not a whole number of blocks, small ones, an empty one, one of
  // exactly kAlignedTensorBytes after an odd offset, and one larger than the 4 MiB
  // staging buffer.
  const std::vector<int64_t> floats = {(5 << 18) + 3, 11, 0, 1 << 18, 1000, (3 << 20) + 1};
  auto streaming = GrpcCheckpointStore::Connect(served.address(), /*local_reads=*/false);
  auto streamed = WriteCheckpoint(streaming.get(), "streamed", floats);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(streaming->streamed_writes(), 1);
  const std::string want = FileBytes(served.data_file("streamed"));
  ASSERT_GT(want.size(), size_t{16} << 20);

  const int64_t before = served.remote()->local_writes();  // model.ckpt-1's
  for (const char* direct : {"1", "0"}) {
    ::setenv("OVERSEER_CHECKPOINT_DIRECT_WRITES", direct, 1);
    for (size_t misalign : {size_t{0}, size_t{4}}) {
      const std::string name = absl::StrCat("local-", direct, "-", misalign);
      auto written = WriteCheckpoint(served.remote(), name, floats, misalign);
      ASSERT_TRUE(written.ok()) << written.status();
      EXPECT_TRUE(FileBytes(served.data_file(name)) == want) << name;
      std::vector<std::string> got;
      ASSERT_TRUE(served.remote()
                      ->ReadTensors("r", name, {},
                                    [&](const TensorHeader&, absl::string_view data) {
                                      got.emplace_back(data);
                                      return absl::OkStatus();
                                    })
                      .ok());
      EXPECT_TRUE(got == *streamed) << name;
    }
  }
  ::unsetenv("OVERSEER_CHECKPOINT_DIRECT_WRITES");
  EXPECT_EQ(served.remote()->local_writes() - before, 4);
  EXPECT_EQ(served.remote()->streamed_writes(), 0);
  EXPECT_EQ(served.local_reads()->writes_served(), 5);
}

// A store without local reads answers UNIMPLEMENTED, and a socket nobody can reach
// leaves the token unredeemed: either way the shard streams, and the stream takes over
// a shard the store had opened for the local write.
TEST(GrpcCheckpointStoreTest, WritesFallBackToTheStream) {
  ServedCheckpoint plain("plain_write", {1 << 18, 5});
  EXPECT_EQ(plain.remote()->streamed_writes(), 1);
  EXPECT_EQ(plain.remote()->local_writes(), 0);

  GoneSocket socket;
  ASSERT_TRUE(socket.made());
  ServedCheckpoint served("gone_write", {}, socket.path());
  ASSERT_TRUE(socket.Remove());
  auto written = WriteCheckpoint(served.remote(), "model.ckpt-2", {1 << 18, 5});
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(served.remote()->streamed_writes(), 1);
  EXPECT_EQ(served.local_reads()->tokens_held(), 1);
  EXPECT_EQ(FileBytes(served.data_file("model.ckpt-2")).size(), (size_t{1} << 20) + 20);
}

// What a local writer reports is checked before the shard closes: tensors outside the
// file, overlapping, named twice or with a bad header are INVALID_ARGUMENT, a length the
// file does not have is DATA_LOSS, another token is FAILED_PRECONDITION; none closes the
// shard, and a writer that dies without closing is taken over, by the stream or by
// another local write.
TEST(GrpcCheckpointStoreTest, LocalWriteReportsAreChecked) {
  ServedCheckpoint served("local_checked", {}, AbstractSocket("local_checked"));
  BeginCheckpointRequest begin;
  begin.set_run("r");
  begin.set_name("model.ckpt-2");
  begin.set_num_shards(2);
  auto id = served.remote()->BeginCheckpoint(begin);
  ASSERT_TRUE(id.ok()) << id.status();
  auto stub = CheckpointStoreService::NewStub(
      grpc::CreateChannel(served.address(), grpc::InsecureChannelCredentials()));
  OpenLocalWriteRequest open;
  open.set_checkpoint_id(*id);
  open.set_shard_id(0);
  OpenLocalWriteResponse grant;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->OpenLocalWrite(&context, open, &grant).ok());
  }
  auto fds = RedeemLocalReadToken(grant.socket(), grant.token(), absl::Seconds(10));
  ASSERT_TRUE(fds.ok()) << fds.status();
  ASSERT_EQ(fds->size(), 1u);
  const std::string bytes(100, 'x');
  ASSERT_EQ(::pwrite((*fds)[0].get(), bytes.data(), bytes.size(), 0), 100);

  auto tensor = [](const std::string& name, int64_t floats, int64_t offset) {
    LocalWrittenTensor t;
    t.mutable_tensor()->set_name(name);
    t.mutable_tensor()->set_dtype(DT_FLOAT);
    t.mutable_tensor()->mutable_shape()->add_dim()->set_size(floats);
    t.mutable_tensor()->set_size(floats * 4);
    t.set_offset(offset);
    return t;
  };
  auto close_shard = [&](std::vector<LocalWrittenTensor> tensors, int64_t file_bytes,
                         const std::string& token) {
    CloseLocalWriteRequest request;
    request.set_checkpoint_id(*id);
    request.set_shard_id(0);
    request.set_token(token);
    request.set_file_bytes(file_bytes);
    for (auto& t : tensors) *request.add_tensors() = std::move(t);
    CloseLocalWriteResponse response;
    grpc::ClientContext context;
    return stub->CloseLocalWrite(&context, request, &response);
  };
  EXPECT_EQ(close_shard({tensor("a", 30, 0)}, 100, grant.token()).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // 120 bytes in a file of 100.
  EXPECT_EQ(close_shard({tensor("a", 10, 0), tensor("b", 10, 36)}, 100, grant.token()).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // Overlapping.
  EXPECT_EQ(close_shard({tensor("a", 5, 0), tensor("a", 5, 20)}, 100, grant.token()).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // Twice.
  LocalWrittenTensor bad = tensor("c", 5, 0);
  bad.mutable_tensor()->set_size(19);
  EXPECT_EQ(close_shard({bad}, 100, grant.token()).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(close_shard({tensor("a", 5, -4)}, 100, grant.token()).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(close_shard({tensor("a", 5, 0)}, 4096, grant.token()).error_code(),
            grpc::StatusCode::DATA_LOSS);  // The file holds 100 bytes.
  EXPECT_EQ(close_shard({tensor("a", 5, 0)}, 100, "another").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  // None of that closed the shard: the commit still waits for both.
  EXPECT_EQ(served.remote()->CommitCheckpoint(*id).status().code(),
            absl::StatusCode::kFailedPrecondition);

  // The writer "dies" without closing: a streaming writer takes shard 0 over, another
  // local write takes shard 1 over from one that never redeemed its token, and the
  // first writer's token is refused from then on.
  auto streaming = GrpcCheckpointStore::Connect(served.address(), /*local_reads=*/false);
  auto writer0 = streaming->OpenShard(*id, 0);
  ASSERT_TRUE(writer0.ok()) << writer0.status();
  TensorHeader header = tensor("w0", 3, 0).tensor();
  ASSERT_TRUE((*writer0)->AddTensor(header, std::string(12, 'a')).ok());
  ASSERT_TRUE((*writer0)->Close().ok());
  EXPECT_EQ(close_shard({tensor("a", 5, 0)}, 100, grant.token()).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  open.set_shard_id(1);
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->OpenLocalWrite(&context, open, &grant).ok());
  }
  auto writer1 = served.remote()->OpenShard(*id, 1);
  ASSERT_TRUE(writer1.ok()) << writer1.status();
  header.set_name("w1");
  ASSERT_TRUE((*writer1)->AddTensor(header, std::string(12, 'b')).ok());
  ASSERT_TRUE((*writer1)->Close().ok());
  ASSERT_TRUE(served.remote()->CommitCheckpoint(*id).ok());
  std::vector<std::string> got;
  ASSERT_TRUE(served.remote()
                  ->ReadTensors("r", "model.ckpt-2", {"w0", "w1"},
                                [&](const TensorHeader&, absl::string_view data) {
                                  got.emplace_back(data);
                                  return absl::OkStatus();
                                })
                  .ok());
  EXPECT_EQ(got, (std::vector<std::string>{std::string(12, 'a'), std::string(12, 'b')}));
}

}  // namespace
}  // namespace overseer

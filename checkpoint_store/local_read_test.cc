// Local reads in one process: a CheckpointStore on the POSIX file system, a
// LocalReadServer on a Unix socket, and the client's side of the protocol
// (RedeemLocalReadToken, ReadTensorsLocally) against it.

#include "checkpoint_store/local_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/bundle.h"
#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/local_read_server.h"
#include "checkpoint_store/testing/tensor_headers.h"
#include "core/io/crc32c.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(10);

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 13 + seed);
  return s;
}

using test::FloatHeader;

// Keeps every tensor it receives, by name, in order.
class Collector : public TensorReceiver {
 public:
  absl::StatusOr<char*> Allocate(const TensorHeader& header) override {
    pending_.assign(static_cast<size_t>(header.size()), '\0');
    return pending_.data();
  }
  absl::Status Received(const TensorHeader& header) override {
    names.push_back(header.name());
    tensors[header.name()] = pending_;
    return absl::OkStatus();
  }
  std::vector<std::string> names;
  std::map<std::string, std::string> tensors;

 private:
  std::string pending_;
};

class LocalReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    root_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", test);
    auto store = CheckpointStore::Open(FileSystem::Posix(), root_, Clock::Real());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    LocalReadServerOptions options;
    options.socket = absl::StrCat("@overseer-local-read-test-", ::getpid(), "-", test);
    options.clock = &clock_;
    options.max_tokens = 4;
    auto server = LocalReadServer::Start(store_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  // Saves checkpoint `name` of run "r": tensor "t<i>" of floats[i] floats in shard
  // i % num_shards.
  void Save(const std::string& name, const std::vector<int64_t>& floats, int num_shards) {
    BeginCheckpointRequest begin;
    begin.set_run("r");
    begin.set_name(name);
    begin.set_num_shards(num_shards);
    auto id = store_->BeginCheckpoint(begin);
    ASSERT_TRUE(id.ok()) << id.status();
    for (int shard = 0; shard < num_shards; ++shard) {
      auto writer = store_->OpenShard(*id, shard);
      ASSERT_TRUE(writer.ok());
      for (size_t t = shard; t < floats.size(); t += static_cast<size_t>(num_shards)) {
        const std::string bytes = Pattern(static_cast<size_t>(floats[t] * 4), static_cast<int>(t));
        ASSERT_TRUE((*writer)->AddTensor(FloatHeader(absl::StrCat("t", t), floats[t]), bytes).ok());
        contents_[absl::StrCat("t", t)] = bytes;
      }
      ASSERT_TRUE((*writer)->Close().ok());
    }
    ASSERT_TRUE(store_->CommitCheckpoint(*id).ok());
  }

  OpenLocalReadRequest Request(const std::string& name, std::vector<std::string> tensors = {}) {
    OpenLocalReadRequest request;
    request.set_run("r");
    request.set_name(name);
    for (const std::string& t : tensors) request.add_tensor_names(t);
    return request;
  }

  // Open, redeem and read into `collector`.
  absl::Status ReadLocally(const OpenLocalReadRequest& request, TensorReceiver* collector) {
    auto grant = server_->Open(request);
    if (!grant.ok()) return grant.status();
    auto files = RedeemLocalReadToken(grant->socket(), grant->token(), kTimeout);
    if (!files.ok()) return files.status();
    bool allocated;
    return ReadTensorsLocally(request.name(), *grant, *files, collector, &allocated);
  }

  std::string root_;
  test::FakeClock clock_;
  std::unique_ptr<CheckpointStore> store_;
  std::unique_ptr<LocalReadServer> server_;
  std::map<std::string, std::string> contents_;
};

// Every tensor of a two-shard checkpoint, read through descriptors, is bit-identical
// to what the store itself reads, in the same order; the server counts the read.
TEST_F(LocalReadTest, ReadsWhatTheStoreReads) {
  Save("model.ckpt-1", {(3 << 18) + 5, 7, 0, 1 << 18}, 2);
  Collector local;
  ASSERT_TRUE(ReadLocally(Request("model.ckpt-1"), &local).ok());
  Collector direct;
  ASSERT_TRUE(store_->ReadTensorsInto("r", "model.ckpt-1", {}, &direct).ok());
  EXPECT_EQ(local.names, direct.names);
  EXPECT_EQ(local.names, (std::vector<std::string>{"t0", "t1", "t2", "t3"}));
  EXPECT_TRUE(local.tensors == direct.tensors);
  EXPECT_TRUE(local.tensors == contents_);
  EXPECT_EQ(server_->reads_served(), 1);
  int64_t bytes = 0;
  for (const auto& [name, t] : contents_) bytes += static_cast<int64_t>(t.size());
  EXPECT_EQ(server_->bytes_served(), bytes);
  EXPECT_EQ(server_->tokens_held(), 0);

  // A subset in the order asked, holding only the shard it needs.
  auto grant = server_->Open(Request("model.ckpt-1", {"t3", "t1"}));
  ASSERT_TRUE(grant.ok()) << grant.status();
  EXPECT_EQ(grant->files_size(), 1);
  EXPECT_EQ(grant->files(0), root_ + "/r/model.ckpt-1.data-00001-of-00002");
  Collector subset;
  auto files = RedeemLocalReadToken(grant->socket(), grant->token(), kTimeout);
  ASSERT_TRUE(files.ok()) << files.status();
  bool allocated;
  ASSERT_TRUE(ReadTensorsLocally("model.ckpt-1", *grant, *files, &subset, &allocated).ok());
  EXPECT_EQ(subset.names, (std::vector<std::string>{"t3", "t1"}));
  EXPECT_EQ(subset.tensors["t3"], contents_["t3"]);
}

// A token is redeemed once; a reused, unknown or expired one is refused, and the
// server goes on serving.
TEST_F(LocalReadTest, TokensAreSingleUseAndExpire) {
  Save("model.ckpt-1", {100}, 1);
  auto grant = server_->Open(Request("model.ckpt-1"));
  ASSERT_TRUE(grant.ok()) << grant.status();
  EXPECT_EQ(grant->token().size(), 32u);
  ASSERT_TRUE(RedeemLocalReadToken(grant->socket(), grant->token(), kTimeout).ok());
  auto again = RedeemLocalReadToken(grant->socket(), grant->token(), kTimeout);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kPermissionDenied) << again.status();
  auto bogus = RedeemLocalReadToken(grant->socket(), std::string(32, '0'), kTimeout);
  EXPECT_EQ(bogus.status().code(), absl::StatusCode::kPermissionDenied);
  auto junk = RedeemLocalReadToken(grant->socket(), std::string(3000, 'x'), kTimeout);
  EXPECT_EQ(junk.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(server_->tokens_refused(), 3);

  auto late = server_->Open(Request("model.ckpt-1"));
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(server_->tokens_held(), 1);
  clock_.Advance(absl::Seconds(31));
  EXPECT_EQ(RedeemLocalReadToken(late->socket(), late->token(), kTimeout).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(server_->tokens_held(), 0);  // Its descriptors are closed.

  Collector collector;
  ASSERT_TRUE(ReadLocally(Request("model.ckpt-1"), &collector).ok());
  EXPECT_EQ(collector.tensors["t0"], contents_["t0"]);
  EXPECT_EQ(server_->reads_served(), 2);
}

// At most max_tokens wait to be redeemed (each holds files open).
TEST_F(LocalReadTest, TokensWaitingAreBounded) {
  Save("model.ckpt-1", {10}, 1);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(server_->Open(Request("model.ckpt-1")).ok());
  EXPECT_EQ(server_->Open(Request("model.ckpt-1")).status().code(),
            absl::StatusCode::kResourceExhausted);
  clock_.Advance(absl::Minutes(1));
  EXPECT_TRUE(server_->Open(Request("model.ckpt-1")).ok());
}

// Open reports what a streaming read would, before handing out anything.
TEST_F(LocalReadTest, OpenChecksRunCheckpointAndTensors) {
  Save("model.ckpt-1", {10}, 1);
  OpenLocalReadRequest escape = Request("model.ckpt-1");
  escape.set_run("../r");
  EXPECT_EQ(server_->Open(escape).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server_->Open(Request("../model.ckpt-1")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server_->Open(Request("model.ckpt-2")).status().code(), absl::StatusCode::kNotFound);
  auto missing = server_->Open(Request("model.ckpt-1", {"t0", "nope"}));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  ASSERT_EQ(::unlink((root_ + "/r/model.ckpt-1.data-00000-of-00001").c_str()), 0);
  auto gone = server_->Open(Request("model.ckpt-1"));
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(gone.status().message().find("model.ckpt-1.data-00000-of-00001"), std::string::npos);
  EXPECT_EQ(server_->tokens_held(), 0);
}

// A flipped byte: the tensors before it are received, the damaged one never is, and
// the error is DATA_LOSS naming the tensor and the file, as the store's own read says.
TEST_F(LocalReadTest, CorruptedDataIsDataLossNamingTensorAndFile) {
  Save("model.ckpt-1", {1 << 18, 3 << 18, 7}, 1);
  const std::string data = root_ + "/r/model.ckpt-1.data-00000-of-00001";
  {
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    const std::streamoff inside_t1 = (1 << 20) + (2 << 20) + 5;
    f.seekg(inside_t1);
    const char byte = static_cast<char>(f.get());
    f.seekp(inside_t1);
    f.put(static_cast<char>(byte ^ 0x10));
  }
  Collector local;
  const absl::Status read = ReadLocally(Request("model.ckpt-1"), &local);
  EXPECT_EQ(read.code(), absl::StatusCode::kDataLoss) << read;
  EXPECT_EQ(local.names, std::vector<std::string>{"t0"});
  Collector direct;
  const absl::Status stored = store_->ReadTensorsInto("r", "model.ckpt-1", {}, &direct);
  // Same code and words: "checksum of tensor t1 does not match in <file>: ...".
  EXPECT_EQ(read, stored);
  EXPECT_NE(read.message().find("tensor t1"), std::string::npos) << read;
  EXPECT_NE(read.message().find(data), std::string::npos) << read;

  // A truncated file: DATA_LOSS naming the file.
  ASSERT_EQ(::truncate(data.c_str(), 100), 0);
  Collector truncated;
  const absl::Status short_read = ReadLocally(Request("model.ckpt-1"), &truncated);
  EXPECT_EQ(short_read.code(), absl::StatusCode::kDataLoss) << short_read;
  EXPECT_NE(short_read.message().find(data + " is truncated"), std::string::npos) << short_read;
}

// The descriptors are opened when the read is granted: deleting the checkpoint
// afterwards (as retention may) does not break the read.
TEST_F(LocalReadTest, DeletedAfterOpenIsStillRead) {
  Save("model.ckpt-1", {1 << 16, 3}, 2);
  auto grant = server_->Open(Request("model.ckpt-1"));
  ASSERT_TRUE(grant.ok()) << grant.status();
  ASSERT_TRUE(store_->DeleteCheckpoint("r", "model.ckpt-1").ok());
  auto files = RedeemLocalReadToken(grant->socket(), grant->token(), kTimeout);
  ASSERT_TRUE(files.ok()) << files.status();
  Collector collector;
  bool allocated;
  ASSERT_TRUE(ReadTensorsLocally("model.ckpt-1", *grant, *files, &collector, &allocated).ok());
  EXPECT_TRUE(collector.tensors == contents_);
  EXPECT_EQ(server_->Open(Request("model.ckpt-1")).status().code(), absl::StatusCode::kNotFound);
}

// More files than one packet carries, and a tensor beyond 4 GiB into its (sparse)
// file: offsets and sizes are 64-bit throughout.
TEST_F(LocalReadTest, ManyShardsAndOffsetsBeyondFourGiB) {
  const int shards = kMaxFdsPerPacket + 3;
  std::vector<int64_t> floats(static_cast<size_t>(shards), 3);
  Save("model.ckpt-1", floats, shards);
  Collector collector;
  ASSERT_TRUE(ReadLocally(Request("model.ckpt-1"), &collector).ok());
  EXPECT_EQ(collector.names.size(), static_cast<size_t>(shards));
  EXPECT_TRUE(collector.tensors == contents_);

  const std::string prefix = root_ + "/r/model.ckpt-2";
  const std::string bytes = Pattern(3 << 20, 9);
  const int64_t offset = (int64_t{5} << 30) + 17;
  {
    const int fd = ::open(DataFilename(prefix, 0, 1).c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), offset), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
  }
  BundleEntryProto entry;
  entry.set_dtype(DT_FLOAT);
  entry.mutable_shape()->add_dim()->set_size(static_cast<int64_t>(bytes.size() / 4));
  entry.set_offset(offset);
  entry.set_size(static_cast<int64_t>(bytes.size()));
  entry.set_crc32c(crc32c::Mask(crc32c::Value(bytes)));
  ASSERT_TRUE(WriteIndexFile(FileSystem::Posix(), IndexFilename(prefix), 1, {{"far", entry}}).ok());
  Collector far;
  const absl::Status read = ReadLocally(Request("model.ckpt-2"), &far);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_TRUE(far.tensors["far"] == bytes);
}

// A tensor of more than 2 GiB (2 GiB + 3 MiB, mostly a hole of a sparse file, with
// patterns at both ends) is read whole and its CRC32C checked: no 32-bit sizes.
TEST_F(LocalReadTest, TensorOfMoreThanTwoGiB) {
  const uint64_t size = (uint64_t{2} << 30) + (3 << 20);
  const std::string head = Pattern(1 << 20, 1);
  const std::string tail = Pattern(1 << 20, 2);
  const std::string prefix = root_ + "/r/model.ckpt-3";
  ASSERT_TRUE(FileSystem::Posix()->CreateDirs(root_ + "/r").ok());
  {
    const int fd = ::open(DataFilename(prefix, 0, 1).c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
    ASSERT_EQ(::pwrite(fd, tail.data(), tail.size(), static_cast<off_t>(size - tail.size())),
              static_cast<ssize_t>(tail.size()));
    ::close(fd);
  }
  uint32_t crc = crc32c::Extend(0, head);
  const std::string zeros(1 << 20, '\0');
  for (uint64_t done = head.size(); done < size - tail.size(); done += zeros.size()) {
    crc = crc32c::Extend(crc, zeros);
  }
  crc = crc32c::Extend(crc, tail);
  BundleEntryProto entry;
  entry.set_dtype(DT_FLOAT);
  entry.mutable_shape()->add_dim()->set_size(static_cast<int64_t>(size / 4));
  entry.set_size(static_cast<int64_t>(size));
  entry.set_crc32c(crc32c::Mask(crc));
  ASSERT_TRUE(WriteIndexFile(FileSystem::Posix(), IndexFilename(prefix), 1, {{"big", entry}}).ok());

  class Big : public TensorReceiver {
   public:
    absl::StatusOr<char*> Allocate(const TensorHeader& header) override {
      size = static_cast<uint64_t>(header.size());
      data.reset(new char[size]);
      return data.get();
    }
    absl::Status Received(const TensorHeader&) override {
      received = true;
      return absl::OkStatus();
    }
    std::unique_ptr<char[]> data;
    uint64_t size = 0;
    bool received = false;
  } big;
  const absl::Status read = ReadLocally(Request("model.ckpt-3"), &big);
  ASSERT_TRUE(read.ok()) << read;
  ASSERT_TRUE(big.received);
  ASSERT_EQ(big.size, size);
  EXPECT_EQ(std::memcmp(big.data.get(), head.data(), head.size()), 0);
  EXPECT_EQ(std::memcmp(big.data.get() + size - tail.size(), tail.data(), tail.size()), 0);
  EXPECT_EQ(big.data[size / 2], '\0');
}

// Socket files: a stale one (its server killed) is replaced, a live one is not taken
// over, the file goes with the server, and over-long paths are refused.
TEST(LocalReadSocketTest, SocketFiles) {
  // A socket path holds at most 107 bytes, which TEST_TMPDIR under a default bazel
  // output base already exceeds: the socket goes in a fresh directory in /tmp.
  char dir[] = "/tmp/overseer-lr-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = absl::StrCat(dir, "/lr.sock");
  struct RemoveDir {
    ~RemoveDir() {
      ::unlink(path.c_str());
      ::rmdir(dir);
    }
    const std::string& path;
    const char* dir;
  } remove_dir{path, dir};
  {
    auto first = ListenLocalReadSocket(path);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(ListenLocalReadSocket(path).status().code(), absl::StatusCode::kAlreadyExists);
    EXPECT_TRUE(ConnectLocalReadSocket(path).ok());
  }
  // The first listener is closed but its file stays: as after a kill -9.
  ASSERT_EQ(::access(path.c_str(), F_OK), 0);
  EXPECT_EQ(ConnectLocalReadSocket(path).status().code(), absl::StatusCode::kUnavailable);
  auto root = CheckpointStore::Open(
      FileSystem::Posix(), absl::StrCat(std::getenv("TEST_TMPDIR"), "/sockets"), Clock::Real());
  ASSERT_TRUE(root.ok());
  LocalReadServerOptions options;
  options.socket = path;
  options.clock = Clock::Real();
  {
    auto server = LocalReadServer::Start(root->get(), options);
    ASSERT_TRUE(server.ok()) << server.status();
    EXPECT_TRUE(ConnectLocalReadSocket(path).ok());
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  EXPECT_EQ(ConnectLocalReadSocket(path).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ListenLocalReadSocket("/" + std::string(120, 'x')).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ListenLocalReadSocket("").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

#include "checkpoint_store/rpc/grpc_checkpoint_store.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/location.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store_service.h"
#include "core/rpc/server_runner.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(GrpcCheckpointStoreTest, SaveReadLatestOverTheWire) {
  const std::string root = std::string(std::getenv("TEST_TMPDIR")) + "/grpc";
  auto store = CheckpointStore::Open(FileSystem::Posix(), root);
  ASSERT_TRUE(store.ok());
  GrpcCheckpointStoreService service(store->get());
  ServerRunnerOptions options;
  options.component = "checkpoint_store";
  options.metrics_port = -1;
  options.handle_signals = false;
  ServerRunner runner(options);
  runner.AddService(&service);
  ASSERT_TRUE(runner.Start().ok());

  auto where = ResolveCheckpointLocation("grpc://localhost:" + std::to_string(runner.port()) +
                                         "/exp/run1");
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
  auto store = CheckpointStore::Open(FileSystem::Posix(), root);
  ASSERT_TRUE(store.ok());
  GrpcCheckpointStoreService service(store->get());
  ServerRunnerOptions options;
  options.component = "checkpoint_store";
  options.metrics_port = -1;
  options.handle_signals = false;
  options.fixed_stream_window_bytes = kCheckpointStoreStreamWindowBytes;
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
    absl::Status read = remote->ReadTensors(
        "big", "model.ckpt-1", {"t0", "t1", "t2", "t3"},
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
                                         << got[t].size() << " bytes, wrote "
                                         << contents[t].size();
    }
  }
  runner.RequestTermination();
  runner.WaitForTermination();
}

}  // namespace
}  // namespace overseer

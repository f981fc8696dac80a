#include "checkpoint_store/checkpoint_store.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "checkpoint_store/bundle.h"
#include "checkpoint_store/state_file.h"
#include "checkpoint_store/testing/crashing_file_system.h"
#include "checkpoint_store/testing/tensor_headers.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using test::FloatHeader;

std::string Bytes(int64_t n, char seed) {
  std::string s(static_cast<size_t>(n * 4), '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(seed + i * 7);
  return s;
}

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  std::unique_ptr<CheckpointStore> OpenStore(FileSystem* fs) {
    auto store = CheckpointStore::Open(fs, root_, &clock_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // Saves checkpoint `name` of `run` with two shards of two tensors each, whose bytes
  // depend on `seed`.
  absl::Status Save(CheckpointStoreInterface* store, const std::string& run,
                    const std::string& name, char seed, int max_to_keep = 5, double keep_hours = 0,
                    const std::string& meta_graph = "") {
    BeginCheckpointRequest begin;
    begin.set_run(run);
    begin.set_name(name);
    begin.set_meta_graph(meta_graph);
    begin.set_num_shards(2);
    begin.mutable_retention()->set_max_to_keep(max_to_keep);
    begin.mutable_retention()->set_keep_checkpoint_every_n_hours(keep_hours);
    absl::StatusOr<std::string> id = store->BeginCheckpoint(begin);
    if (!id.ok()) return id.status();
    for (int shard = 0; shard < 2; ++shard) {
      auto writer = store->OpenShard(*id, shard);
      if (!writer.ok()) return writer.status();
      for (int t = 0; t < 2; ++t) {
        const std::string tensor = "ps" + std::to_string(shard) + "/w" + std::to_string(t);
        absl::Status s =
            (*writer)->AddTensor(FloatHeader(tensor, 1000 + t), Bytes(1000 + t, seed + shard + t));
        if (!s.ok()) return s;
      }
      absl::Status s = (*writer)->Close();
      if (!s.ok()) return s;
    }
    return store->CommitCheckpoint(*id).status();
  }

  // Reads every tensor of `name` and checks it holds what Save(seed) wrote.
  void ExpectContents(CheckpointStoreInterface* store, const std::string& run,
                      const std::string& name, char seed) {
    int seen = 0;
    absl::Status s =
        store->ReadTensors(run, name, {}, [&](const TensorHeader& h, absl::string_view data) {
          const int shard = h.name()[2] - '0';
          const int t = h.name()[5] - '0';
          EXPECT_EQ(data, Bytes(1000 + t, seed + shard + t)) << h.name();
          ++seen;
          return absl::OkStatus();
        });
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(seen, 4);
  }

  std::vector<std::string> Names(CheckpointStoreInterface* store, const std::string& run) {
    std::vector<std::string> names;
    auto list = store->ListCheckpoints(run);
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return names;
    for (const auto& info : *list) names.push_back(info.name());
    return names;
  }

  FileSystem* fs_ = FileSystem::Posix();
  test::FakeClock clock_{absl::FromUnixSeconds(1700000000)};
  std::string root_;
};

TEST_F(CheckpointStoreTest, SaveLatestListRead) {
  auto store = OpenStore(fs_);
  auto none = store->LatestCheckpoint("train");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(Save(store.get(), "train", "model.ckpt-10", 'a').ok());
  clock_.Advance(absl::Seconds(5));
  ASSERT_TRUE(Save(store.get(), "train", "model.ckpt-20", 'b').ok());
  auto latest = store->LatestCheckpoint("train");
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->name(), "model.ckpt-20");
  EXPECT_EQ((*latest)->step(), 20);
  EXPECT_EQ(Names(store.get(), "train"),
            (std::vector<std::string>{"model.ckpt-10", "model.ckpt-20"}));
  ExpectContents(store.get(), "train", "model.ckpt-10", 'a');
  ExpectContents(store.get(), "train", "model.ckpt-20", 'b');
  // TensorFlow's files and state file.
  EXPECT_TRUE(fs_->FileExists(root_ + "/train/model.ckpt-20.index").ok());
  EXPECT_TRUE(fs_->FileExists(root_ + "/train/model.ckpt-20.data-00001-of-00002").ok());
  auto state = ReadStateFile(fs_, root_ + "/train");
  ASSERT_TRUE(state.ok() && state->has_value());
  EXPECT_EQ((*state)->model_checkpoint_path(), "model.ckpt-20");
  EXPECT_EQ((*state)->all_model_checkpoint_timestamps_size(), 2);
  EXPECT_DOUBLE_EQ((*state)->all_model_checkpoint_timestamps(1), 1700000005.0);
  auto tensors = store->ListTensors("train", "model.ckpt-20");
  ASSERT_TRUE(tensors.ok());
  EXPECT_EQ(tensors->size(), 4u);
  // A subset.
  int seen = 0;
  ASSERT_TRUE(store
                  ->ReadTensors("train", "model.ckpt-20", {"ps1/w0"},
                                [&](const TensorHeader& h, absl::string_view) {
                                  EXPECT_EQ(h.name(), "ps1/w0");
                                  ++seen;
                                  return absl::OkStatus();
                                })
                  .ok());
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(store->ReadTensors("train", "model.ckpt-20", {"nope"}, nullptr).code(),
            absl::StatusCode::kNotFound);
}

// A restarted store forgot its pending checkpoints: an id the earlier run gave is
// ABORTED (begin again), one it never gave stays NOT_FOUND.
TEST_F(CheckpointStoreTest, AnIdFromBeforeARestartIsAborted) {
  BeginCheckpointRequest begin;
  begin.set_run("r");
  begin.set_name("model.ckpt-1");
  begin.set_num_shards(1);
  std::string id;
  {
    auto first = OpenStore(FileSystem::Posix());
    ASSERT_NE(first, nullptr);
    auto begun = first->BeginCheckpoint(begin);
    ASSERT_TRUE(begun.ok()) << begun.status();
    id = *begun;
  }
  auto second = OpenStore(FileSystem::Posix());
  ASSERT_NE(second, nullptr);
  auto again = second->BeginCheckpoint(begin);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_NE(id.substr(0, 8), again->substr(0, 8));  // 1 in 2^32 that they match.
  EXPECT_EQ(second->OpenShard(id, 0).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(second->CommitCheckpoint(id).status().code(), absl::StatusCode::kAborted);
  const std::string never = again->substr(0, 8) + "ffffffff";  // This run's, never given.
  ASSERT_NE(never, *again);
  EXPECT_EQ(second->OpenShard(never, 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(second->CommitCheckpoint("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CheckpointStoreTest, RetentionKeepsMaxToKeepAndEveryNHours) {
  auto store = OpenStore(fs_);
  for (int step = 1; step <= 6; ++step) {
    ASSERT_TRUE(Save(store.get(), "r", "model.ckpt-" + std::to_string(step), 'a', 2, 1.0).ok());
    clock_.Advance(absl::Minutes(30));
  }
  EXPECT_EQ(Names(store.get(), "r"), (std::vector<std::string>{"model.ckpt-5", "model.ckpt-6"}));
  // Step 1 (t0) is not an hour past the start; step 3 (t0+1h) is kept, then step 5 would
  // be but is still listed; 2 and 4 were deleted.
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-1.index").ok());
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-2.index").ok());
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-2.data-00000-of-00002").ok());
  EXPECT_TRUE(fs_->FileExists(root_ + "/r/model.ckpt-3.index").ok());
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-4.index").ok());
}

// A commit that retires a checkpoint hides it at once (index and meta graph deleted,
// data files renamed to temp names) and deletes its data files after replying; a
// store that opens after a crash in between removes them.
TEST_F(CheckpointStoreTest, RetiredDataFilesAreDeletedAfterTheCommit) {
  auto store = OpenStore(fs_);
  ASSERT_TRUE(Save(store.get(), "r", "model.ckpt-1", 'a', 1, 0, "meta 1").ok());
  ASSERT_TRUE(Save(store.get(), "r", "model.ckpt-2", 'b', 1, 0, "meta 2").ok());
  EXPECT_EQ(Names(store.get(), "r"), (std::vector<std::string>{"model.ckpt-2"}));
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-1.index").ok());
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-1.meta").ok());
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-1.data-00000-of-00002").ok());
  store->WaitForRetiredFiles();
  auto files = fs_->ListDir(root_ + "/r");
  ASSERT_TRUE(files.ok());
  std::sort(files->begin(), files->end());
  EXPECT_EQ(*files, (std::vector<std::string>{"checkpoint", "model.ckpt-2.data-00000-of-00002",
                                              "model.ckpt-2.data-00001-of-00002",
                                              "model.ckpt-2.index", "model.ckpt-2.meta"}));
  ExpectContents(store.get(), "r", "model.ckpt-2", 'b');

  // A crash after the commit, before the deletes: the renamed files are left over.
  const std::string left = root_ + "/r/model.ckpt-2.data-00000-of-00002.tempstate0123456789abcdef";
  ASSERT_TRUE(fs_->RenameFile(root_ + "/r/model.ckpt-2.data-00000-of-00002", left).ok());
  store.reset();
  store = OpenStore(fs_);
  EXPECT_FALSE(fs_->FileExists(left).ok());
}

// Writes `contents` over the file at `path` (a damaged state file or index).
void Overwrite(const std::string& path, const std::string& contents) {
  ASSERT_TRUE(FileSystem::Posix()->DeleteFile(path).ok()) << path;
  auto file = FileSystem::Posix()->NewWritableFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append(contents).ok());
  ASSERT_TRUE((*file)->Close().ok());
}

std::string MetricsText(prometheus::Registry* registry) {
  return prometheus::TextSerializer().Serialize(registry->Collect());
}

TEST_F(CheckpointStoreTest, AGarbageStateFileIsRebuiltFromTheRunsCheckpoints) {
  prometheus::Registry registry;
  auto opened = CheckpointStore::Open(fs_, root_, &clock_, &registry);
  ASSERT_TRUE(opened.ok()) << opened.status();
  CheckpointStore* store = opened->get();
  for (int step : {10, 20, 30}) {
    ASSERT_TRUE(Save(store, "r", "model.ckpt-" + std::to_string(step), 'a', 3).ok());
  }
  Overwrite(root_ + "/r/checkpoint", "model_checkpoint_path: \"model.ckpt-30\"\ngarbage {{{\n");
  // Reads see the checkpoints in the directory, newest step last.
  auto latest = store->LatestCheckpoint("r");
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->name(), "model.ckpt-30");
  EXPECT_EQ(Names(store, "r"),
            (std::vector<std::string>{"model.ckpt-10", "model.ckpt-20", "model.ckpt-30"}));
  EXPECT_TRUE(absl::StrContains(MetricsText(&registry),
                                "overseer_checkpoint_store_state_file_rebuilds_total 2"))
      << MetricsText(&registry);
  // The next commit writes a good state file and still retires the oldest ones.
  ASSERT_TRUE(Save(store, "r", "model.ckpt-40", 'b', 2).ok());
  EXPECT_EQ(Names(store, "r"), (std::vector<std::string>{"model.ckpt-30", "model.ckpt-40"}));
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-10.index").ok());
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-20.index").ok());
  EXPECT_FALSE(fs_->FileExists(root_ + "/r/model.ckpt-20.data-00000-of-00002").ok());
  auto state = ReadStateFile(fs_, root_ + "/r");
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_TRUE(state->has_value());
  EXPECT_EQ((*state)->model_checkpoint_path(), "model.ckpt-40");
  ExpectContents(store, "r", "model.ckpt-40", 'b');
}

TEST_F(CheckpointStoreTest, LatestSkipsACheckpointWhoseIndexIsCorrupt) {
  prometheus::Registry registry;
  auto opened = CheckpointStore::Open(fs_, root_, &clock_, &registry);
  ASSERT_TRUE(opened.ok()) << opened.status();
  CheckpointStore* store = opened->get();
  ASSERT_TRUE(Save(store, "r", "model.ckpt-1", 'a').ok());
  ASSERT_TRUE(Save(store, "r", "model.ckpt-2", 'b').ok());
  const std::string index = root_ + "/r/model.ckpt-2.index";
  auto size = fs_->GetFileSize(index);
  ASSERT_TRUE(size.ok()) << size.status();
  Overwrite(index, std::string(*size, 'x'));
  auto latest = store->LatestCheckpoint("r");
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->name(), "model.ckpt-1");
  ExpectContents(store, "r", "model.ckpt-1", 'a');
  EXPECT_TRUE(absl::StrContains(MetricsText(&registry),
                                "overseer_checkpoint_store_unreadable_checkpoints_skipped_total 1"))
      << MetricsText(&registry);
  // With every checkpoint damaged, the newest one's error: never a silent fresh start.
  Overwrite(root_ + "/r/model.ckpt-1.index", "");
  latest = store->LatestCheckpoint("r");
  EXPECT_EQ(latest.status().code(), absl::StatusCode::kDataLoss) << latest.status();
  EXPECT_TRUE(absl::StrContains(latest.status().message(), "model.ckpt-2")) << latest.status();
}

TEST_F(CheckpointStoreTest, ResavingANameReplacesIt) {
  auto store = OpenStore(fs_);
  ASSERT_TRUE(Save(store.get(), "", "ckpt-1", 'a').ok());
  ASSERT_TRUE(Save(store.get(), "", "ckpt-1", 'z').ok());
  EXPECT_EQ(Names(store.get(), ""), (std::vector<std::string>{"ckpt-1"}));
  ExpectContents(store.get(), "", "ckpt-1", 'z');
}

TEST_F(CheckpointStoreTest, BadRunsAndNamesAreInvalidArgument) {
  auto store = OpenStore(fs_);
  for (const char* run : {"../x", "/abs", "a/../b", "a//b", "a b", "x/", ".", "a/.."}) {
    BeginCheckpointRequest begin;
    begin.set_run(run);
    begin.set_name("model.ckpt-1");
    begin.set_num_shards(1);
    EXPECT_EQ(store->BeginCheckpoint(begin).status().code(), absl::StatusCode::kInvalidArgument)
        << run;
    EXPECT_EQ(store->LatestCheckpoint(run).status().code(), absl::StatusCode::kInvalidArgument);
  }
  for (const char* name : {"", "..", "a/b", "checkpoint", "x.tempstate1", "checkpoint.tmp1"}) {
    BeginCheckpointRequest begin;
    begin.set_name(name);
    begin.set_num_shards(1);
    EXPECT_EQ(store->BeginCheckpoint(begin).status().code(), absl::StatusCode::kInvalidArgument)
        << name;
    // A saver's list names checkpoints the store may delete: the same rules.
    BeginCheckpointRequest listed;
    listed.set_name("model.ckpt-1");
    listed.set_num_shards(1);
    listed.mutable_retention()->set_use_saver_list(true);
    listed.mutable_retention()->add_saver_checkpoints()->set_name(name);
    absl::Status s = store->BeginCheckpoint(listed).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find("in the saver's list"), std::string::npos) << s;
  }
  BeginCheckpointRequest zero;
  zero.set_name("c-1");
  EXPECT_EQ(store->BeginCheckpoint(zero).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs_->FileExists(root_ + "/../x").ok());
}

TEST_F(CheckpointStoreTest, CommitNeedsEveryShardAndAbortCleansUp) {
  auto store = OpenStore(fs_);
  BeginCheckpointRequest begin;
  begin.set_run("r");
  begin.set_name("c-1");
  begin.set_num_shards(2);
  auto id = store->BeginCheckpoint(begin);
  ASSERT_TRUE(id.ok());
  auto w = store->OpenShard(*id, 0);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(store->OpenShard(*id, 0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->OpenShard(*id, 2).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*w)->AddTensor(FloatHeader("a", 3), Bytes(3, 'x')).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto commit = store->CommitCheckpoint(*id);
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(commit.status().message().find("shard(s) 1"), std::string::npos) << commit.status();
  EXPECT_EQ(store->pending_checkpoints(), 1);
  ASSERT_TRUE(store->AbortCheckpoint(*id).ok());
  EXPECT_EQ(store->pending_checkpoints(), 0);
  EXPECT_EQ(store->CommitCheckpoint(*id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*fs_->ListDir(root_ + "/r"), std::vector<std::string>{});
  // An abandoned shard writer can be replaced.
  id = store->BeginCheckpoint(begin);
  { auto abandoned = store->OpenShard(*id, 0); }
  EXPECT_TRUE(store->OpenShard(*id, 0).ok());
}

TEST_F(CheckpointStoreTest, ConcurrentSavesToOneRunNeverInterleave) {
  auto store = OpenStore(fs_);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      EXPECT_TRUE(Save(store.get(), "r", "c-" + std::to_string(i), 'a' + i, 10).ok());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(Names(store.get(), "r").size(), 4u);
  for (int i = 0; i < 4; ++i) ExpectContents(store.get(), "r", "c-" + std::to_string(i), 'a' + i);
}

TEST_F(CheckpointStoreTest, DeleteRemovesFilesAndEntry) {
  auto store = OpenStore(fs_);
  ASSERT_TRUE(Save(store.get(), "r", "c-1", 'a').ok());
  ASSERT_TRUE(Save(store.get(), "r", "c-2", 'b').ok());
  ASSERT_TRUE(store->DeleteCheckpoint("r", "c-2").ok());
  EXPECT_EQ(Names(store.get(), "r"), std::vector<std::string>{"c-1"});
  EXPECT_EQ((*store->LatestCheckpoint("r"))->name(), "c-1");
  EXPECT_EQ(store->DeleteCheckpoint("r", "c-2").code(), absl::StatusCode::kNotFound);
}

// The newest checkpoint of each run, for alerts on a job that stopped checkpointing:
// set by commits and deletes, and found again by a restarted store.
TEST_F(CheckpointStoreTest, MetricsNameEachRunsNewestCheckpoint) {
  prometheus::Registry registry;
  auto metrics = [&registry] { return prometheus::TextSerializer().Serialize(registry.Collect()); };
  const std::string step = "overseer_checkpoint_store_latest_checkpoint_step";
  const std::string time = "overseer_checkpoint_store_latest_checkpoint_timestamp_seconds";
  {
    auto store = CheckpointStore::Open(fs_, root_, &clock_, &registry);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_FALSE(absl::StrContains(metrics(), step + "{"));
    ASSERT_TRUE(Save(store->get(), "exp/a", "model.ckpt-100", 'a').ok());
    clock_.Advance(absl::Seconds(10));
    ASSERT_TRUE(Save(store->get(), "exp/a", "model.ckpt-200", 'b').ok());
    ASSERT_TRUE(Save(store->get(), "b", "model.ckpt-7", 'c').ok());
    std::string text = metrics();
    EXPECT_TRUE(absl::StrContains(text, step + "{run=\"exp/a\"} 200\n")) << text;
    EXPECT_TRUE(absl::StrContains(text, time + "{run=\"exp/a\"} 1700000010\n")) << text;
    EXPECT_TRUE(absl::StrContains(text, step + "{run=\"b\"} 7\n")) << text;
    ASSERT_TRUE((*store)->DeleteCheckpoint("exp/a", "model.ckpt-200").ok());
    text = metrics();
    EXPECT_TRUE(absl::StrContains(text, step + "{run=\"exp/a\"} 100\n")) << text;
    EXPECT_TRUE(absl::StrContains(text, time + "{run=\"exp/a\"} 1700000000\n")) << text;
    ASSERT_TRUE((*store)->DeleteCheckpoint("b", "model.ckpt-7").ok());
    EXPECT_FALSE(absl::StrContains(metrics(), "{run=\"b\"}")) << metrics();
  }
  prometheus::Registry restarted;
  auto store = CheckpointStore::Open(fs_, root_, &clock_, &restarted);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string text = prometheus::TextSerializer().Serialize(restarted.Collect());
  EXPECT_TRUE(absl::StrContains(text, step + "{run=\"exp/a\"} 100\n")) << text;
  EXPECT_FALSE(absl::StrContains(text, "{run=\"b\"}")) << text;
}

// A crash at every mutating file operation of a save never leaves a torn checkpoint
// visible: after a restart, latest is the previous checkpoint or the new one, complete.
// Opening removes only what the store's own naming produces (a crashed save's temp
// files, data files whose index never came), and descends only into real run
// directories: a file that merely contains ".tempstate", or anything behind a symbolic
// link, stays. Before, any name containing ".tempstate" went, in every directory
// reachable through links.
TEST_F(CheckpointStoreTest, OpeningRemovesOnlyItsOwnLeftovers) {
  const std::string outside = root_ + "_outside";
  std::filesystem::create_directories(root_ + "/r");
  std::filesystem::create_directories(outside);
  const std::string id = "0123456789abcdef";
  const std::vector<std::string> own = {"checkpoint.tmp" + id, "model.ckpt-1.index.tempstate" + id,
                                        "model.ckpt-1.meta.tempstate" + id,
                                        "r/model.ckpt-2.data-00000-of-00002.tempstate" + id,
                                        "r/model.ckpt-3.data-00001-of-00002"};
  const std::vector<std::string> others = {"notes.tempstate",
                                           "x.tempstate1",
                                           "checkpoint.tmpfoo",
                                           "model.ckpt-1.index.tempstate1234",
                                           "r/bad name.data-00000-of-00001",
                                           "r/notes.meta",
                                           "r/.data-00000-of-00001"};
  for (const std::string& name : own) std::ofstream(root_ + "/" + name) << "x";
  for (const std::string& name : others) std::ofstream(root_ + "/" + name) << "x";
  std::ofstream(outside + "/model.ckpt-1.data-00000-of-00001.tempstate" + id) << "x";
  std::ofstream(outside + "/model.ckpt-4.data-00000-of-00001") << "x";
  std::filesystem::create_directory_symlink(outside, root_ + "/linked");

  auto store = OpenStore(FileSystem::Posix());
  ASSERT_NE(store, nullptr);
  for (const std::string& name : own) {
    EXPECT_FALSE(std::filesystem::exists(root_ + "/" + name)) << name;
  }
  for (const std::string& name : others) {
    EXPECT_TRUE(std::filesystem::exists(root_ + "/" + name)) << name;
  }
  EXPECT_TRUE(
      std::filesystem::exists(outside + "/model.ckpt-1.data-00000-of-00001.tempstate" + id));
  EXPECT_TRUE(std::filesystem::exists(outside + "/model.ckpt-4.data-00000-of-00001"));
}

std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A checkpoint's meta graph ("<name>.meta", TensorFlow's Saver's) is written when it
// commits, replaced or removed when the name is saved again, and retired with it.
TEST_F(CheckpointStoreTest, MetaGraphIsCommittedAndRetiredWithItsCheckpoint) {
  auto store = OpenStore(FileSystem::Posix());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(Save(store.get(), "", "model.ckpt-1", 'a', 2, 0, "meta one").ok());
  EXPECT_EQ(FileText(root_ + "/model.ckpt-1.meta"), "meta one");
  ASSERT_TRUE(Save(store.get(), "", "model.ckpt-2", 'b', 2, 0, "meta two").ok());
  ASSERT_TRUE(Save(store.get(), "", "model.ckpt-3", 'c', 2, 0, "meta three").ok());
  EXPECT_EQ(Names(store.get(), ""), (std::vector<std::string>{"model.ckpt-2", "model.ckpt-3"}));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/model.ckpt-1.meta"));
  EXPECT_EQ(FileText(root_ + "/model.ckpt-2.meta"), "meta two");
  // Saved again without one: the old meta graph goes with the old files.
  ASSERT_TRUE(Save(store.get(), "", "model.ckpt-3", 'd', 2).ok());
  EXPECT_FALSE(std::filesystem::exists(root_ + "/model.ckpt-3.meta"));

  // An aborted checkpoint leaves none.
  BeginCheckpointRequest begin;
  begin.set_name("model.ckpt-4");
  begin.set_num_shards(1);
  begin.set_meta_graph("meta four");
  auto id = store->BeginCheckpoint(begin);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(store->AbortCheckpoint(*id).ok());
  EXPECT_FALSE(std::filesystem::exists(root_ + "/model.ckpt-4.meta"));

  // At most 32 MiB.
  begin.set_meta_graph(std::string((size_t{32} << 20) + 1, 'x'));
  absl::Status big = store->BeginCheckpoint(begin).status();
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument) << big;
  EXPECT_TRUE(absl::StrContains(big.message(), "meta graph")) << big;
}

// A symbolic link inside the root that leads out of it is not followed: a run behind
// it can be neither written nor read.
TEST_F(CheckpointStoreTest, ARunBehindASymbolicLinkOutOfTheRootIsRefused) {
  const std::string outside = root_ + "_outside";
  std::filesystem::create_directories(outside);
  auto store = OpenStore(FileSystem::Posix());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(Save(store.get(), "inside", "model.ckpt-1", 'a').ok());
  std::filesystem::create_directory_symlink(outside, root_ + "/escape");
  std::filesystem::create_directory_symlink(root_ + "/inside", root_ + "/alias");

  absl::Status saved = Save(store.get(), "escape", "model.ckpt-1", 'a');
  EXPECT_EQ(saved.code(), absl::StatusCode::kPermissionDenied) << saved;
  EXPECT_TRUE(std::filesystem::is_empty(outside));
  EXPECT_EQ(store->LatestCheckpoint("escape").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(store->ListCheckpoints("escape/run").status().code(),
            absl::StatusCode::kPermissionDenied);
  // The message shows the path within the root, not the server's directories.
  EXPECT_FALSE(absl::StrContains(saved.message(), std::getenv("TEST_TMPDIR"))) << saved;
  // A link that stays inside the root works.
  auto latest = store->LatestCheckpoint("alias");
  ASSERT_TRUE(latest.ok() && latest->has_value()) << latest.status();
  ExpectContents(store.get(), "alias", "model.ckpt-1", 'a');
}

TEST_F(CheckpointStoreTest, CrashAtEveryPointLeavesNoTornCheckpoint) {
  int crash_at = 1;
  for (;; ++crash_at) {
    root_ = std::string(std::getenv("TEST_TMPDIR")) + "/crash" + std::to_string(crash_at);
    {
      auto store = OpenStore(fs_);
      ASSERT_TRUE(Save(store.get(), "r", "model.ckpt-1", 'a', 5, 0, "meta of model.ckpt-1").ok());
      ASSERT_TRUE(Save(store.get(), "r", "model.ckpt-2", 'b', 2, 0, "meta of model.ckpt-2").ok());
    }
    test::CrashingFileSystem crashing(fs_, crash_at);
    {
      // Opening (leftover removal) and saving 3, which retires 1 (max_to_keep 2).
      auto store = CheckpointStore::Open(&crashing, root_, &clock_);
      if (store.ok()) {
        Save(store->get(), "r", "model.ckpt-3", 'c', 2, 0, "meta of model.ckpt-3").IgnoreError();
      }
    }
    auto store = OpenStore(fs_);  // The restart.
    auto latest = store->LatestCheckpoint("r");
    ASSERT_TRUE(latest.ok() && latest->has_value()) << "crash at " << crash_at;
    const std::string name = (*latest)->name();
    ASSERT_TRUE(name == "model.ckpt-2" || name == "model.ckpt-3") << name;
    ExpectContents(store.get(), "r", name, name == "model.ckpt-2" ? 'b' : 'c');
    auto listed = store->ListCheckpoints("r");
    ASSERT_TRUE(listed.ok());
    for (const auto& info : *listed) {
      const char seed = info.name() == "model.ckpt-1"   ? 'a'
                        : info.name() == "model.ckpt-2" ? 'b'
                                                        : 'c';
      ExpectContents(store.get(), "r", info.name(), seed);
    }
    auto files = fs_->ListDir(root_ + "/r");
    ASSERT_TRUE(files.ok());
    for (const std::string& file : *files) {
      EXPECT_EQ(file.find("tempstate"), std::string::npos) << file;
      EXPECT_EQ(file.find("checkpoint.tmp"), std::string::npos) << file;
      // A meta graph is whole, and only beside a complete checkpoint.
      if (absl::EndsWith(file, ".meta")) {
        const std::string ckpt = file.substr(0, file.size() - 5);
        EXPECT_TRUE(std::filesystem::exists(root_ + "/r/" + ckpt + ".index"))
            << file << " at crash point " << crash_at;
        EXPECT_EQ(FileText(root_ + "/r/" + file), "meta of " + ckpt) << crash_at;
      }
    }
    if (!crashing.crashed()) break;  // The save ran to the end: every point was tried.
  }
  EXPECT_GT(crash_at, 20);
}

}  // namespace
}  // namespace overseer

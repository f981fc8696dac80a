#include "client/training/saver.h"

#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "checkpoint_store/checkpoint_store.h"
#include "checkpoint_store/location.h"
#include "client/graph/ops_input.h"
#include "client/graph/ops_state.h"
#include "client/session/client_session.h"
#include "core/resource_mgr.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

class SaverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  // A model with w (float [2,3]) and step (int64), in a session of its own.
  struct Model {
    Scope root = Scope::NewRootScope();
    Variable w, step;
    ResourceMgr resources;
    std::unique_ptr<ClientSession> session;
  };
  std::unique_ptr<Model> NewModel(bool with_step = true) {
    auto m = std::make_unique<Model>();
    m->w = MakeVariable(m->root.WithOpName("layer/w"),
                        Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, TensorShape({2, 3})));
    if (with_step) m->step = MakeVariable(m->root.WithOpName("step"), Tensor::Scalar<int64_t>(0));
    SessionOptions options;
    options.resource_mgr = &m->resources;
    m->session = *ClientSession::Create(m->root, options);
    return m;
  }
  void Set(Model* m, std::vector<float> w, int64_t step) {
    Output a = ops::Assign(m->root, m->w.ref, Tensor::FromVector<float>(w, TensorShape({2, 3})));
    Output b = ops::Assign(m->root, m->step.ref, Tensor::Scalar<int64_t>(step));
    absl::Status s = m->session->Run({}, {}, {Operation(a.node()), Operation(b.node())}, nullptr);
    ASSERT_TRUE(s.ok()) << s;
  }
  std::vector<float> W(Model* m) {
    std::vector<Tensor> out;
    EXPECT_TRUE(m->session->Run({m->w.value}, &out).ok());
    return std::vector<float>(out[0].data<float>(), out[0].data<float>() + 6);
  }

  std::string dir_;
};

TEST_F(SaverTest, SaveThenRestoreIntoAFreshSession) {
  auto m = NewModel();
  auto saver = Saver::Create(m->root, {});
  ASSERT_TRUE(saver.ok()) << saver.status();
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  Set(m.get(), {1, 2, 3, 4, 5, 6}, 42);
  auto path = (*saver)->Save(m->session->session(), dir_ + "/model.ckpt", 42);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, dir_ + "/model.ckpt-42");
  EXPECT_TRUE(CheckpointExists(*path));
  EXPECT_FALSE(CheckpointExists(dir_ + "/model.ckpt-43"));
  EXPECT_EQ(**LatestCheckpoint(dir_), *path);

  auto fresh = NewModel();  // Uninitialised variables in another ResourceMgr.
  auto fresh_saver = Saver::Create(fresh->root, {});
  ASSERT_TRUE(fresh_saver.ok());
  ASSERT_TRUE(fresh->session->ExtendIfNeeded().ok());
  ASSERT_TRUE((*fresh_saver)->Restore(fresh->session->session(), *path).ok());
  EXPECT_EQ(W(fresh.get()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  std::vector<Tensor> out;
  ASSERT_TRUE(fresh->session->Run({fresh->step.value}, &out).ok());
  EXPECT_EQ(out[0].scalar<int64_t>(), 42);
  EXPECT_EQ((*fresh_saver)->Restore(fresh->session->session(), dir_ + "/nope-1").code(),
            absl::StatusCode::kNotFound);
}

// A store that records the CPU scheduling policy of the threads that open its shards.
class PolicyRecordingStore : public CheckpointStoreInterface {
 public:
  explicit PolicyRecordingStore(std::unique_ptr<CheckpointStore> inner)
      : inner_(std::move(inner)) {}
  static std::vector<int>* policies() {
    static auto* const p = new std::vector<int>();
    return p;
  }
  absl::StatusOr<std::string> BeginCheckpoint(const BeginCheckpointRequest& r) override {
    return inner_->BeginCheckpoint(r);
  }
  absl::StatusOr<std::unique_ptr<ShardWriter>> OpenShard(const std::string& id,
                                                         int shard) override {
    ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> inner, inner_->OpenShard(id, shard));
    return std::unique_ptr<ShardWriter>(new Writer(std::move(inner)));
  }
  absl::StatusOr<CheckpointInfo> CommitCheckpoint(const std::string& id) override {
    return inner_->CommitCheckpoint(id);
  }
  absl::Status AbortCheckpoint(const std::string& id) override {
    return inner_->AbortCheckpoint(id);
  }
  absl::StatusOr<std::optional<CheckpointInfo>> LatestCheckpoint(const std::string& run) override {
    return inner_->LatestCheckpoint(run);
  }
  absl::StatusOr<std::vector<CheckpointInfo>> ListCheckpoints(const std::string& run) override {
    return inner_->ListCheckpoints(run);
  }
  absl::StatusOr<std::vector<TensorHeader>> ListTensors(const std::string& run,
                                                        const std::string& name) override {
    return inner_->ListTensors(run, name);
  }
  absl::Status ReadTensorsInto(const std::string& run, const std::string& name,
                               const std::vector<std::string>& names,
                               TensorReceiver* receiver) override {
    return inner_->ReadTensorsInto(run, name, names, receiver);
  }
  absl::Status DeleteCheckpoint(const std::string& run, const std::string& name) override {
    return inner_->DeleteCheckpoint(run, name);
  }

 private:
  // Records the policy of the thread that appends each tensor's bytes.
  class Writer : public ShardWriter {
   public:
    explicit Writer(std::unique_ptr<ShardWriter> inner) : inner_(std::move(inner)) {}
    absl::Status BeginTensor(const TensorHeader& header) override {
      return inner_->BeginTensor(header);
    }
    absl::Status Append(absl::string_view data) override {
      policies()->push_back(::sched_getscheduler(0));
      return inner_->Append(data);
    }
    absl::Status Close() override { return inner_->Close(); }

   private:
    std::unique_ptr<ShardWriter> inner_;
  };

  std::unique_ptr<CheckpointStore> inner_;
};

// A save writes its tensors' bytes from a thread at idle CPU priority (SCHED_IDLE), so
// that it takes only the CPU that training leaves; the caller's thread keeps its policy.
TEST_F(SaverTest, ShardsAreWrittenAtIdlePriority) {
  const std::string root = dir_;
  RegisterCheckpointStoreScheme(
      "policy",
      [root](const std::string&) -> absl::StatusOr<std::unique_ptr<CheckpointStoreInterface>> {
        ASSIGN_OR_RETURN(std::unique_ptr<CheckpointStore> store,
                         CheckpointStore::Open(FileSystem::Posix(), root, Clock::Real()));
        return std::unique_ptr<CheckpointStoreInterface>(
            new PolicyRecordingStore(std::move(store)));
      });
  auto m = NewModel();
  auto saver = Saver::Create(m->root, {});
  ASSERT_TRUE(saver.ok()) << saver.status();
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  Set(m.get(), {1, 2, 3, 4, 5, 6}, 7);
  auto path = (*saver)->Save(m->session->session(), "policy://local/run/model.ckpt", 7);
  ASSERT_TRUE(path.ok()) << path.status();
  // w and step (the model's two variables), each in one piece.
  EXPECT_EQ(*PolicyRecordingStore::policies(), (std::vector<int>{SCHED_IDLE, SCHED_IDLE}));
  EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER);
  EXPECT_TRUE(CheckpointExists(dir_ + "/run/model.ckpt-7"));
}

// The variable "layer/w" of a model's resources.
Var* WeightVar(ResourceMgr* resources) {
  auto var = resources->Lookup<Var>(ResourceMgr::kDefaultContainer, "layer/w");
  EXPECT_TRUE(var.ok()) << var.status();
  return var.ok() ? var->get() : nullptr;
}

const float* WeightBuffer(Var* var) {
  absl::MutexLock lock(var->mu());
  return var->is_initialized() ? var->tensor()->data<float>() : nullptr;
}

// A restore writes into the variables where they are (no second copy of the model), and
// a reader that still holds the old value keeps it.
TEST_F(SaverTest, RestoreWritesIntoTheVariablesInPlace) {
  auto m = NewModel();
  auto saver = Saver::Create(m->root, {});
  ASSERT_TRUE(saver.ok()) << saver.status();
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  Set(m.get(), {1, 2, 3, 4, 5, 6}, 7);
  auto path = (*saver)->Save(m->session->session(), dir_ + "/model.ckpt", 7);
  ASSERT_TRUE(path.ok()) << path.status();
  Set(m.get(), {9, 9, 9, 9, 9, 9}, 8);
  // An update in place gives the variable a buffer of its own (Assign shared the
  // Const's), as every training step's update does.
  Output update = ops::AssignAdd(
      m->root, m->w.ref, Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, TensorShape({2, 3})));
  ASSERT_TRUE(m->session->Run({}, {}, {Operation(update.node())}, nullptr).ok());
  Var* w = WeightVar(&m->resources);
  ASSERT_NE(w, nullptr);
  const float* before = WeightBuffer(w);
  ASSERT_TRUE((*saver)->Restore(m->session->session(), *path).ok());
  EXPECT_EQ(W(m.get()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(WeightBuffer(w), before);  // The same buffer.

  Set(m.get(), {9, 9, 9, 9, 9, 9}, 8);
  Tensor reader;
  {
    absl::MutexLock lock(w->mu());
    reader = *w->tensor();  // Shares the buffer, as a step's read does.
  }
  ASSERT_TRUE((*saver)->Restore(m->session->session(), *path).ok());
  EXPECT_EQ(W(m.get()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(reader.data<float>()[0], 9.0f);  // Copy-on-write: the reader's value stays.
}

// A restore that fails part way leaves the variables it began to write uninitialized,
// never half old and half new; the others keep their values.
TEST_F(SaverTest, AFailedRestoreLeavesWhatItBeganUninitialized) {
  auto m = NewModel();
  auto saver = Saver::Create(m->root, {});
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  Set(m.get(), {1, 2, 3, 4, 5, 6}, 7);
  auto path = (*saver)->Save(m->session->session(), dir_ + "/model.ckpt", 7);
  ASSERT_TRUE(path.ok()) << path.status();

  // The same names, but "step" is a float [2] here: w restores, step cannot.
  auto other = std::make_unique<Model>();
  other->w = MakeVariable(other->root.WithOpName("layer/w"),
                          Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, TensorShape({2, 3})));
  other->step = MakeVariable(other->root.WithOpName("step"), Tensor::FromVector<float>({5, 5}));
  SessionOptions options;
  options.resource_mgr = &other->resources;
  other->session = *ClientSession::Create(other->root, options);
  auto other_saver = Saver::Create(other->root, {});
  ASSERT_TRUE(other_saver.ok()) << other_saver.status();
  ASSERT_TRUE(other->session->Run({}, {}, {GlobalVariablesInitializer(other->root)}, nullptr).ok());
  absl::Status restored = (*other_saver)->Restore(other->session->session(), *path);
  EXPECT_EQ(restored.code(), absl::StatusCode::kInvalidArgument) << restored;
  EXPECT_EQ(WeightBuffer(WeightVar(&other->resources)), nullptr);  // Begun: uninitialized.
  std::vector<Tensor> out;
  ASSERT_TRUE(other->session->Run({other->step.value}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[1], 5.0f);  // Not begun: kept.
}

TEST_F(SaverTest, MaxToKeepAndRecover) {
  auto m = NewModel();
  SaverOptions options;
  options.max_to_keep = 2;
  auto saver = Saver::Create(m->root, options);
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE((*saver)->Save(m->session->session(), dir_ + "/model.ckpt", step).ok());
  }
  EXPECT_EQ((*saver)->last_checkpoints(),
            (std::vector<std::string>{dir_ + "/model.ckpt-2", dir_ + "/model.ckpt-3"}));
  EXPECT_FALSE(CheckpointExists(dir_ + "/model.ckpt-1"));
  auto other = Saver::Create(m->root, {});
  ASSERT_TRUE((*other)->RecoverLastCheckpoints(dir_).ok());
  EXPECT_EQ((*other)->last_checkpoints().size(), 2u);
}

// The checkpoint state file's lists: model_checkpoint_path first, then
// all_model_checkpoint_paths, as the names written.
std::vector<std::string> StateFile(const std::string& dir) {
  std::ifstream in(dir + "/checkpoint");
  std::vector<std::string> latest, all;
  for (std::string line; std::getline(in, line);) {
    const size_t open = line.find('"'), close = line.rfind('"');
    if (open == std::string::npos || close <= open) continue;
    const std::string name = line.substr(open + 1, close - open - 1);
    (line.rfind("model_checkpoint_path", 0) == 0 ? latest : all).push_back(name);
  }
  latest.insert(latest.end(), all.begin(), all.end());
  return latest;
}

// TensorFlow's saver_test MaxToKeepTest.testNonSharded: each Saver trims and writes
// its own list; a copy given the first's list follows it, a fresh one knows nothing.
TEST_F(SaverTest, EachSaverKeepsItsOwnListAsTensorFlow) {
  auto m = NewModel();
  SaverOptions options;
  options.max_to_keep = 2;
  auto save = std::move(*Saver::Create(m->root, options));
  // A second like the first, given its list later; a third that never learns it.
  auto save2 = std::move(*Saver::Create(m->root, options));
  auto save3 = std::move(*Saver::Create(m->root, options));
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  Session* session = m->session->session();
  auto saved = [&](Saver* saver, const std::string& name) {
    absl::StatusOr<std::string> path = saver->Save(session, dir_ + "/" + name);
    EXPECT_TRUE(path.ok()) << path.status();
    return path.value_or("");
  };
  EXPECT_TRUE(save->last_checkpoints().empty());
  std::string s1 = saved(save.get(), "s1");
  EXPECT_EQ(save->last_checkpoints(), (std::vector<std::string>{s1}));
  EXPECT_EQ(StateFile(dir_), (std::vector<std::string>{"s1", "s1"}));
  std::string s2 = saved(save.get(), "s2");
  EXPECT_EQ(save->last_checkpoints(), (std::vector<std::string>{s1, s2}));
  std::string s3 = saved(save.get(), "s3");
  EXPECT_EQ(save->last_checkpoints(), (std::vector<std::string>{s2, s3}));
  EXPECT_FALSE(CheckpointExists(s1));
  EXPECT_EQ(StateFile(dir_), (std::vector<std::string>{"s3", "s2", "s3"}));

  save2->SetLastCheckpoints(save->last_checkpoints());

  // The first: s2 again moves to the end; then s1 pushes s3 out.
  s2 = saved(save.get(), "s2");
  EXPECT_EQ(save->last_checkpoints(), (std::vector<std::string>{s3, s2}));
  EXPECT_TRUE(CheckpointExists(s3));
  EXPECT_EQ(StateFile(dir_), (std::vector<std::string>{"s2", "s3", "s2"}));
  s1 = saved(save.get(), "s1");
  EXPECT_EQ(save->last_checkpoints(), (std::vector<std::string>{s2, s1}));
  EXPECT_FALSE(CheckpointExists(s3));
  EXPECT_EQ(StateFile(dir_), (std::vector<std::string>{"s1", "s2", "s1"}));

  // The second, with the first's earlier list [s2, s3].
  s2 = saved(save2.get(), "s2");
  EXPECT_EQ(save2->last_checkpoints(), (std::vector<std::string>{s3, s2}));
  EXPECT_TRUE(CheckpointExists(s1));  // Saved by the first, not in this list.
  EXPECT_EQ(StateFile(dir_), (std::vector<std::string>{"s2", "s3", "s2"}));
  s1 = saved(save2.get(), "s1");
  EXPECT_EQ(save2->last_checkpoints(), (std::vector<std::string>{s2, s1}));
  EXPECT_EQ(StateFile(dir_), (std::vector<std::string>{"s1", "s2", "s1"}));

  // The third knows nothing of earlier saves: it lists only its own, deletes none.
  s2 = saved(save3.get(), "s2");
  EXPECT_EQ(save3->last_checkpoints(), (std::vector<std::string>{s2}));
  EXPECT_TRUE(CheckpointExists(s1));
  EXPECT_EQ(StateFile(dir_), (std::vector<std::string>{"s2", "s2"}));
  s1 = saved(save3.get(), "s1");
  EXPECT_EQ(save3->last_checkpoints(), (std::vector<std::string>{s2, s1}));
  EXPECT_TRUE(CheckpointExists(s2));
  EXPECT_EQ(StateFile(dir_), (std::vector<std::string>{"s1", "s2", "s1"}));
}

// TensorFlow's testNoMaxToKeep: max_to_keep 0 keeps no list and deletes nothing; the
// state file names only the newest.
TEST_F(SaverTest, MaxToKeepZeroKeepsNoListAsTensorFlow) {
  auto m = NewModel();
  SaverOptions options;
  options.max_to_keep = 0;
  auto saver = std::move(*Saver::Create(m->root, options));
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  std::vector<std::string> paths;
  for (int step = 1; step <= 3; ++step) {
    absl::StatusOr<std::string> path =
        saver->Save(m->session->session(), dir_ + "/model.ckpt", step);
    ASSERT_TRUE(path.ok()) << path.status();
    paths.push_back(*path);
    EXPECT_TRUE(saver->last_checkpoints().empty());
  }
  for (const std::string& path : paths) EXPECT_TRUE(CheckpointExists(path)) << path;
  EXPECT_EQ(StateFile(dir_), (std::vector<std::string>{"model.ckpt-3", "model.ckpt-3"}));
  auto latest = LatestCheckpoint(dir_);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ(**latest, paths.back());
}

// RetentionList::kStore: the store's list, whoever saved; max_to_keep 0 keeps and lists
// every checkpoint.
TEST_F(SaverTest, StoreListIsEveryCheckpointOfTheLocation) {
  auto m = NewModel();
  SaverOptions options;
  options.max_to_keep = 2;
  options.retention_list = SaverOptions::RetentionList::kStore;
  auto first = std::move(*Saver::Create(m->root, options));
  auto second = std::move(*Saver::Create(m->root, options));
  options.max_to_keep = 0;
  auto all = std::move(*Saver::Create(m->root, options));
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  Session* session = m->session->session();
  ASSERT_TRUE(first->Save(session, dir_ + "/model.ckpt", 1).ok());
  ASSERT_TRUE(first->Save(session, dir_ + "/model.ckpt", 2).ok());
  ASSERT_TRUE(second->Save(session, dir_ + "/model.ckpt", 3).ok());
  EXPECT_EQ(second->last_checkpoints(),
            (std::vector<std::string>{dir_ + "/model.ckpt-2", dir_ + "/model.ckpt-3"}));
  EXPECT_FALSE(CheckpointExists(dir_ + "/model.ckpt-1"));

  ASSERT_TRUE(all->Save(session, dir_ + "/model.ckpt", 4).ok());
  EXPECT_EQ(all->last_checkpoints().size(), 3u);
  EXPECT_TRUE(CheckpointExists(dir_ + "/model.ckpt-2"));
}

TEST_F(SaverTest, SubsetSaverInitialisesPartOfAModel) {
  auto m = NewModel();
  auto saver = Saver::Create(m->root, {});
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  Set(m.get(), {6, 5, 4, 3, 2, 1}, 7);
  auto path = (*saver)->Save(m->session->session(), dir_ + "/pre.ckpt", 7);
  ASSERT_TRUE(path.ok());

  // A bigger model: w from the checkpoint, a new head from its initializer.
  auto fine = NewModel(/*with_step=*/false);
  Variable head = MakeVariable(fine->root.WithOpName("head"), Tensor::FromVector<float>({9, 9}));
  SaverOptions subset;
  subset.var_list = {fine->w};
  auto partial = Saver::Create(fine->root, subset);
  ASSERT_TRUE(partial.ok());
  ASSERT_TRUE(fine->session->ExtendIfNeeded().ok());
  ASSERT_TRUE((*partial)->Restore(fine->session->session(), *path).ok());
  ASSERT_TRUE(fine->session->Run({}, {}, {Operation(head.initializer)}, nullptr).ok());
  EXPECT_EQ(W(fine.get()), (std::vector<float>{6, 5, 4, 3, 2, 1}));
  // A variable absent from the checkpoint is NOT_FOUND naming it.
  SaverOptions missing;
  missing.var_list = {head};
  auto bad = Saver::Create(fine->root, missing);
  ASSERT_TRUE(fine->session->ExtendIfNeeded().ok());
  absl::Status s = (*bad)->Restore(fine->session->session(), *path);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("head"), std::string::npos) << s;
}

TEST_F(SaverTest, BadPrefixes) {
  auto m = NewModel();
  auto saver = Saver::Create(m->root, {});
  ASSERT_TRUE(m->session->Run({}, {}, {GlobalVariablesInitializer(m->root)}, nullptr).ok());
  EXPECT_EQ((*saver)->Save(m->session->session(), "noslash", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*saver)->Save(m->session->session(), dir_ + "/bad name", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*saver)->Save(m->session->session(), "zz://x/y/m", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// As TensorFlow's Saver: no variables is an error unless allow_empty, which makes a
// saver that writes and restores nothing.
TEST_F(SaverTest, NoVariablesNeedAllowEmpty) {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("c"), 1.0f);
  EXPECT_EQ(Saver::Create(root, {}).status().code(), absl::StatusCode::kInvalidArgument);
  SaverOptions options;
  options.allow_empty = true;
  auto saver = Saver::Create(root, options);
  ASSERT_TRUE(saver.ok()) << saver.status();
  EXPECT_TRUE((*saver)->empty());
  ResourceMgr resources;
  SessionOptions session_options;
  session_options.resource_mgr = &resources;
  auto session = *ClientSession::Create(root, session_options);
  absl::StatusOr<std::string> path = (*saver)->Save(session->session(), dir_ + "/model", 1);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, "");
  EXPECT_TRUE((*saver)->last_checkpoints().empty());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/checkpoint"));
  EXPECT_TRUE((*saver)->Restore(session->session(), dir_ + "/model-1").ok());
}

}  // namespace
}  // namespace overseer

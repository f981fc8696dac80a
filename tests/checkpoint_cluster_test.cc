// The sharded checkpoint path across real processes: a master_server, two ps and a
// worker (LocalCluster) and a checkpoint_store_server (ServerProcess). Each ps runs its
// own CheckpointSaveShard and streams its variables straight to the store; the save
// yields one checkpoint with two data shards and one merged index. Both ps are then
// killed (-9) and restarted, and a new session restores bit-identical values.

#include <signal.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkpoint_store/location.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_input.h"
#include "client/graph/ops_math.h"
#include "client/graph/ops_state.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"
#include "client/session/session.h"
#include "client/training/saver.h"
#include "core/rpc/testing/http_get.h"
#include "gtest/gtest.h"
#include "testing/local_cluster.h"
#include "testing/server_process.h"

namespace overseer {
namespace {

constexpr int kPsTasks = 2;
constexpr int64_t kElements = 1000;

std::string PsDevice(int k) { return absl::StrCat("/job:ps/replica:0/task:", k); }

// w_k (float [kElements]) and a step counter live on ps k; each train step moves every
// w_k towards a target by a tenth, computed on the worker.
struct Model {
  Scope root = Scope::NewRootScope();
  std::vector<Variable> weights;
  Variable steps;
  Operation init;
  Operation train;
  std::unique_ptr<Saver> saver;
  GraphDef graph;

  Model() {
    std::vector<Operation> updates;
    Scope worker = root.WithDevice("/job:worker/replica:0/task:0");
    for (int k = 0; k < kPsTasks; ++k) {
      std::vector<float> initial(kElements), target(kElements);
      for (int64_t i = 0; i < kElements; ++i) {
        initial[i] = 0.001f * static_cast<float>(i * (k + 1));
        target[i] = 1.0f / static_cast<float>(i + k + 1);
      }
      Scope ps = root.WithDevice(PsDevice(k));
      weights.push_back(MakeVariable(ps.WithOpName(absl::StrCat("w", k)),
                                     Tensor::FromVector<float>(initial, TensorShape({kElements}))));
      Output t = ops::Const(worker, Tensor::FromVector<float>(target, TensorShape({kElements})));
      Output delta = ops::Mul(worker, ops::Sub(worker, weights[k].value, t),
                              ops::Const(worker, Tensor::Scalar<float>(0.1f)));
      updates.push_back(Operation(ops::AssignSub(ps, weights[k].ref, delta).node()));
    }
    steps =
        MakeVariable(root.WithDevice(PsDevice(1)).WithOpName("steps"), Tensor::Scalar<int64_t>(0));
    updates.push_back(Operation(
        ops::AssignAdd(root.WithDevice(PsDevice(1)), steps.ref, Tensor::Scalar<int64_t>(1))
            .node()));
    train = ops::NoOp(root.WithOpName("train").WithControlDependencies(updates));
    init = GlobalVariablesInitializer(root);
    SaverOptions options;
    options.sharded = true;
    auto created = Saver::Create(root, options);
    EXPECT_TRUE(created.ok()) << created.status();
    if (created.ok()) saver = *std::move(created);
    EXPECT_TRUE(root.ToGraphDef(&graph).ok());
  }

  // The variables' values: w0, w1, steps.
  std::vector<Tensor> Values(Session* session) {
    std::vector<Tensor> out;
    absl::Status s = session->Run(
        {}, {weights[0].value.name(), weights[1].value.name(), steps.value.name()}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }
};

bool BitIdentical(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const size_t n = static_cast<size_t>(a.NumElements()) * DataTypeSize(a.dtype());
  switch (a.dtype()) {
    case DT_FLOAT:
      return std::memcmp(a.data<float>(), b.data<float>(), n) == 0;
    case DT_INT64:
      return std::memcmp(a.data<int64_t>(), b.data<int64_t>(), n) == 0;
    default:
      return false;
  }
}

class CheckpointClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/store");
    store_ = std::make_unique<test::ServerProcess>("checkpoint_store/checkpoint_store_server",
                                                   std::vector<std::string>{"--root=" + root_});
    ASSERT_GT(store_->port(), 0) << store_->log();
    test::LocalClusterOptions options;
    options.num_ps = kPsTasks;
    auto cluster = test::LocalCluster::Start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }

  std::unique_ptr<Session> NewClusterSession(const GraphDef& graph) {
    SessionOptions options;
    options.target = cluster_->master_target();
    auto session = NewSession(options);
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return nullptr;
    absl::Status created = (*session)->Create(graph);
    EXPECT_TRUE(created.ok()) << created;
    return *std::move(session);
  }

  std::string Location() const { return absl::StrCat("grpc://", store_->target(), "/trainer"); }

  std::string root_;
  std::unique_ptr<test::ServerProcess> store_;
  std::unique_ptr<test::LocalCluster> cluster_;
};

TEST_F(CheckpointClusterTest, PsShardsSurviveKillNineOfBothPs) {
  Model model;
  ASSERT_NE(model.saver, nullptr);
  auto session = NewClusterSession(model.graph);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Run({}, {}, {model.init.name()}, nullptr).ok());
  for (int i = 0; i < 5; ++i) {
    absl::Status s = session->Run({}, {}, {model.train.name()}, nullptr);
    ASSERT_TRUE(s.ok()) << s;
  }
  const std::vector<Tensor> saved = model.Values(session.get());
  ASSERT_EQ(saved.size(), 3u);
  EXPECT_EQ(saved[2].scalar<int64_t>(), 5);

  auto path = model.saver->Save(session.get(), Location() + "/model.ckpt", 5);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, Location() + "/model.ckpt-5");

  // One index, two data shards, each tensor in the shard of the ps that holds it, and
  // the meta graph the trainer sent through the store.
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(root_ + "/trainer")) {
    files.insert(entry.path().filename().string());
  }
  EXPECT_EQ(files, (std::set<std::string>{
                       "checkpoint", "model.ckpt-5.index", "model.ckpt-5.data-00000-of-00002",
                       "model.ckpt-5.data-00001-of-00002", "model.ckpt-5.meta"}));
  auto where = ResolveCheckpointLocation(Location());
  ASSERT_TRUE(where.ok()) << where.status();
  auto tensors = where->store->ListTensors("trainer", "model.ckpt-5");
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  ASSERT_EQ(tensors->size(), 3u);
  auto listed = where->store->ListCheckpoints("trainer");
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  // Each ps wrote its shard's data file itself (same host): one local write per ps, and
  // the store counted the bytes when the shards closed.
  auto written = test::HttpGet(store_->metrics_port(), "/metrics");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(absl::StrContains(
      *written, absl::StrCat("overseer_checkpoint_store_local_writes_total ", kPsTasks)))
      << *written;
  EXPECT_FALSE(absl::StrContains(*written, "overseer_checkpoint_store_bytes_written_total 0\n"))
      << *written;

  session.reset();
  for (int k = 0; k < kPsTasks; ++k) ASSERT_TRUE(cluster_->Stop("ps", k, SIGKILL).ok());
  for (int k = 0; k < kPsTasks; ++k) {
    absl::Status restarted = cluster_->Restart("ps", k);
    ASSERT_TRUE(restarted.ok()) << restarted;
  }

  auto fresh = NewClusterSession(model.graph);
  ASSERT_NE(fresh, nullptr);
  auto latest = LatestCheckpoint(Location());
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  absl::Status restored = model.saver->Restore(fresh.get(), **latest);
  ASSERT_TRUE(restored.ok()) << restored;
  const std::vector<Tensor> back = model.Values(fresh.get());
  ASSERT_EQ(back.size(), saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_TRUE(BitIdentical(saved[i], back[i])) << "variable " << i << " differs after restore";
  }
  // Each ps read its variables straight from the store's data files (same host): the
  // store handed out descriptors once per ps.
  auto metrics = test::HttpGet(store_->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(absl::StrContains(
      *metrics, absl::StrCat("overseer_checkpoint_store_local_reads_total ", kPsTasks)))
      << *metrics;
  // Training resumes from the restored values.
  ASSERT_TRUE(fresh->Run({}, {}, {model.train.name()}, nullptr).ok());
  EXPECT_EQ(model.Values(fresh.get())[2].scalar<int64_t>(), 6);
}

}  // namespace
}  // namespace overseer

#include "client/training/meta_graph.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "client/training/queue_runner.h"
#include "core/resource_mgr.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

std::string TestDir() {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

std::vector<float> Read(ClientSession* session, const ClientGraph& graph, const std::string& name) {
  absl::StatusOr<Output> t = graph.FindOutput(name);
  EXPECT_TRUE(t.ok()) << t.status();
  std::vector<Tensor> out;
  const absl::Status s = session->Run({*t}, &out);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return {};
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].NumElements());
}

absl::Status RunOp(ClientSession* session, const ClientGraph& graph, const std::string& name) {
  Node* node = graph.FindNode(name);
  if (node == nullptr) return absl::NotFoundError(name);
  return session->Run({}, {}, {Operation(node)}, nullptr);
}

// As TensorFlow's saver_test testImportIntoNamescope / meta graph round trips: a model
// is trained and saved where its code is; another graph, built from the .meta file
// alone, restores the checkpoint, finds its train op through a collection, trains on
// and saves with the imported Saver.
TEST(MetaGraphTest, RestoreAndTrainWithoutTheCodeThatBuiltTheModel) {
  const std::string dir = TestDir();
  std::string checkpoint;
  {
    Scope root = Scope::NewRootScope();
    Variable w = MakeVariable(root.WithOpName("w"), Tensor::FromVector<float>({0, 0}));
    ASSERT_TRUE(GetOrCreateGlobalStep(root).ok());
    Output train =
        ops::AssignAdd(root.WithOpName("train_op"), w.ref, Tensor::FromVector<float>({1, 1}));
    root.graph()->AddToCollection("train_op", train.node()->name());
    ops::FIFOQueueAttrs attrs;
    attrs.shapes = {PartialShape::Scalar()};
    Output queue = ops::FIFOQueue(root.WithOpName("q"), {DT_FLOAT}, attrs);
    Operation enqueue = ops::QueueEnqueue(root, queue, {Tensor::Scalar<float>(1)});
    auto runner = QueueRunner::Create(root, queue, {enqueue});
    ASSERT_TRUE(runner.ok()) << runner.status();
    AddQueueRunner(root.graph(), **runner);
    auto saver = Saver::Create(root, {});
    ASSERT_TRUE(saver.ok()) << saver.status();
    ResourceMgr resources;
    SessionOptions options;
    options.resource_mgr = &resources;
    auto session = ClientSession::Create(root, options);
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_TRUE((*session)->Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr).ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunOp(session->get(), *root.graph(), "train_op").ok());
    auto saved = (*saver)->Save((*session)->session(), dir + "/model.ckpt", 3);
    ASSERT_TRUE(saved.ok()) << saved.status();
    checkpoint = *saved;
    auto meta = ExportMetaGraph(root, saver->get(), {"train"});
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_TRUE(meta->collection_def().at("variables").has_bytes_list());
    EXPECT_TRUE(meta->collection_def().at("train_op").has_node_list());
    EXPECT_TRUE(meta->collection_def().at("queue_runners").has_bytes_list());
    const absl::Status written = WriteMetaGraph(*meta, dir + "/exported.meta");
    ASSERT_TRUE(written.ok()) << written;
    auto exported = ReadMetaGraph(dir + "/exported.meta");
    ASSERT_TRUE(exported.ok()) << exported.status();
    EXPECT_EQ(exported->meta_info_def().tags(0), "train");
    EXPECT_EQ(exported->graph_def().node_size(), meta->graph_def().node_size());
  }

  // The Saver wrote the checkpoint's meta graph beside it, as TensorFlow's does.
  auto meta = ReadMetaGraph(checkpoint + ".meta");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_TRUE(meta->has_saver_def());
  Scope root = Scope::NewRootScope();
  auto saver = ImportMetaGraph(root, *meta);
  ASSERT_TRUE(saver.ok()) << saver.status();
  ASSERT_NE(*saver, nullptr);
  const ClientGraph& graph = *root.graph();
  std::vector<std::string> globals;
  for (const Variable& v : GlobalVariables(graph)) globals.push_back(v.name());
  EXPECT_EQ(globals, (std::vector<std::string>{"w", "global_step"}));
  ASSERT_EQ(TrainableVariables(graph).size(), 1u);
  EXPECT_TRUE(GetGlobalStep(graph).ok());
  ASSERT_EQ(graph.GetCollection("train_op"), std::vector<std::string>{"train_op"});
  auto runners = QueueRunnersInGraph(graph);
  ASSERT_TRUE(runners.ok()) << runners.status();
  EXPECT_EQ(runners->size(), 1u);

  ResourceMgr resources;
  SessionOptions options;
  options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->ExtendIfNeeded().ok());
  const absl::Status restored = (*saver)->Restore((*session)->session(), checkpoint);
  ASSERT_TRUE(restored.ok()) << restored;
  EXPECT_EQ(Read(session->get(), graph, "w/read:0"), (std::vector<float>{3, 3}));
  ASSERT_TRUE(RunOp(session->get(), graph, graph.GetCollection("train_op")[0]).ok());
  EXPECT_EQ(Read(session->get(), graph, "w/read:0"), (std::vector<float>{4, 4}));
  auto saved = (*saver)->Save((*session)->session(), TestDir() + "/model.ckpt", 4);
  ASSERT_TRUE(saved.ok()) << saved.status();
  // A second copy under an import scope: its own names, variables, queue runner and
  // Saver, which restores the same checkpoint.
  auto copy_saver = ImportMetaGraph(root, *meta, "copy");
  ASSERT_TRUE(copy_saver.ok()) << copy_saver.status();
  ASSERT_NE(*copy_saver, nullptr);
  std::vector<std::string> all;
  for (const Variable& v : GlobalVariables(graph)) all.push_back(v.name());
  EXPECT_EQ(all, (std::vector<std::string>{"w", "global_step", "copy/w", "copy/global_step"}));
  EXPECT_EQ(graph.GetCollection("train_op"),
            (std::vector<std::string>{"train_op", "copy/train_op"}));
  auto both_runners = QueueRunnersInGraph(graph);
  ASSERT_TRUE(both_runners.ok()) << both_runners.status();
  EXPECT_EQ(both_runners->size(), 2u);
  ASSERT_TRUE((*session)->ExtendIfNeeded().ok());
  const absl::Status copy_restored = (*copy_saver)->Restore((*session)->session(), checkpoint);
  ASSERT_TRUE(copy_restored.ok()) << copy_restored;
  ASSERT_TRUE(RunOp(session->get(), graph, "copy/train_op").ok());
  ASSERT_TRUE(RunOp(session->get(), graph, "copy/train_op").ok());
  EXPECT_EQ(Read(session->get(), graph, "copy/w/read:0"), (std::vector<float>{5, 5}));
  EXPECT_EQ(Read(session->get(), graph, "w/read:0"), (std::vector<float>{4, 4}));
  EXPECT_EQ(ImportMetaGraph(root, *meta, "bad scope").status().code(),
            absl::StatusCode::kInvalidArgument);

  // New nodes get names of their own next to the imported ones.
  Variable more = MakeVariable(root.WithOpName("w"), Tensor::Scalar<float>(0));
  EXPECT_EQ(more.name(), "w_1");
}

TEST(MetaGraphTest, WriteMetaGraphFalseWritesNone) {
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("w"), Tensor::FromVector<float>({1, 2}));
  auto saver = Saver::Create(root, {});
  ASSERT_TRUE(saver.ok()) << saver.status();
  ResourceMgr resources;
  SessionOptions session_options;
  session_options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, session_options);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr).ok());
  auto saved = (*saver)->Save((*session)->session(), TestDir() + "/model.ckpt", 1,
                              /*write_meta_graph=*/false);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(CheckpointExists(*saved));
  EXPECT_FALSE(std::filesystem::exists(*saved + ".meta"));
}

TEST(MetaGraphTest, BadInputIsAClearError) {
  const std::string dir = TestDir();
  EXPECT_EQ(ReadMetaGraph(dir + "/missing.meta").status().code(), absl::StatusCode::kNotFound);

  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("w"), Tensor::FromVector<float>({0, 0}));
  auto saver = Saver::Create(root, {});
  ASSERT_TRUE(saver.ok());
  auto meta = ExportMetaGraph(root, saver->get());
  ASSERT_TRUE(meta.ok()) << meta.status();
  ASSERT_TRUE(std::filesystem::create_directories(dir) || std::filesystem::exists(dir));
  const std::string bytes = meta->SerializeAsString();
  std::ofstream(dir + "/truncated.meta") << bytes.substr(0, bytes.size() / 2);
  auto truncated = ReadMetaGraph(dir + "/truncated.meta");
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss) << truncated.status();
  EXPECT_NE(truncated.status().message().find("truncated.meta"), std::string::npos);

  // Into a graph that has the names already.
  auto clash = ImportMetaGraph(root, *meta);
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kInvalidArgument) << clash.status();
  EXPECT_NE(clash.status().message().find("already in the graph"), std::string::npos)
      << clash.status();

  // A SaverDef naming a node the graph lacks.
  MetaGraphDef broken = *meta;
  broken.mutable_saver_def()->set_restore_op_name("nowhere/restore_all");
  auto missing = ImportMetaGraph(Scope::NewRootScope(), broken);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument) << missing.status();
  EXPECT_NE(missing.status().message().find("nowhere/restore_all"), std::string::npos);

  // Devices kept, or cleared with TensorFlow's clear_devices.
  MetaGraphDef placed;
  NodeDef* c = placed.mutable_graph_def()->add_node();
  c->set_name("c");
  c->set_op("Const");
  c->set_device("/job:ps/task:3");
  (*c->mutable_attr())["dtype"].set_type(DT_FLOAT);
  Tensor::Scalar<float>(1).ToProto((*c->mutable_attr())["value"].mutable_tensor());
  for (const bool clear : {false, true}) {
    Scope scope = Scope::NewRootScope();
    ImportMetaGraphOptions import;
    import.clear_devices = clear;
    auto imported = ImportMetaGraph(scope, placed, import);
    ASSERT_TRUE(imported.ok()) << imported.status();
    GraphDef def;
    ASSERT_TRUE(scope.graph()->ToGraphDef(&def).ok());
    ASSERT_EQ(def.node_size(), 1);
    EXPECT_EQ(def.node(0).device(), clear ? "" : "/job:ps/task:3");
  }

  // A node whose input is not in the meta graph.
  MetaGraphDef dangling;
  NodeDef* node = dangling.mutable_graph_def()->add_node();
  node->set_name("y");
  node->set_op("Identity");
  node->add_input("elsewhere");
  (*node->mutable_attr())["T"].set_type(DT_FLOAT);
  auto refused = ImportMetaGraph(Scope::NewRootScope(), dangling);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_NE(refused.status().message().find("elsewhere"), std::string::npos) << refused.status();
}

}  // namespace
}  // namespace overseer

// TensorFlow's monitored_session_test.py ScaffoldTest, on DirectSession.

#include "client/training/scaffold.h"

#include <algorithm>
#include <string>
#include <vector>

#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/summary/summary_ops.h"
#include "core/resource_mgr.h"
#include "core/tensor_eigen.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class ScaffoldTest : public ::testing::Test {
 protected:
  ClientSession& Session() {
    if (session_ == nullptr) {
      SessionOptions options;
      options.resource_mgr = &resources_;
      session_ = *ClientSession::Create(root_, options);
    }
    return *session_;
  }
  std::vector<std::string> Report(const Output& op) {
    std::vector<Tensor> out;
    absl::Status s = Session().Run({op}, &out);
    EXPECT_TRUE(s.ok()) << s;
    std::vector<std::string> names;
    if (!s.ok()) return names;
    for (int64_t i = 0; i < out[0].NumElements(); ++i)
      names.push_back(out[0].flat<std::string>()(i));
    return names;
  }
  void RunOp(const Operation& op) {
    absl::Status s = Session().Run({}, {}, {op}, nullptr);
    EXPECT_TRUE(s.ok()) << s;
  }

  Scope root_ = Scope::NewRootScope();
  ResourceMgr resources_;
  std::unique_ptr<ClientSession> session_;
};

TEST_F(ScaffoldTest, NothingCreatedBeforeFinalize) {
  MakeVariable(root_.WithOpName("my_var"), 1);
  Scaffold scaffold(root_);
  EXPECT_FALSE(scaffold.init_op().valid());
  EXPECT_TRUE(scaffold.init_feed_dict().empty());
  EXPECT_FALSE(scaffold.init_fn());
  EXPECT_FALSE(scaffold.ready_op().valid());
  EXPECT_FALSE(scaffold.ready_for_local_init_op().valid());
  EXPECT_FALSE(scaffold.local_init_op().valid());
  EXPECT_EQ(scaffold.saver(), nullptr);
  EXPECT_FALSE(scaffold.finalized());
  EXPECT_FALSE(root_.graph()->finalized());
}

TEST_F(ScaffoldTest, DefaultsEmptyGraph) {
  MakeVariable(root_.WithOpName("my_var"), 1);
  MakeVariable(root_.WithOpName("my_local_var"), 2, VariableOptions{false, {kLocalVariables}});
  Scaffold scaffold(root_);
  ASSERT_TRUE(scaffold.Finalize().ok());
  EXPECT_TRUE(scaffold.init_op().valid());
  EXPECT_TRUE(scaffold.init_feed_dict().empty());
  EXPECT_FALSE(scaffold.init_fn());
  EXPECT_TRUE(scaffold.ready_op().valid());
  EXPECT_TRUE(scaffold.ready_for_local_init_op().valid());
  EXPECT_TRUE(scaffold.local_init_op().valid());
  EXPECT_TRUE(scaffold.local_init_feed_dict().empty());
  ASSERT_NE(scaffold.saver(), nullptr);
  EXPECT_FALSE(scaffold.summary_op().valid());  // No summaries in the graph.
  EXPECT_THAT(Report(scaffold.ready_op()), UnorderedElementsAre("my_var", "my_local_var"));
  EXPECT_THAT(Report(scaffold.ready_for_local_init_op()), UnorderedElementsAre("my_var"));
  RunOp(scaffold.init_op());
  EXPECT_TRUE(Report(scaffold.ready_for_local_init_op()).empty());
  EXPECT_THAT(Report(scaffold.ready_op()), UnorderedElementsAre("my_local_var"));
  RunOp(scaffold.local_init_op());
  EXPECT_TRUE(Report(scaffold.ready_op()).empty());
}

TEST_F(ScaffoldTest, DefaultsNoVariables) {
  ops::Const(root_.WithOpName("my_const"), 1);
  Scaffold scaffold(root_);
  ASSERT_TRUE(scaffold.Finalize().ok());
  EXPECT_TRUE(scaffold.init_op().valid());
  EXPECT_TRUE(scaffold.ready_op().valid());
  EXPECT_TRUE(scaffold.ready_for_local_init_op().valid());
  EXPECT_TRUE(scaffold.local_init_op().valid());
  // An empty saver, as TensorFlow's (allow_empty): it saves and restores nothing.
  ASSERT_NE(scaffold.saver(), nullptr);
  EXPECT_TRUE(scaffold.saver()->empty());
  EXPECT_TRUE(Report(scaffold.ready_op()).empty());
}

TEST_F(ScaffoldTest, CachesValues) {
  MakeVariable(root_, {1});
  ops::ScalarSummary(root_, "s", 1.0f);
  Scaffold scaffold1(root_);
  ASSERT_TRUE(scaffold1.Finalize().ok());
  Scaffold scaffold2(root_);
  ASSERT_TRUE(scaffold2.Finalize().ok()) << "the second scaffold adds no node";
  EXPECT_EQ(scaffold1.init_op(), scaffold2.init_op());
  EXPECT_EQ(scaffold1.ready_op(), scaffold2.ready_op());
  EXPECT_EQ(scaffold1.ready_for_local_init_op(), scaffold2.ready_for_local_init_op());
  EXPECT_EQ(scaffold1.local_init_op(), scaffold2.local_init_op());
  EXPECT_EQ(scaffold1.summary_op(), scaffold2.summary_op());
  EXPECT_EQ(scaffold1.saver(), scaffold2.saver());
  EXPECT_TRUE(scaffold1.summary_op().valid());
}

TEST_F(ScaffoldTest, RaiseErrorIfMoreThanOneCachedSaver) {
  MakeVariable(root_, {1});
  AddSaverToGraph(root_.graph(), *Saver::Create(root_, {}));
  AddSaverToGraph(root_.graph(), *Saver::Create(root_, {}));
  absl::Status s = Scaffold(root_).Finalize();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("More than one item"));
}

TEST_F(ScaffoldTest, RaiseErrorIfMoreThanOneCachedOp) {
  MakeVariable(root_, {1});
  root_.graph()->AddToCollection("init_op", "a");
  root_.graph()->AddToCollection("init_op", "b");
  absl::Status s = Scaffold(root_).Finalize();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("More than one item in the collection \"init_op\""));
}

// Custom pieces, made in the graph, as TensorFlow's test passes placeholders 2..8.
struct CustomPieces {
  explicit CustomPieces(const Scope& root)
      : init_op(ops::NoOp(root.WithOpName("my_init"))),
        ready_op(ops::Const(root.WithOpName("my_ready"), Tensor(DT_STRING, TensorShape({0})))),
        ready_for_local(
            ops::Const(root.WithOpName("my_ready_for_local"), Tensor(DT_STRING, TensorShape({0})))),
        local_init_op(ops::NoOp(root.WithOpName("my_local_init"))),
        feed(ops::Placeholder(root.WithOpName("feed"), DT_FLOAT)) {}

  ScaffoldOptions Options(Saver* saver) const {
    ScaffoldOptions options;
    options.init_op = init_op;
    options.init_feed_dict = {{feed, Tensor::Scalar(3.0f)}};
    options.init_fn = [](const Scaffold&, ClientSession&) { return absl::OkStatus(); };
    options.ready_op = ready_op;
    options.ready_for_local_init_op = ready_for_local;
    options.local_init_op = local_init_op;
    options.local_init_feed_dict = {{feed, Tensor::Scalar(8.0f)}};
    options.saver = saver;
    return options;
  }

  Operation init_op;
  Output ready_op, ready_for_local;
  Operation local_init_op;
  Output feed;
};

TEST_F(ScaffoldTest, UsesPassedValues) {
  MakeVariable(root_, {1});
  std::unique_ptr<Saver> saver = *Saver::Create(root_, {});
  CustomPieces pieces(root_);
  Scaffold scaffold(root_, pieces.Options(saver.get()));
  ASSERT_TRUE(scaffold.Finalize().ok());
  EXPECT_EQ(scaffold.init_op(), pieces.init_op);
  ASSERT_EQ(scaffold.init_feed_dict().size(), 1u);
  EXPECT_EQ(scaffold.init_feed_dict()[0].second.scalar<float>(), 3.0f);
  EXPECT_TRUE(scaffold.init_fn());
  EXPECT_EQ(scaffold.ready_op(), pieces.ready_op);
  EXPECT_EQ(scaffold.ready_for_local_init_op(), pieces.ready_for_local);
  EXPECT_EQ(scaffold.local_init_op(), pieces.local_init_op);
  EXPECT_EQ(scaffold.local_init_feed_dict()[0].second.scalar<float>(), 8.0f);
  EXPECT_EQ(scaffold.saver(), saver.get());
}

TEST_F(ScaffoldTest, NewScaffoldFromDefaultScaffold) {
  MakeVariable(root_, {1});
  std::unique_ptr<Saver> saver = *Saver::Create(root_, {});
  CustomPieces pieces(root_);
  Scaffold scaffold1(root_);
  ScaffoldOptions options = pieces.Options(saver.get());
  options.copy_from_scaffold = &scaffold1;
  Scaffold scaffold2(root_, options);
  ASSERT_TRUE(scaffold2.Finalize().ok());
  EXPECT_EQ(scaffold2.init_op(), pieces.init_op);
  EXPECT_EQ(scaffold2.ready_op(), pieces.ready_op);
  EXPECT_EQ(scaffold2.ready_for_local_init_op(), pieces.ready_for_local);
  EXPECT_EQ(scaffold2.local_init_op(), pieces.local_init_op);
  EXPECT_EQ(scaffold2.saver(), saver.get());
}

TEST_F(ScaffoldTest, NewScaffoldFromExistingScaffold) {
  MakeVariable(root_, {1});
  std::unique_ptr<Saver> saver = *Saver::Create(root_, {});
  CustomPieces first(root_);
  int called_with_second = 0;
  ScaffoldOptions options1 = first.Options(saver.get());
  Scaffold* second_ptr = nullptr;
  options1.init_fn = [&](const Scaffold& s, ClientSession&) {
    if (&s == second_ptr) ++called_with_second;
    return absl::OkStatus();
  };
  Scaffold scaffold1(root_, options1);
  Output other_ready =
      ops::Const(root_.WithOpName("other_ready"), Tensor(DT_STRING, TensorShape({0})));
  ScaffoldOptions options2;
  options2.ready_op = other_ready;
  options2.copy_from_scaffold = &scaffold1;
  Scaffold scaffold2(root_, options2);
  second_ptr = &scaffold2;
  ASSERT_TRUE(scaffold2.Finalize().ok());
  EXPECT_EQ(scaffold2.ready_op(), other_ready);   // Given.
  EXPECT_EQ(scaffold2.init_op(), first.init_op);  // Copied.
  EXPECT_EQ(scaffold2.local_init_op(), first.local_init_op);
  EXPECT_EQ(scaffold2.init_feed_dict()[0].second.scalar<float>(), 3.0f);
  EXPECT_EQ(scaffold2.saver(), saver.get());
  // The copied init_fn is called with the new scaffold, as TensorFlow's is.
  ASSERT_TRUE(scaffold2.init_fn());
  ASSERT_TRUE(scaffold2.init_fn()(Session()).ok());
  EXPECT_EQ(called_with_second, 1);
}

TEST_F(ScaffoldTest, GraphIsFinalized) {
  MakeVariable(root_, {1});
  ASSERT_TRUE(Scaffold(root_).Finalize().ok());
  EXPECT_TRUE(root_.graph()->finalized());
  ops::Const(root_, {0});
  EXPECT_EQ(root_.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(root_.status().message(), HasSubstr("Graph is finalized and cannot be modified"));
}

TEST_F(ScaffoldTest, PiecesResolvedBeforeFinalizeAreTheOnesFinalizeUses) {
  MakeVariable(root_, {1});
  ops::ScalarSummary(root_, "loss", 0.5f);
  Scaffold early(root_);
  absl::StatusOr<Saver*> saver = early.ResolveSaver();
  absl::StatusOr<Output> summary = early.ResolveSummaryOp();
  ASSERT_TRUE(saver.ok() && summary.ok());
  ASSERT_NE(*saver, nullptr);
  EXPECT_TRUE(summary->valid());
  EXPECT_FALSE(root_.graph()->finalized());
  Scaffold late(root_);
  ASSERT_TRUE(late.Finalize().ok());
  EXPECT_EQ(late.saver(), *saver);
  EXPECT_EQ(late.summary_op(), *summary);
  ASSERT_TRUE(early.Finalize().ok());
  EXPECT_EQ(early.saver(), *saver);
}

TEST_F(ScaffoldTest, OpsOfAnotherGraphAreRejected) {
  Scope other = Scope::NewRootScope();
  ScaffoldOptions options;
  options.init_op = ops::NoOp(other.WithOpName("foreign"));
  absl::Status s = Scaffold(root_, options).Finalize();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("init_op 'foreign' belongs to another graph"));
  EXPECT_FALSE(root_.graph()->finalized());
}

}  // namespace
}  // namespace overseer

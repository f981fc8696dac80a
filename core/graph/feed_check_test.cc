#include "core/graph/feed_check.h"

#include <memory>
#include <string>
#include <vector>

#include "core/graph/prune.h"
#include "core/graph/validate.h"
#include "core/node_def_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

// x (a float [2] placeholder), a -> sum.
class FeedCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GraphDef g;
    NodeDef* x = g.add_node();
    x->set_name("x");
    x->set_op("Placeholder");
    SetNodeAttr(x, "dtype", DT_FLOAT);
    SetNodeAttr(x, "shape", PartialShape({2}));
    NodeDef* a = g.add_node();
    a->set_name("a");
    a->set_op("TestSource");
    NodeDef* sum = g.add_node();
    sum->set_name("sum");
    sum->set_op("TestBinary");
    sum->add_input("x");
    sum->add_input("a");
    SetNodeAttr(sum, "T", DT_FLOAT);
    auto v = ValidateAndIndexGraph(g);
    ASSERT_TRUE(v.ok()) << v.status();
    graph_ = std::move(v->graph);
  }

  absl::StatusOr<std::vector<FeedCheck>> Checks(const std::vector<std::string>& feeds) {
    auto pruned = PruneGraph(*graph_, feeds, {"sum:0"}, {});
    if (!pruned.ok()) return pruned.status();
    return MakeFeedChecks(*graph_, feeds, *pruned->graph);
  }

  std::unique_ptr<Graph> graph_;
};

TEST_F(FeedCheckTest, DescribesWhatEachFeedAccepts) {
  auto checks = Checks({"x", "a:0"});
  ASSERT_TRUE(checks.ok()) << checks.status();
  ASSERT_EQ(checks->size(), 2u);
  EXPECT_EQ((*checks)[0].name, "x:0");
  EXPECT_EQ((*checks)[0].dtype, DT_FLOAT);
  EXPECT_TRUE((*checks)[0].placeholder);
  EXPECT_TRUE((*checks)[0].shape.IsCompatibleWith(TensorShape({2})));
  EXPECT_EQ((*checks)[1].name, "a:0");
  EXPECT_FALSE((*checks)[1].placeholder);
}

TEST_F(FeedCheckTest, UnfedPlaceholderIsInvalidArgumentNamingIt) {
  auto checks = Checks({});
  EXPECT_EQ(checks.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(checks.status().message()),
              HasSubstr("You must feed a value for placeholder tensor 'x' with dtype float"));
  EXPECT_EQ(Checks({"nope:0"}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(FeedCheckTest, ChecksTensorsAndEncodedTensorsAlike) {
  auto checks = Checks({"x"});
  ASSERT_TRUE(checks.ok()) << checks.status();
  const Tensor good(DT_FLOAT, TensorShape({2}));
  const Tensor wrong_dtype(DT_INT32, TensorShape({2}));
  const Tensor wrong_shape(DT_FLOAT, TensorShape({3}));
  const Tensor* values[] = {&good};
  EXPECT_TRUE(CheckFeeds(*checks, values).ok());

  struct Case {
    const Tensor* value;
    const char* error;
  };
  for (const Case& c : {Case{&wrong_dtype, "feed for 'x:0' has dtype int32 but the placeholder"},
                        Case{&wrong_shape, "feed for 'x:0' has shape [3] but the placeholder"}}) {
    const Tensor* bad[] = {c.value};
    absl::Status s = CheckFeeds(*checks, bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.error));
    TensorProto proto;
    c.value->ToProto(&proto);
    const TensorProto* encoded[] = {&proto};
    EXPECT_EQ(CheckFeeds(*checks, encoded), s);
  }
  const Tensor empty;
  const Tensor* unset[] = {&empty};
  EXPECT_THAT(std::string(CheckFeeds(*checks, unset).message()),
              HasSubstr("feed for 'x:0' is an empty (uninitialised) Tensor"));
  TensorProto proto;
  good.ToProto(&proto);
  const TensorProto* encoded[] = {&proto};
  EXPECT_TRUE(CheckFeeds(*checks, encoded).ok());
}

}  // namespace
}  // namespace overseer

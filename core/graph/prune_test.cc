#include "core/graph/prune.h"

#include <string>
#include <vector>

#include "core/graph/validate.h"
#include "core/node_def_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs = {}) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

// a, b -> sum -> neg;  c (unused);  v (ref) -> read;  assign(v, sum)
class PruneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GraphDef g;
    AddNode(&g, "a", "TestSource");
    AddNode(&g, "b", "TestSource");
    AddNode(&g, "c", "TestSource");
    SetNodeAttr(AddNode(&g, "sum", "TestBinary", {"a", "b"}), "T", DT_FLOAT);
    SetNodeAttr(AddNode(&g, "neg", "TestUnary", {"sum", "^c"}), "T", DT_FLOAT);
    SetNodeAttr(AddNode(&g, "v", "TestRefSource"), "T", DT_FLOAT);
    SetNodeAttr(AddNode(&g, "read", "TestUnary", {"v"}), "T", DT_FLOAT);
    SetNodeAttr(AddNode(&g, "assign", "TestAssignRef", {"v", "sum"}), "T", DT_FLOAT);
    auto v = ValidateAndIndexGraph(g);
    ASSERT_TRUE(v.ok()) << v.status();
    graph_ = std::move(v->graph);
  }

  std::vector<std::string> Names(const PrunedGraph& p) {
    std::vector<std::string> names;
    for (int i = 0; i < p.graph->num_nodes(); ++i) names.push_back(p.graph->node(i).name());
    return names;
  }

  std::unique_ptr<Graph> graph_;
};

TEST_F(PruneTest, KeepsOnlyWhatFetchesNeed) {
  auto p = PruneGraph(*graph_, {}, {"sum:0"}, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Names(*p), UnorderedElementsAreArray({"a", "b", "sum"}));
  ASSERT_EQ(p->fetches.size(), 1u);
  EXPECT_EQ(p->graph->node(p->fetches[0].node).name(), "sum");
}

TEST_F(PruneTest, FollowsControlInputsAndTargets) {
  auto p = PruneGraph(*graph_, {}, {}, {"neg"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Names(*p), UnorderedElementsAreArray({"a", "b", "c", "sum", "neg"}));
  ASSERT_EQ(p->targets.size(), 1u);
  EXPECT_EQ(p->graph->node(p->targets[0]).name(), "neg");
}

TEST_F(PruneTest, FedTensorsCutTheirProducers) {
  auto p = PruneGraph(*graph_, {"sum:0"}, {"neg"}, {});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->feed_nodes.size(), 1u);
  const GraphNode& feed = p->graph->node(p->feed_nodes[0]);
  EXPECT_EQ(feed.def->op(), kFeedOp);
  EXPECT_THAT(Names(*p),
              UnorderedElementsAreArray(std::vector<std::string>{feed.name(), "c", "neg"}));
  const GraphNode& neg = p->graph->node(p->graph->FindNode("neg"));
  EXPECT_EQ(neg.inputs[0].node, feed.id);
}

TEST_F(PruneTest, FedTensorsProducerStaysWhenOtherwiseNeeded) {
  auto p = PruneGraph(*graph_, {"a:0"}, {"a:0", "sum"}, {"a"});
  ASSERT_TRUE(p.ok()) << p.status();
  const int feed = p->feed_nodes[0];
  EXPECT_THAT(Names(*p), UnorderedElementsAreArray(std::vector<std::string>{
                             p->graph->node(feed).name(), "a", "b", "sum"}));
  // Fetching a fed tensor reads the feed; `sum` reads it too.
  EXPECT_EQ(p->fetches[0].node, feed);
  EXPECT_EQ(p->graph->node(p->graph->FindNode("sum")).inputs[0].node, feed);
}

TEST_F(PruneTest, FeedOfARefOutputForAValueConsumerIsAllowed) {
  auto p = PruneGraph(*graph_, {"v:0"}, {"read"}, {});
  ASSERT_TRUE(p.ok()) << p.status();
  DataType t;
  ASSERT_TRUE(GetNodeAttr(*p->graph->node(p->feed_nodes[0]).def, "T", &t).ok());
  EXPECT_EQ(t, DT_FLOAT);
}

TEST_F(PruneTest, FeedOfAReferenceAnUpdaterNeedsIsRejected) {
  auto p = PruneGraph(*graph_, {"v:0"}, {}, {"assign"});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("'assign'"));
}

TEST_F(PruneTest, RejectsBadNames) {
  struct Case {
    std::vector<std::string> feeds, fetches, targets;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{}, {"nope:0"}, {}, "fetch 'nope:0': no node named 'nope'"},
      {{}, {"sum:3"}, {}, "node 'sum' has 1 outputs"},
      {{}, {"^sum"}, {}, "'^sum' is not a tensor name"},
      {{"ghost"}, {"sum"}, {}, "feed 'ghost'"},
      {{"a", "a:0"}, {"sum"}, {}, "fed twice"},
      {{}, {}, {"missing"}, "target 'missing'"},
  };
  for (const Case& c : cases) {
    auto p = PruneGraph(*graph_, c.feeds, c.fetches, c.targets);
    ASSERT_FALSE(p.ok()) << c.expected;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.expected));
  }
}

}  // namespace
}  // namespace overseer

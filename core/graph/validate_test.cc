#include "core/graph/validate.h"

#include <string>
#include <vector>

#include "core/node_def_util.h"
#include "core/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs = {}) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

void ExpectInvalid(GraphDef g, const std::string& node, const std::string& detail) {
  absl::Status s = ValidateGraph(&g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'" + node + "'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(detail));
}

TEST(ValidateGraphTest, AcceptsAValidGraphAndAddsDefaults) {
  GraphDef g;
  AddNode(&g, "a", "TestSource");
  AddNode(&g, "b", "TestSource");
  SetNodeAttr(AddNode(&g, "sum", "TestBinary", {"a", "b:0"}), "T", DT_FLOAT);
  SetNodeAttr(AddNode(&g, "neg", "TestUnary", {"sum", "^a"}), "T", DT_FLOAT);
  ASSERT_TRUE(ValidateGraph(&g).ok()) << ValidateGraph(&g);
  DataType t;
  ASSERT_TRUE(GetNodeAttr(g.node(0), "T", &t).ok());
  EXPECT_EQ(t, DT_FLOAT);
}

// Shapes whose element count passes 2^62 stop at the node that makes them, before a
// later shape function multiplies them (found by //core/graph:graph_def_fuzz: a
// Reshape of a [2^62, 8] Placeholder overflowed int64 in its shape function).
TEST(ValidateGraphTest, RejectsShapesOfTooManyElements) {
  {
    GraphDef g;
    NodeDef* p = AddNode(&g, "p", "Placeholder");
    SetNodeAttr(p, "dtype", DT_FLOAT);
    TensorShapeProto shape;
    shape.add_dim()->set_size(int64_t{1} << 62);
    shape.add_dim()->set_size(8);
    AttrValue value;
    *value.mutable_shape() = shape;
    (*p->mutable_attr())["shape"] = value;
    NodeDef* dims = AddNode(&g, "dims", "Const");
    SetNodeAttr(dims, "dtype", DT_INT32);
    SetNodeAttr(dims, "value", Tensor::FromVector<int32_t>({-1}));
    NodeDef* r = AddNode(&g, "r", "Reshape", {"p", "dims"});
    SetNodeAttr(r, "T", DT_FLOAT);
    ExpectInvalid(g, "p", "more than 2^62 elements");
  }
  {
    GraphDef g;
    NodeDef* c = AddNode(&g, "c", "Const");
    SetNodeAttr(c, "dtype", DT_FLOAT);
    SetNodeAttr(c, "value", Tensor::FromVector<float>({1, 2, 3, 4}));
    NodeDef* dims = AddNode(&g, "dims", "Const");
    SetNodeAttr(dims, "dtype", DT_INT64);
    SetNodeAttr(dims, "value", Tensor::FromVector<int64_t>({int64_t{1} << 40, int64_t{1} << 40}));
    NodeDef* r = AddNode(&g, "r", "Reshape", {"c", "dims"});
    SetNodeAttr(r, "T", DT_FLOAT);
    SetNodeAttr(r, "Tshape", DT_INT64);
    ExpectInvalid(g, "r", "cannot reshape");
  }
}

TEST(ValidateGraphTest, RejectsUnknownOp) {
  GraphDef g;
  AddNode(&g, "x", "Foo");
  GraphDef copy = g;
  absl::Status s = ValidateGraph(&copy);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "node 'x': unknown op 'Foo'");
}

TEST(ValidateGraphTest, RejectsMissingAttr) {
  GraphDef g;
  AddNode(&g, "needs", "TestNeedsInt");
  ExpectInvalid(g, "needs", "n");
}

TEST(ValidateGraphTest, RejectsIllTypedAttr) {
  GraphDef g;
  SetNodeAttr(AddNode(&g, "needs", "TestNeedsInt"), "n", "three");
  ExpectInvalid(g, "needs", "n");
}

TEST(ValidateGraphTest, RejectsDisallowedType) {
  GraphDef g;
  SetNodeAttr(AddNode(&g, "a", "TestSource"), "T", DT_BOOL);
  SetNodeAttr(AddNode(&g, "u", "TestUnary", {"a"}), "T", DT_BOOL);
  ExpectInvalid(g, "u", "T");
}

TEST(ValidateGraphTest, RejectsWrongInputCount) {
  GraphDef g;
  AddNode(&g, "a", "TestSource");
  SetNodeAttr(AddNode(&g, "sum", "TestBinary", {"a"}), "T", DT_FLOAT);
  ExpectInvalid(g, "sum", "takes 2 data inputs but the node has 1");
}

TEST(ValidateGraphTest, RejectsDtypeMismatch) {
  GraphDef g;
  SetNodeAttr(AddNode(&g, "ints", "TestSource"), "T", DT_INT32);
  SetNodeAttr(AddNode(&g, "u", "TestUnary", {"ints"}), "T", DT_FLOAT);
  ExpectInvalid(g, "u", "has dtype int32 but op 'TestUnary' wants float");
}

TEST(ValidateGraphTest, RefMayFeedValueButNotTheReverse) {
  GraphDef ok;
  SetNodeAttr(AddNode(&ok, "v", "TestRefSource"), "T", DT_FLOAT);
  SetNodeAttr(AddNode(&ok, "read", "TestUnary", {"v"}), "T", DT_FLOAT);
  SetNodeAttr(AddNode(&ok, "assign", "TestAssignRef", {"v", "read"}), "T", DT_FLOAT);
  EXPECT_TRUE(ValidateGraph(&ok).ok()) << ValidateGraph(&ok);

  GraphDef bad;
  AddNode(&bad, "value", "TestSource");
  SetNodeAttr(AddNode(&bad, "assign", "TestAssignRef", {"value", "value"}), "T", DT_FLOAT);
  ExpectInvalid(bad, "assign", "wants float_ref");
}

TEST(ValidateGraphTest, RejectsDanglingInput) {
  GraphDef g;
  SetNodeAttr(AddNode(&g, "u", "TestUnary", {"missing:0"}), "T", DT_FLOAT);
  ExpectInvalid(g, "u", "'missing'");
}

TEST(ValidateGraphTest, RejectsDanglingControlInput) {
  GraphDef g;
  AddNode(&g, "a", "TestSource", {"^ghost"});
  ExpectInvalid(g, "a", "'ghost'");
}

TEST(ValidateGraphTest, RejectsOutputIndexOutOfRange) {
  GraphDef g;
  AddNode(&g, "a", "TestSource");
  SetNodeAttr(AddNode(&g, "u", "TestUnary", {"a:1"}), "T", DT_FLOAT);
  ExpectInvalid(g, "u", "has 1 outputs");
}

TEST(ValidateGraphTest, RejectsDuplicateNames) {
  GraphDef g;
  AddNode(&g, "a", "TestSource");
  AddNode(&g, "a", "TestSource");
  ExpectInvalid(g, "a", "duplicate node name");
}

TEST(ValidateGraphTest, RejectsControlInputBeforeDataInput) {
  GraphDef g;
  AddNode(&g, "a", "TestSource");
  SetNodeAttr(AddNode(&g, "u", "TestUnary", {"^a", "a"}), "T", DT_FLOAT);
  ExpectInvalid(g, "u", "control inputs must come last");
}

TEST(ValidateGraphTest, RejectsCycleNamingANodeOnIt) {
  GraphDef g;
  AddNode(&g, "a", "TestSource");
  SetNodeAttr(AddNode(&g, "downstream", "TestUnary", {"loop2"}), "T", DT_FLOAT);
  SetNodeAttr(AddNode(&g, "loop1", "TestBinary", {"a", "loop2"}), "T", DT_FLOAT);
  SetNodeAttr(AddNode(&g, "loop2", "TestUnary", {"loop1"}), "T", DT_FLOAT);
  GraphDef copy = g;
  absl::Status s = ValidateGraph(&copy);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("cycle"));
  EXPECT_THAT(std::string(s.message()),
              ::testing::AnyOf(HasSubstr("'loop1'"), HasSubstr("'loop2'")));
}

TEST(ValidateGraphTest, RejectsControlCycle) {
  GraphDef g;
  AddNode(&g, "a", "TestSource", {"^b"});
  AddNode(&g, "b", "TestSource", {"^a"});
  ExpectInvalid(g, "a", "cycle");
}

TEST(ValidateGraphTest, ReportsShapeErrorsNamingTheNode) {
  GraphDef g;
  SetNodeAttr(AddNode(&g, "a", "TestSource"), "shape", PartialShape({2}));
  SetNodeAttr(AddNode(&g, "b", "TestSource"), "shape", PartialShape({3}));
  SetNodeAttr(AddNode(&g, "sum", "TestBinary", {"a", "b"}), "T", DT_FLOAT);
  ExpectInvalid(g, "sum", "[3]");
}

TEST(ValidateGraphTest, InfersShapesInTopologicalOrder) {
  GraphDef g;
  // Listed consumer first: inference must follow the edges, not the order.
  SetNodeAttr(AddNode(&g, "neg", "TestUnary", {"sum"}), "T", DT_FLOAT);
  SetNodeAttr(AddNode(&g, "sum", "TestBinary", {"a", "b"}), "T", DT_FLOAT);
  SetNodeAttr(AddNode(&g, "a", "TestSource"), "shape", PartialShape({4, 1}));
  SetNodeAttr(AddNode(&g, "b", "TestSource"), "shape", PartialShape({3}));
  auto v = ValidateAndIndexGraph(g);
  ASSERT_TRUE(v.ok()) << v.status();
  const int neg = v->graph->FindNode("neg");
  EXPECT_EQ(v->output_shapes[neg][0], PartialShape({4, 3}));
}

TEST(ValidateGraphTest, PassesConstValuesToShapeFunctions) {
  GraphDef g;
  NodeDef* x = AddNode(&g, "x", "Const");
  SetNodeAttr(x, "dtype", DT_FLOAT);
  SetNodeAttr(x, "value", Tensor(DT_FLOAT, TensorShape({6})));
  NodeDef* shape = AddNode(&g, "shape", "Const");
  SetNodeAttr(shape, "dtype", DT_INT32);
  SetNodeAttr(shape, "value", Tensor::FromVector<int32_t>({2, 3}));
  SetNodeAttr(AddNode(&g, "reshaped", "Reshape", {"x", "shape"}), "T", DT_FLOAT);
  auto v = ValidateAndIndexGraph(g);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->output_shapes[v->graph->FindNode("reshaped")][0], PartialShape({2, 3}));
}

TEST(GraphTest, IndexesEdgesAndTopologicalOrder) {
  GraphDef g;
  SetNodeAttr(AddNode(&g, "neg", "TestUnary", {"two:1", "^one"}), "T", DT_INT32);
  AddNode(&g, "two", "TestTwoOutputs");
  AddNode(&g, "one", "TestSource");
  auto v = ValidateAndIndexGraph(g);
  ASSERT_TRUE(v.ok()) << v.status();
  const Graph& idx = *v->graph;
  const int neg = idx.FindNode("neg"), two = idx.FindNode("two"), one = idx.FindNode("one");
  EXPECT_EQ(idx.FindNode("nope"), -1);
  ASSERT_EQ(idx.node(neg).inputs.size(), 1u);
  EXPECT_EQ(idx.node(neg).inputs[0], (Endpoint{two, 1}));
  EXPECT_EQ(idx.node(neg).control_inputs, std::vector<int>{one});
  ASSERT_EQ(idx.node(two).out_edges.size(), 1u);
  EXPECT_EQ(idx.node(two).out_edges[0].src_output, 1);
  ASSERT_EQ(idx.node(one).out_edges.size(), 1u);
  EXPECT_TRUE(idx.node(one).out_edges[0].IsControl());
  std::vector<int> order = idx.topological_order();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order.back(), neg);
}

}  // namespace
}  // namespace overseer

#include "client/graph/graph.h"

#include "client/graph/graph_builder.h"
#include "client/graph/ops.h"
#include "client/graph/scope.h"
#include "core/node_def_util.h"
#include "core/tensor_eigen.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

TEST(ScopeTest, UniqueNamesTensorFlowStyle) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Const(root, 1.0f);
  Output b = ops::Const(root, 2.0f);
  Output c = ops::Add(root, a, b);
  Output d = ops::Add(root, a, b);
  Output e = ops::Add(root.WithOpName("Add_1x"), a, b);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(a.name(), "Const:0");
  EXPECT_EQ(b.name(), "Const_1:0");
  EXPECT_EQ(c.node()->name(), "Add");
  EXPECT_EQ(d.node()->name(), "Add_1");
  EXPECT_EQ(e.node()->name(), "Add_1x");
}

TEST(ScopeTest, ExplicitNameClashIsUniquified) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Const(root.WithOpName("x"), 1.0f);
  Output x1 = ops::Const(root.WithOpName("x"), 1.0f);
  Output x_1 = ops::Const(root.WithOpName("x_1"), 1.0f);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(x.node()->name(), "x");
  EXPECT_EQ(x1.node()->name(), "x_1");
  EXPECT_EQ(x_1.node()->name(), "x_1_1");
}

TEST(ScopeTest, NameScopesNest) {
  Scope root = Scope::NewRootScope();
  Scope layer = root.NewSubScope("layer");
  Scope inner = layer.NewSubScope("inner");
  Output a = ops::Const(inner.WithOpName("a"), 1.0f);
  Scope layer2 = root.NewSubScope("layer");
  Output b = ops::Const(layer2, 1.0f);
  Output c = ops::Neg(layer.WithOpName("neg"), a);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(a.node()->name(), "layer/inner/a");
  EXPECT_EQ(b.node()->name(), "layer_1/Const");
  EXPECT_EQ(c.node()->name(), "layer/neg");
  EXPECT_EQ(inner.name_scope(), "layer/inner");
  Output exact = ops::Const(root.WithExactOpName("layer/inner"), 3.0f);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(exact.node()->name(), "layer/inner");
  EXPECT_EQ(ops::Const(root.WithNameScope("layer/inner/"), 1.0f).node()->name(),
            "layer/inner/Const");
}

TEST(ScopeTest, DeviceControlDependenciesAndColocation) {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  Output v = ops::Const(ps.WithOpName("v"), 1.0f);
  Operation first = ops::NoOp(root.WithOpName("first"));
  Output after = ops::Identity(root.WithControlDependencies({first}), v);
  Output near = ops::Identity(root.ColocateWith(v), v);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(v.node()->def().device(), "/job:ps/task:0");
  ASSERT_EQ(after.node()->def().input_size(), 2);
  EXPECT_EQ(after.node()->def().input(1), "^first");
  EXPECT_EQ(after.node()->control_inputs().size(), 1u);
  EXPECT_EQ(near.node()->def().device(), "/job:ps/task:0");
  std::vector<std::string> cls;
  ASSERT_TRUE(GetNodeAttr(near.node()->def(), "_class", &cls).ok());
  EXPECT_EQ(cls, std::vector<std::string>{"loc:@v"});
}

TEST(GraphTest, ShapesAndConstantsInferred) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DT_FLOAT, PartialShape({-1, 784}));
  Output w = ops::Const(root, Tensor(DT_FLOAT, TensorShape({784, 10})));
  Output y = ops::MatMul(root, x, w);
  Output r = ops::Reshape(root, w, {10, -1});
  Output s = ops::Shape(root, w);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(y.shape(), PartialShape({-1, 10}));
  EXPECT_EQ(y.dtype(), DT_FLOAT);
  EXPECT_EQ(r.shape(), PartialShape({10, 784}));
  ASSERT_NE(s.node()->constant_value(), nullptr);
  EXPECT_EQ(s.node()->constant_value()->flat<int32_t>()(0), 784);
}

TEST(GraphTest, InitializerListsMakeConsts) {
  Scope root = Scope::NewRootScope();
  Output m = ops::Const(root, {{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Output v = ops::Const(root, {1, 2, 3});
  Output sum = ops::Add(root, m, 1.0);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(m.dtype(), DT_DOUBLE);
  EXPECT_EQ(m.shape(), PartialShape({2, 3}));
  EXPECT_EQ(v.dtype(), DT_INT32);
  EXPECT_EQ(sum.shape(), PartialShape({2, 3}));
  Output bad = ops::Const(root, {{1.0, 2.0}, {3.0}});
  EXPECT_FALSE(bad.valid());
  EXPECT_THAT(std::string(root.status().message()), HasSubstr("rows differ"));
}

TEST(GraphTest, UnknownOpIsRecordedNamingTheNode) {
  Scope root = Scope::NewRootScope();
  Operation op = NodeBuilder(root.WithOpName("mystery"), "NoSuchOp").Finalize();
  EXPECT_FALSE(op.valid());
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(root.status().message()), HasSubstr("mystery"));
  EXPECT_THAT(std::string(root.status().message()), HasSubstr("NoSuchOp"));
  // Later builders do nothing; ToGraphDef returns the first error.
  EXPECT_FALSE(ops::Const(root, 1.0f).valid());
  GraphDef def;
  EXPECT_EQ(root.ToGraphDef(&def).message(), root.status().message());
}

TEST(GraphTest, DtypeMismatchNamesTheNode) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Const(root, 1.0f);
  Output b = ops::Const(root, 2);
  Output c = ops::Add(root.WithOpName("bad_add"), a, b);
  EXPECT_FALSE(c.valid());
  const std::string msg(root.status().message());
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(msg, HasSubstr("bad_add"));
  EXPECT_THAT(msg, HasSubstr("int32"));
}

TEST(GraphTest, ShapeErrorsAndBadAttrsAreRecorded) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Const(root, Tensor(DT_FLOAT, TensorShape({2, 3})));
  Output bad = ops::MatMul(root.WithOpName("mm"), a, a);
  EXPECT_FALSE(bad.valid());
  EXPECT_THAT(std::string(root.status().message()), HasSubstr("mm"));

  Scope root2 = Scope::NewRootScope();
  Output s = ops::Const(root2, Tensor::Scalar<std::string>("x"));
  Output neg = ops::Neg(root2.WithOpName("neg_string"), s);
  EXPECT_FALSE(neg.valid());
  EXPECT_THAT(std::string(root2.status().message()), HasSubstr("neg_string"));
}

TEST(GraphTest, ForeignInputsAreRejected) {
  Scope a = Scope::NewRootScope();
  Scope b = Scope::NewRootScope();
  EXPECT_NE(a.graph()->id(), b.graph()->id());
  Output x = ops::Const(a.WithOpName("x"), 1.0f);
  Output y = ops::Neg(b, x);
  EXPECT_FALSE(y.valid());
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("another graph"));
}

TEST(GraphTest, AddNodeValidatesImportedNodes) {
  ClientGraph g;
  NodeDef c;
  c.set_name("c");
  c.set_op("Const");
  SetNodeAttr(&c, "value", Tensor::Scalar<float>(1));
  SetNodeAttr(&c, "dtype", DT_FLOAT);
  ASSERT_TRUE(g.AddNode(c).ok());
  EXPECT_FALSE(g.AddNode(c).ok());  // Duplicate name.
  NodeDef n;
  n.set_name("n");
  n.set_op("Neg");
  n.add_input("missing:0");
  SetNodeAttr(&n, "T", DT_FLOAT);
  absl::StatusOr<Node*> r = g.AddNode(n);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("missing"));
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_TRUE(g.status().ok());  // AddNode errors are returned, not recorded.
}

TEST(GraphTest, CollectionsAndGraphDef) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Const(root.WithOpName("a"), 1.0f);
  root.graph()->AddToCollection("summaries", a.name());
  root.graph()->AddToCollection("summaries", "b:0");
  EXPECT_EQ(root.graph()->GetCollection("summaries"), (std::vector<std::string>{"a:0", "b:0"}));
  EXPECT_TRUE(root.graph()->GetCollection("none").empty());
  absl::StatusOr<Output> found = root.graph()->FindOutput("a:0");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, a);
  EXPECT_FALSE(root.graph()->FindOutput("a:1").ok());
  ops::Neg(root, a);
  GraphDef def;
  ASSERT_TRUE(root.ToGraphDef(&def).ok());
  ASSERT_EQ(def.node_size(), 2);
  EXPECT_EQ(def.node(1).input(0), "a:0");
  // As TensorFlow's graphs: a producer version (TensorFlow's 27, core/version.h).
  EXPECT_EQ(def.versions().producer(), 27);
  ASSERT_TRUE(root.graph()->ToGraphDefFrom(1, &def).ok());
  EXPECT_EQ(def.node_size(), 1);
  EXPECT_EQ(def.versions().producer(), 27);
}

TEST(GraphTest, ListArgsInferNAndT) {
  Scope root = Scope::NewRootScope();
  Output sum = ops::AddN(root, {ops::Const(root, 1.0), ops::Const(root, 2.0), 3.0});
  ASSERT_TRUE(root.ok()) << root.status();
  int64_t n = 0;
  ASSERT_TRUE(GetNodeAttr(sum.node()->def(), "N", &n).ok());
  EXPECT_EQ(n, 3);
  EXPECT_EQ(sum.dtype(), DT_DOUBLE);
  std::vector<Output> parts = ops::Unpack(root, ops::Const(root, {{1, 2}, {3, 4}}), 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].shape(), PartialShape({2}));
}

TEST(GraphTest, FinalizedGraphRefusesNodes) {
  ClientGraph graph;
  NodeDef def;
  def.set_name("c");
  def.set_op("NoOp");
  ASSERT_TRUE(graph.AddNode(def).ok());
  EXPECT_FALSE(graph.finalized());
  graph.Finalize();
  EXPECT_TRUE(graph.finalized());
  def.set_name("d");
  absl::StatusOr<Node*> refused = graph.AddNode(def);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("Graph is finalized"));
  EXPECT_THAT(refused.status().message(), HasSubstr("'d'"));
  EXPECT_EQ(graph.num_nodes(), 1);
  // Collections still change; Unfinalize lifts it.
  graph.AddToCollection("k", "v");
  graph.Unfinalize();
  EXPECT_TRUE(graph.AddNode(def).ok());
}

TEST(GraphTest, AttachmentsAreTyped) {
  ClientGraph graph;
  EXPECT_EQ(graph.GetAttachment<int>("n"), nullptr);
  graph.SetAttachment("n", std::make_shared<int>(7));
  ASSERT_NE(graph.GetAttachment<int>("n"), nullptr);
  EXPECT_EQ(*graph.GetAttachment<int>("n"), 7);
  EXPECT_EQ(graph.GetAttachment<std::string>("n"), nullptr);
}

}  // namespace
}  // namespace overseer

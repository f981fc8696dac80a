#include "core/op_registry.h"

#include "core/node_def_util.h"
#include "core/shape_inference.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

REGISTER_OP("RegistryTestOp")
    .Input("a: T")
    .Input("refs: Ref(T)")
    .Input("many: N * int32")
    .Input("mixed: Tlist")
    .Output("out: T")
    .Attr("T: {float, double}")
    .Attr("N: int >= 1")
    .Attr("Tlist: list(type) = []")
    .Attr("flag: bool = false")
    .Attr("name_attr: string = 'x'")
    .Attr("shape: shape = [2, -1]")
    .Attr("shapes: list(shape) >= 0 = []")
    .Attr("count: int >= 2 = 3")
    .SetShapeFn(shape_fn::Unchanged);

TEST(OpRegistryTest, ParsesSpecs) {
  const OpDef* op = OpRegistry::Global()->Find("RegistryTestOp");
  ASSERT_NE(op, nullptr);
  ASSERT_EQ(op->inputs.size(), 4u);
  EXPECT_EQ(op->inputs[0].type_attr, "T");
  EXPECT_TRUE(op->inputs[1].is_ref);
  EXPECT_EQ(op->inputs[2].number_attr, "N");
  EXPECT_EQ(op->inputs[2].type, DT_INT32);
  EXPECT_EQ(op->inputs[3].type_list_attr, "Tlist");
  EXPECT_EQ(op->FindAttr("T")->allowed_types.size(), 2u);
  EXPECT_EQ(*op->FindAttr("N")->minimum, 1);
  EXPECT_EQ(op->FindAttr("name_attr")->default_value->s(), "x");
  EXPECT_EQ(op->FindAttr("shape")->default_value->shape().dim(1).size(), -1);
  EXPECT_EQ(*op->FindAttr("count")->minimum, 2);
  EXPECT_EQ(op->FindAttr("count")->default_value->i(), 3);
  EXPECT_EQ(*op->FindAttr("shapes")->minimum, 0);
}

TEST(OpRegistryTest, UnknownOp) {
  auto r = OpRegistry::Global()->Lookup("NoSuchOp");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("NoSuchOp"), std::string::npos);
}

TEST(OpRegistryTest, BadSpecsFail) {
  EXPECT_FALSE(OpDefBuilder("X").Input("a").Build().ok());
  EXPECT_FALSE(OpDefBuilder("X").Input("a: T").Build().ok());  // no attr T
  EXPECT_FALSE(OpDefBuilder("X").Attr("a: matrix").Build().ok());
  EXPECT_FALSE(OpDefBuilder("X").Attr("a: int = x").Build().ok());
}

NodeDef TestNode() {
  NodeDef n;
  n.set_name("n1");
  n.set_op("RegistryTestOp");
  SetNodeAttr(&n, "T", DT_FLOAT);
  SetNodeAttr(&n, "N", int64_t{3});
  SetNodeAttr(&n, "Tlist", std::vector<DataType>{DT_INT64, DT_BOOL});
  return n;
}

TEST(NodeDefUtilTest, DefaultsTypesAndAttrErrors) {
  const OpDef* op = OpRegistry::Global()->Find("RegistryTestOp");
  NodeDef n = TestNode();
  ASSERT_TRUE(AddDefaultsAndValidateAttrs(*op, &n).ok());
  EXPECT_FALSE(GetNodeAttrOr(n, "flag", true));
  std::vector<DataType> in, out;
  ASSERT_TRUE(InOutTypesForNode(n, *op, &in, &out).ok());
  EXPECT_EQ(in, (std::vector<DataType>{DT_FLOAT, DT_FLOAT_REF, DT_INT32, DT_INT32, DT_INT32,
                                       DT_INT64, DT_BOOL}));
  EXPECT_EQ(out, std::vector<DataType>{DT_FLOAT});

  NodeDef bad_type = TestNode();
  SetNodeAttr(&bad_type, "T", DT_INT32);
  auto s = AddDefaultsAndValidateAttrs(*op, &bad_type);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("n1"), std::string::npos) << s;
  EXPECT_NE(s.message().find("not one of"), std::string::npos) << s;

  NodeDef missing = TestNode();
  missing.mutable_attr()->erase("N");
  EXPECT_NE(AddDefaultsAndValidateAttrs(*op, &missing).message().find("'N' is missing"),
            std::string::npos);

  NodeDef too_few = TestNode();
  SetNodeAttr(&too_few, "N", int64_t{0});
  EXPECT_FALSE(AddDefaultsAndValidateAttrs(*op, &too_few).ok());

  NodeDef wrong_kind = TestNode();
  SetNodeAttr(&wrong_kind, "flag", int64_t{1});
  EXPECT_NE(AddDefaultsAndValidateAttrs(*op, &wrong_kind).message().find("has type int"),
            std::string::npos);

  NodeDef extra = TestNode();
  SetNodeAttr(&extra, "bogus", true);
  EXPECT_FALSE(AddDefaultsAndValidateAttrs(*op, &extra).ok());
}

TEST(NodeDefUtilTest, ParseTensorName) {
  EXPECT_EQ(ParseTensorName("a/b:2")->index, 2);
  EXPECT_EQ(ParseTensorName("a/b")->index, 0);
  EXPECT_TRUE(ParseTensorName("^ctl")->IsControl());
  EXPECT_EQ(ParseTensorName("^ctl")->node, "ctl");
  EXPECT_FALSE(ParseTensorName("x:-1").ok());
  EXPECT_FALSE(ParseTensorName("").ok());
  EXPECT_FALSE(ParseTensorName(":0").ok());
}

TEST(ShapeInferenceTest, RunsShapeFnAndNamesNode) {
  const OpDef* op = OpRegistry::Global()->Find("RegistryTestOp");
  NodeDef n = TestNode();
  ASSERT_TRUE(AddDefaultsAndValidateAttrs(*op, &n).ok());
  auto shapes = InferShapes(n, *op, {PartialShape({3, -1})}, {});
  ASSERT_TRUE(shapes.ok());
  EXPECT_EQ((*shapes)[0], PartialShape({3, -1}));

  OpDef binary;
  binary.name = "B";
  ArgDef z;
  z.name = "z";
  z.type = DT_FLOAT;
  binary.outputs.push_back(z);
  binary.shape_fn = shape_fn::BroadcastBinary;
  NodeDef b;
  b.set_name("adder");
  b.set_op("B");
  auto bad = InferShapes(b, binary, {PartialShape({2, 3}), PartialShape({4})}, {});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("adder"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace overseer

// Shape functions of the math ops.

#include <string>
#include <vector>

#include "core/kernels/math/broadcast.h"
#include "core/node_def_util.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

class ShapeTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::vector<PartialShape>> Infer(const std::string& op,
                                                  std::vector<PartialShape> inputs,
                                                  std::vector<const Tensor*> consts = {}) {
    node_.set_op(op);
    node_.set_name("n");
    auto def = OpRegistry::Global()->Lookup(op);
    if (!def.ok()) return def.status();
    absl::Status s = AddDefaultsAndValidateAttrs(**def, &node_);
    if (!s.ok()) return s;
    consts.resize(inputs.size(), nullptr);
    return InferShapes(node_, **def, inputs, consts);
  }
  NodeDef node_;
};

TEST_F(ShapeTest, ElementwiseOps) {
  SetNodeAttr(&node_, "T", DT_FLOAT);
  auto out = Infer("Add", {PartialShape({-1, 3}), PartialShape({3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({-1, 3}));
  EXPECT_FALSE(Infer("Mul", {PartialShape({2, 3}), PartialShape({4})}).ok());
  out = Infer("Neg", {PartialShape({5, -1})});
  EXPECT_EQ((*out)[0], PartialShape({5, -1}));
}

TEST_F(ShapeTest, Comparison) {
  SetNodeAttr(&node_, "T", DT_INT32);
  auto out = Infer("Less", {PartialShape({2, 1}), PartialShape({1, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({2, 3}));
}

TEST_F(ShapeTest, AddNMergesInputs) {
  SetNodeAttr(&node_, "T", DT_FLOAT);
  SetNodeAttr(&node_, "N", 2);
  auto out = Infer("AddN", {PartialShape({-1, 3}), PartialShape({4, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({4, 3}));
}

TEST_F(ShapeTest, MatMul) {
  SetNodeAttr(&node_, "T", DT_FLOAT);
  SetNodeAttr(&node_, "transpose_a", true);
  auto out = Infer("MatMul", {PartialShape({3, 2}), PartialShape({3, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({2, -1}));
  auto bad = Infer("MatMul", {PartialShape({4, 2}), PartialShape({3, 5})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[4,2], [3,5]"), std::string::npos) << bad.status();
}

TEST_F(ShapeTest, ReductionWithConstantAxes) {
  SetNodeAttr(&node_, "T", DT_FLOAT);
  Tensor axes = Tensor::FromVector<int32_t>({-1});
  auto out = Infer("Sum", {PartialShape({-1, 3, 4}), PartialShape({1})}, {nullptr, &axes});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({-1, 3}));
  SetNodeAttr(&node_, "keep_dims", true);
  out = Infer("Mean", {PartialShape({-1, 3, 4}), PartialShape({1})}, {nullptr, &axes});
  EXPECT_EQ((*out)[0], PartialShape({-1, 3, 1}));
  Tensor bad_axes = Tensor::FromVector<int32_t>({3});
  EXPECT_FALSE(
      Infer("Max", {PartialShape({2, 3, 4}), PartialShape({1})}, {nullptr, &bad_axes}).ok());
}

TEST_F(ShapeTest, ReductionWithUnknownAxes) {
  SetNodeAttr(&node_, "T", DT_FLOAT);
  auto out = Infer("Sum", {PartialShape({2, 3}), PartialShape({1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE((*out)[0].known_rank());
  SetNodeAttr(&node_, "keep_dims", true);
  out = Infer("Sum", {PartialShape({2, 3}), PartialShape({1})});
  EXPECT_EQ((*out)[0], PartialShape({-1, -1}));
}

TEST_F(ShapeTest, ArgMax) {
  SetNodeAttr(&node_, "T", DT_FLOAT);
  Tensor dim = Tensor::Scalar<int32_t>(1);
  auto out = Infer("ArgMax", {PartialShape({-1, 10}), PartialShape::Scalar()}, {nullptr, &dim});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({-1}));
  out = Infer("ArgMax", {PartialShape({2, 3, 4}), PartialShape::Scalar()});
  EXPECT_EQ((*out)[0], PartialShape({-1, -1}));
}

TEST_F(ShapeTest, BroadcastGradientArgs) {
  Tensor s0 = Tensor::FromVector<int32_t>({2, 3});
  Tensor s1 = Tensor::FromVector<int32_t>({3});
  auto out = Infer("BroadcastGradientArgs", {PartialShape({2}), PartialShape({1})}, {&s0, &s1});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({0}));
  EXPECT_EQ((*out)[1], PartialShape({1}));
  out = Infer("BroadcastGradientArgs", {PartialShape({-1}), PartialShape({-1})});
  EXPECT_EQ((*out)[0], PartialShape({-1}));
}

TEST_F(ShapeTest, CastAndSelect) {
  SetNodeAttr(&node_, "SrcT", DT_INT32);
  SetNodeAttr(&node_, "DstT", DT_FLOAT);
  auto out = Infer("Cast", {PartialShape({-1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({-1, 2}));
  NodeDef select;
  node_ = select;
  SetNodeAttr(&node_, "T", DT_FLOAT);
  out = Infer("Select", {PartialShape({4}), PartialShape({-1, 3}), PartialShape({-1, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({4, 3}));
  out = Infer("Select", {PartialShape({2, 1}), PartialShape({3}), PartialShape::Scalar()});
  EXPECT_EQ((*out)[0], PartialShape({2, 3}));
}

TEST(BroadcastLayoutTest, CollapsesDimensions) {
  const TensorShape shapes[] = {TensorShape({2, 3, 4}), TensorShape({3, 4})};
  auto l = BroadcastLayout::Make(shapes);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->output_shape(), TensorShape({2, 3, 4}));
  EXPECT_EQ(l->out_dims(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(l->reshape(1), (std::vector<int64_t>{1, 12}));
  EXPECT_EQ(l->bcast(1), (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(l->is_full(0));
  EXPECT_FALSE(l->is_full(1));
}

TEST(BroadcastLayoutTest, ThreeOperandErrorNamesThePair) {
  const TensorShape shapes[] = {TensorShape({2, 1}), TensorShape({3}), TensorShape({4})};
  auto l = BroadcastLayout::Make(shapes);
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(l.status().message().find("[3] vs. [4]"), std::string::npos) << l.status();
}

TEST(BroadcastIndexerTest, MapsOutputToOperand) {
  const TensorShape shapes[] = {TensorShape({2, 1}), TensorShape({1, 3})};
  auto l = BroadcastLayout::Make(shapes);
  ASSERT_TRUE(l.ok());
  BroadcastIndexer rows(*l, 0), cols(*l, 1);
  std::vector<int64_t> r, c;
  for (int64_t i = 0; i < 6; ++i) {
    r.push_back(rows.Map(i));
    c.push_back(cols.Map(i));
  }
  EXPECT_EQ(r, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(c, (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
}

}  // namespace
}  // namespace overseer

// Shape functions of the nn ops.

#include <string>
#include <vector>

#include "core/node_def_util.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

absl::StatusOr<std::vector<PartialShape>> Infer(const std::string& op,
                                                std::vector<PartialShape> inputs,
                                                const std::string& data_format = "") {
  NodeDef node;
  node.set_op(op);
  node.set_name("n");
  SetNodeAttr(&node, "T", DT_FLOAT);
  if (!data_format.empty()) SetNodeAttr(&node, "data_format", data_format);
  auto def = OpRegistry::Global()->Lookup(op);
  if (!def.ok()) return def.status();
  absl::Status s = AddDefaultsAndValidateAttrs(**def, &node);
  if (!s.ok()) return s;
  std::vector<const Tensor*> consts(inputs.size(), nullptr);
  return InferShapes(node, **def, inputs, consts);
}

TEST(NnShapeTest, BiasAdd) {
  auto out = Infer("BiasAdd", {PartialShape({-1, -1}), PartialShape({10})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({-1, 10}));
  EXPECT_FALSE(Infer("BiasAdd", {PartialShape({2, 3}), PartialShape({4})}).ok());
  EXPECT_FALSE(Infer("BiasAdd", {PartialShape({3}), PartialShape({3})}).ok());
  EXPECT_FALSE(Infer("BiasAdd", {PartialShape({2, 3}), PartialShape({3})}, "NCHW").ok());
  out = Infer("BiasAddGrad", {PartialShape({-1, 7})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({7}));
}

TEST(NnShapeTest, ActivationsAndGrads) {
  auto out = Infer("Relu", {PartialShape({-1, 3})});
  EXPECT_EQ((*out)[0], PartialShape({-1, 3}));
  out = Infer("SigmoidGrad", {PartialShape({-1, 3}), PartialShape({2, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({2, 3}));
  out = Infer("Softmax", {PartialShape({-1, 10})});
  EXPECT_EQ((*out)[0], PartialShape({-1, 10}));
  out = Infer("Relu6Grad", {PartialShape({-1, 3}), PartialShape({4, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({4, 3}));
  EXPECT_FALSE(Infer("EluGrad", {PartialShape({2}), PartialShape({3})}).ok());
  out = Infer("L2Loss", {PartialShape({-1, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape::Scalar());
}

TEST(NnShapeTest, CrossEntropies) {
  auto out =
      Infer("SoftmaxCrossEntropyWithLogits", {PartialShape({-1, 10}), PartialShape({32, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({32}));
  EXPECT_EQ((*out)[1], PartialShape({32, 10}));
  EXPECT_FALSE(
      Infer("SoftmaxCrossEntropyWithLogits", {PartialShape({2, 10}), PartialShape({2, 9})}).ok());
  out = Infer("SparseSoftmaxCrossEntropyWithLogits", {PartialShape({-1, 10}), PartialShape({8})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialShape({8}));
  EXPECT_EQ((*out)[1], PartialShape({8, 10}));
}

}  // namespace
}  // namespace overseer

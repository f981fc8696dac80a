#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsScalar;
using test::AsTensor;
using test::ExpectTensorEqual;
using test::KernelRunner;
using test::Value;

Tensor Iota(int n, const TensorShape& shape) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return AsTensor<float>(v, shape);
}

absl::StatusOr<std::vector<Tensor>> RunFloat(const std::string& op,
                                             const std::vector<TensorValue>& in) {
  KernelRunner k(op);
  k.Attr("T", DT_FLOAT);
  return k.Run(in);
}

TEST(ReshapeTest, InfersMinusOne) {
  auto out = RunFloat("Reshape", {Value(Iota(6, {6})), Value(AsTensor<int32_t>({-1, 2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), Iota(6, {3, 2}));

  out = RunFloat("Reshape", {Value(Iota(6, {2, 3})), Value(AsTensor<int32_t>({}, {0}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);

  out = RunFloat("Reshape", {Value(Iota(1, {1, 1})), Value(AsTensor<int32_t>({}, {0}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsScalar<float>(0));
}

TEST(ReshapeTest, ErrorsNameBothShapes) {
  auto out = RunFloat("Reshape", {Value(Iota(6, {2, 3})), Value(AsTensor<int32_t>({4}))});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("[2,3]"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("[4]"), std::string::npos) << out.status();

  out = RunFloat("Reshape", {Value(Iota(7, {7})), Value(AsTensor<int32_t>({2, -1}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunFloat("Reshape", {Value(Iota(4, {4})), Value(AsTensor<int32_t>({-1, -1}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunFloat("Reshape", {Value(Iota(0, {0})), Value(AsTensor<int32_t>({0, -1}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReshapeTest, ShapeFunction) {
  NodeDef def;
  def.set_name("r");
  def.set_op("Reshape");
  SetNodeAttr(&def, "T", DT_FLOAT);
  SetNodeAttr(&def, "Tshape", DT_INT32);
  const OpDef& op = *OpRegistry::Global()->Find("Reshape");
  Tensor target = AsTensor<int32_t>({-1, 4});
  auto shapes = InferShapes(def, op, {PartialShape({2, 6}), PartialShape({2})}, {nullptr, &target});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ(shapes->at(0), PartialShape({3, 4}));
  shapes = InferShapes(def, op, {PartialShape({-1, 6}), PartialShape({2})}, {nullptr, &target});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ(shapes->at(0), PartialShape({-1, 4}));
  shapes = InferShapes(def, op, {PartialShape({2, 6}), PartialShape({3})}, {});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ(shapes->at(0), PartialShape({-1, -1, -1}));
  Tensor bad = AsTensor<int32_t>({5});
  EXPECT_FALSE(
      InferShapes(def, op, {PartialShape({2, 6}), PartialShape({1})}, {nullptr, &bad}).ok());
}

TEST(ExpandDimsTest, InsertsAxis) {
  auto out = RunFloat("ExpandDims", {Value(Iota(6, {2, 3})), Value(AsScalar<int32_t>(-1))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), Iota(6, {2, 3, 1}));
  out = RunFloat("ExpandDims", {Value(Iota(6, {2, 3})), Value(AsScalar<int32_t>(0))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), Iota(6, {1, 2, 3}));
  out = RunFloat("ExpandDims", {Value(Iota(6, {2, 3})), Value(AsScalar<int32_t>(3))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SqueezeTest, AllOrListed) {
  KernelRunner all("Squeeze");
  all.Attr("T", DT_FLOAT);
  auto out = all.Run({Value(Iota(3, {1, 3, 1}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), Iota(3, {3}));

  KernelRunner listed("Squeeze");
  listed.Attr("T", DT_FLOAT).Attr("squeeze_dims", std::vector<int>{-1});
  out = listed.Run({Value(Iota(3, {1, 3, 1}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), Iota(3, {1, 3}));

  KernelRunner bad("Squeeze");
  bad.Attr("T", DT_FLOAT).Attr("squeeze_dims", std::vector<int>{1});
  EXPECT_EQ(bad.Run({Value(Iota(3, {1, 3, 1}))}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TransposeTest, Permutes) {
  auto out = RunFloat("Transpose", {Value(Iota(6, {2, 3})), Value(AsTensor<int32_t>({1, 0}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({0, 3, 1, 4, 2, 5}, {3, 2}));

  // [2,3,4] with perm [2,0,1]: out[k,i,j] = in[i,j,k] = 12i + 4j + k.
  out = RunFloat("Transpose", {Value(Iota(24, {2, 3, 4})), Value(AsTensor<int64_t>({2, 0, 1}))});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> expected;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) expected.push_back(12 * i + 4 * j + k);
  ExpectTensorEqual(out->at(0), AsTensor<float>(expected, {4, 2, 3}));

  out = RunFloat("Transpose", {Value(Iota(0, {0, 3})), Value(AsTensor<int32_t>({1, 0}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), Iota(0, {3, 0}));

  out = RunFloat("Transpose", {Value(Iota(6, {2, 3})), Value(AsTensor<int32_t>({0, 0}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunFloat("Transpose", {Value(Iota(6, {2, 3})), Value(AsTensor<int32_t>({0}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SliceTest, BeginAndSize) {
  KernelRunner k("Slice");
  k.Attr("T", DT_FLOAT).Attr("Index", DT_INT32);
  auto out = k.Run({Value(Iota(12, {3, 4})), Value(AsTensor<int32_t>({1, 1})),
                    Value(AsTensor<int32_t>({2, -1}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({5, 6, 7, 9, 10, 11}, {2, 3}));

  out = k.Run({Value(Iota(12, {3, 4})), Value(AsTensor<int32_t>({3, 0})),
               Value(AsTensor<int32_t>({0, 4}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), Iota(0, {0, 4}));

  out = k.Run({Value(Iota(12, {3, 4})), Value(AsTensor<int32_t>({2, 0})),
               Value(AsTensor<int32_t>({2, 1}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = k.Run(
      {Value(Iota(12, {3, 4})), Value(AsTensor<int32_t>({0})), Value(AsTensor<int32_t>({1}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SliceTest, Strings) {
  KernelRunner k("Slice");
  k.Attr("T", DT_STRING).Attr("Index", DT_INT64);
  auto out = k.Run({Value(AsTensor<std::string>({"a", "b", "c"})), Value(AsTensor<int64_t>({1})),
                    Value(AsTensor<int64_t>({2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<std::string>({"b", "c"}));
}

TEST(BroadcastToTest, Broadcasts) {
  auto out = RunFloat("BroadcastTo",
                      {Value(AsTensor<float>({1, 2, 3}, {3})), Value(AsTensor<int32_t>({2, 3}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({1, 2, 3, 1, 2, 3}, {2, 3}));

  out = RunFloat("BroadcastTo",
                 {Value(AsTensor<float>({1, 2}, {2, 1})), Value(AsTensor<int32_t>({2, 2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({1, 1, 2, 2}, {2, 2}));

  out = RunFloat("BroadcastTo", {Value(AsScalar<float>(4)), Value(AsTensor<int32_t>({0, 2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({}, {0, 2}));

  out = RunFloat("BroadcastTo",
                 {Value(AsTensor<float>({1, 2, 3}, {3})), Value(AsTensor<int32_t>({2, 2}))});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("[3]"), std::string::npos);
  EXPECT_NE(out.status().message().find("[2,2]"), std::string::npos);
}

}  // namespace
}  // namespace overseer

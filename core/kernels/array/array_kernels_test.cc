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

TEST(ConstTest, OutputsTheValue) {
  Tensor v = AsTensor<float>({1, 2, 3, 4}, {2, 2});
  KernelRunner k("Const");
  k.Attr("value", v).Attr("dtype", DT_FLOAT);
  auto out = k.Run({});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), v);
}

TEST(ConstTest, DtypeMismatchIsInvalid) {
  KernelRunner k("Const");
  k.Attr("value", AsScalar<int32_t>(1)).Attr("dtype", DT_FLOAT);
  EXPECT_EQ(k.Init().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConstTest, ShapeFnReadsTheValue) {
  NodeDef def;
  def.set_name("c");
  def.set_op("Const");
  SetNodeAttr(&def, "value", AsTensor<int32_t>({1, 2, 3}, {3, 1}));
  SetNodeAttr(&def, "dtype", DT_INT32);
  auto shapes = InferShapes(def, *OpRegistry::Global()->Find("Const"), {}, {});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ(shapes->at(0), PartialShape({3, 1}));
}

TEST(PlaceholderTest, UnfedFailsNamingTheNode) {
  KernelRunner k("Placeholder", "x");
  k.Attr("dtype", DT_FLOAT).Attr("shape", PartialShape({-1, 3}));
  auto out = k.Run({});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(),
            "You must feed a value for placeholder tensor 'x' with dtype float and shape "
            "[?,3]");
}

TEST(PlaceholderWithDefaultTest, ForwardsAndChecksShape) {
  KernelRunner k("PlaceholderWithDefault");
  k.Attr("dtype", DT_INT32).Attr("shape", PartialShape({-1}));
  auto out = k.Run({Value(AsTensor<int32_t>({4, 5}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<int32_t>({4, 5}));
  EXPECT_EQ(k.Run({Value(AsScalar<int32_t>(1))}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(IdentityTest, ValuesAndRefs) {
  KernelRunner k("Identity");
  k.Attr("T", DT_STRING);
  auto out = k.Run({Value(AsTensor<std::string>({"a", "b"}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<std::string>({"a", "b"}));

  KernelRunner r("Identity");
  r.Attr("T", DT_FLOAT);
  auto var = test::MakeVar(DT_FLOAT, AsScalar<float>(2.5f));
  out = r.Run({test::Ref(var)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsScalar<float>(2.5f));

  auto uninit = test::MakeVar(DT_FLOAT);
  EXPECT_EQ(r.Run({test::Ref(uninit)}).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(StopGradientTest, Forwards) {
  KernelRunner k("StopGradient");
  k.Attr("T", DT_DOUBLE);
  auto out = k.Run({Value(AsTensor<double>({}, {0, 2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<double>({}, {0, 2}));
}

TEST(NoOpTest, HasNoOutputs) {
  KernelRunner k("NoOp");
  auto out = k.Run({});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->empty());
}

TEST(ShapeTest, Int32AndInt64) {
  KernelRunner k("Shape");
  k.Attr("T", DT_FLOAT);
  auto out = k.Run({Value(Tensor(DT_FLOAT, {2, 0, 3}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<int32_t>({2, 0, 3}));

  KernelRunner k64("Shape");
  k64.Attr("T", DT_FLOAT).Attr("out_type", DT_INT64);
  out = k64.Run({Value(AsScalar<float>(1))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<int64_t>({}, {0}));
}

TEST(SizeTest, CountsElements) {
  KernelRunner k("Size");
  k.Attr("T", DT_BOOL);
  auto out = k.Run({Value(Tensor(DT_BOOL, {4, 5}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsScalar<int32_t>(20));
}

TEST(FillTest, FillsAndRejectsBadDims) {
  KernelRunner k("Fill");
  k.Attr("T", DT_FLOAT);
  auto out = k.Run({Value(AsTensor<int32_t>({2, 3})), Value(AsScalar<float>(7))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({7, 7, 7, 7, 7, 7}, {2, 3}));

  out = k.Run({Value(AsTensor<int32_t>({0})), Value(AsScalar<float>(7))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({}, {0}));

  EXPECT_EQ(k.Run({Value(AsTensor<int32_t>({-1})), Value(AsScalar<float>(7))}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(k.Run({Value(AsTensor<int32_t>({2})), Value(AsTensor<float>({1, 2}))}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ZerosOnesLikeTest, MatchShapeAndType) {
  KernelRunner zeros("ZerosLike");
  zeros.Attr("T", DT_INT64);
  auto out = zeros.Run({Value(AsTensor<int64_t>({5, 6, 7}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<int64_t>({0, 0, 0}));

  KernelRunner ones("OnesLike");
  ones.Attr("T", DT_BOOL);
  out = ones.Run({Value(AsTensor<bool>({false, false}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<bool>({true, true}));
}

TEST(ReducedShapeTest, SetsReducedAxesToOne) {
  KernelRunner k("ReducedShape");
  auto out = k.Run({Value(AsTensor<int32_t>({2, 3, 5})), Value(AsTensor<int32_t>({0, -1}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<int32_t>({1, 3, 1}));

  out = k.Run({Value(AsTensor<int32_t>({2, 3})), Value(AsScalar<int32_t>(1))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<int32_t>({2, 1}));

  EXPECT_EQ(k.Run({Value(AsTensor<int32_t>({2, 3})), Value(AsScalar<int32_t>(2))}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

#include <cmath>
#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsScalar;
using test::AsTensor;
using test::ExpectTensorEqual;
using test::ExpectTensorNear;
using test::Value;

// Runs a one-output op with attr T taken from the first input.
absl::StatusOr<Tensor> RunOp(const std::string& op, const std::vector<Tensor>& inputs) {
  test::KernelRunner runner(op);
  runner.Attr("T", inputs[0].dtype());
  std::vector<TensorValue> values;
  for (const Tensor& t : inputs) values.push_back(Value(t));
  auto out = runner.Run(values);
  if (!out.ok()) return out.status();
  return out->at(0);
}

Tensor MustRun(const std::string& op, const std::vector<Tensor>& inputs) {
  absl::StatusOr<Tensor> out = RunOp(op, inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : Tensor();
}

TEST(UnaryOpsTest, ValuesForEveryDtype) {
  ExpectTensorEqual(MustRun("Neg", {AsTensor<float>({1, -2, 0})}), AsTensor<float>({-1, 2, 0}));
  ExpectTensorEqual(MustRun("Neg", {AsTensor<int32_t>({1, -2})}), AsTensor<int32_t>({-1, 2}));
  ExpectTensorEqual(MustRun("Neg", {AsTensor<int64_t>({5})}), AsTensor<int64_t>({-5}));
  ExpectTensorEqual(MustRun("Square", {AsTensor<double>({3, -2})}), AsTensor<double>({9, 4}));
  ExpectTensorEqual(MustRun("Square", {AsTensor<int64_t>({-3})}), AsTensor<int64_t>({9}));
  ExpectTensorNear(MustRun("Sqrt", {AsTensor<float>({4, 2})}),
                   AsTensor<float>({2, std::sqrt(2.0f)}));
  ExpectTensorNear(MustRun("Exp", {AsTensor<double>({0, 1})}), AsTensor<double>({1, M_E}));
  ExpectTensorNear(MustRun("Log", {AsTensor<float>({1, static_cast<float>(M_E)})}),
                   AsTensor<float>({0, 1}));
  ExpectTensorNear(MustRun("Reciprocal", {AsTensor<float>({2, -4})}),
                   AsTensor<float>({0.5f, -0.25f}));
}

TEST(UnaryOpsTest, FloorSinCos) {
  ExpectTensorEqual(MustRun("Floor", {AsTensor<float>({1.5f, -1.5f, 2, -0.0f})}),
                    AsTensor<float>({1, -2, 2, -0.0f}));
  ExpectTensorNear(MustRun("Sin", {AsTensor<double>({0, M_PI / 2, M_PI / 6})}),
                   AsTensor<double>({0, 1, 0.5}));
  ExpectTensorNear(MustRun("Cos", {AsTensor<float>({0, static_cast<float>(M_PI)})}),
                   AsTensor<float>({1, -1}));
  for (const char* op : {"Floor", "Sin", "Cos"}) {
    test::KernelRunner runner(op);
    runner.Attr("T", DT_INT64);
    EXPECT_FALSE(runner.Init().ok()) << op;
  }
}

TEST(BinaryOpsTest, PowFloatIntegerAndBroadcast) {
  ExpectTensorNear(MustRun("Pow", {AsTensor<float>({2, 4, 9}), AsTensor<float>({3, 0.5f, -1})}),
                   AsTensor<float>({8, 2, 1.0f / 9}));
  ExpectTensorEqual(
      MustRun("Pow", {AsTensor<int32_t>({2, -3, 5, 0}), AsTensor<int32_t>({10, 3, 0, 0})}),
      AsTensor<int32_t>({1024, -27, 1, 1}));
  // A scalar exponent against a matrix.
  ExpectTensorEqual(
      MustRun("Pow", {AsTensor<double>({1, 2, 3, 4}, TensorShape({2, 2})), AsScalar<double>(2)}),
      AsTensor<double>({1, 4, 9, 16}, TensorShape({2, 2})));
  absl::StatusOr<Tensor> out = RunOp("Pow", {AsTensor<int64_t>({2}), AsTensor<int64_t>({-1})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("negative integer powers"), std::string::npos);
}

TEST(UnaryOpsTest, EmptyAndScalar) {
  ExpectTensorEqual(MustRun("Neg", {AsTensor<float>({}, TensorShape({0, 3}))}),
                    AsTensor<float>({}, TensorShape({0, 3})));
  ExpectTensorEqual(MustRun("Square", {AsScalar<float>(3)}), AsScalar<float>(9));
}

TEST(UnaryOpsTest, FloatOnlyOpRejectsIntegers) {
  test::KernelRunner runner("Sqrt");
  runner.Attr("T", DT_INT32);
  EXPECT_FALSE(runner.Init().ok());
}

TEST(BinaryOpsTest, SameShape) {
  ExpectTensorEqual(MustRun("Add", {AsTensor<float>({1, 2}), AsTensor<float>({10, 20})}),
                    AsTensor<float>({11, 22}));
  ExpectTensorEqual(MustRun("Sub", {AsTensor<double>({1, 2}), AsTensor<double>({10, 20})}),
                    AsTensor<double>({-9, -18}));
  ExpectTensorEqual(MustRun("Mul", {AsTensor<int32_t>({3, 4}), AsTensor<int32_t>({5, -6})}),
                    AsTensor<int32_t>({15, -24}));
  ExpectTensorEqual(MustRun("Maximum", {AsTensor<int64_t>({3, 4}), AsTensor<int64_t>({5, 1})}),
                    AsTensor<int64_t>({5, 4}));
  ExpectTensorEqual(MustRun("Minimum", {AsTensor<float>({3, 4}), AsTensor<float>({5, 1})}),
                    AsTensor<float>({3, 1}));
}

TEST(BinaryOpsTest, DivFloatAndIntegerTruncation) {
  ExpectTensorEqual(MustRun("Div", {AsTensor<float>({1, 3}), AsTensor<float>({2, 4})}),
                    AsTensor<float>({0.5f, 0.75f}));
  ExpectTensorEqual(MustRun("Div", {AsTensor<int32_t>({7, -7}), AsTensor<int32_t>({2, 2})}),
                    AsTensor<int32_t>({3, -3}));
  absl::StatusOr<Tensor> bad = RunOp("Div", {AsTensor<int64_t>({1, 2}), AsTensor<int64_t>({1, 0})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("division by zero"), std::string::npos);
}

TEST(BinaryOpsTest, BroadcastMatrixAndVector) {
  Tensor a = AsTensor<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Tensor b = AsTensor<float>({10, 20, 30});
  Tensor want = AsTensor<float>({11, 22, 33, 14, 25, 36}, TensorShape({2, 3}));
  ExpectTensorEqual(MustRun("Add", {a, b}), want);
  ExpectTensorEqual(MustRun("Add", {b, a}), want);
  ExpectTensorEqual(MustRun("Sub", {b, a}),
                    AsTensor<float>({9, 18, 27, 6, 15, 24}, TensorShape({2, 3})));
}

TEST(BinaryOpsTest, BroadcastColumnAndRow) {
  Tensor col = AsTensor<int32_t>({1, 2}, TensorShape({2, 1}));
  Tensor row = AsTensor<int32_t>({10, 20, 30}, TensorShape({1, 3}));
  ExpectTensorEqual(MustRun("Mul", {col, row}),
                    AsTensor<int32_t>({10, 20, 30, 20, 40, 60}, TensorShape({2, 3})));
}

TEST(BinaryOpsTest, ScalarAndTensor) {
  Tensor t = AsTensor<double>({1, 2, 3, 4}, TensorShape({2, 2}));
  ExpectTensorEqual(MustRun("Sub", {AsScalar<double>(10), t}),
                    AsTensor<double>({9, 8, 7, 6}, TensorShape({2, 2})));
  ExpectTensorEqual(MustRun("Div", {t, AsScalar<double>(2)}),
                    AsTensor<double>({0.5, 1, 1.5, 2}, TensorShape({2, 2})));
  // A one-element tensor of higher rank still raises the output rank.
  ExpectTensorEqual(
      MustRun("Add", {AsTensor<float>({1}, TensorShape({1, 1, 1})), AsTensor<float>({1, 2})}),
      AsTensor<float>({2, 3}, TensorShape({1, 1, 2})));
}

TEST(BinaryOpsTest, Rank3Broadcast) {
  // [2,1,3] + [2,1] -> [2,2,3]
  Tensor a = AsTensor<int64_t>({1, 2, 3, 4, 5, 6}, TensorShape({2, 1, 3}));
  Tensor b = AsTensor<int64_t>({10, 20}, TensorShape({2, 1}));
  ExpectTensorEqual(
      MustRun("Add", {a, b}),
      AsTensor<int64_t>({11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26}, TensorShape({2, 2, 3})));
}

TEST(BinaryOpsTest, HighRankAlternatingBroadcastUsesFallback) {
  // Collapses to rank 5: [2,1,2,1,2] + [1,2,1,2,1].
  std::vector<float> av(8), bv(4), want;
  for (int i = 0; i < 8; ++i) av[i] = static_cast<float>(i);
  for (int i = 0; i < 4; ++i) bv[i] = static_cast<float>(100 * (i + 1));
  for (int i0 = 0; i0 < 2; ++i0)
    for (int i1 = 0; i1 < 2; ++i1)
      for (int i2 = 0; i2 < 2; ++i2)
        for (int i3 = 0; i3 < 2; ++i3)
          for (int i4 = 0; i4 < 2; ++i4) want.push_back(av[i0 * 4 + i2 * 2 + i4] + bv[i1 * 2 + i3]);
  ExpectTensorEqual(MustRun("Add", {AsTensor<float>(av, TensorShape({2, 1, 2, 1, 2})),
                                    AsTensor<float>(bv, TensorShape({1, 2, 1, 2, 1}))}),
                    AsTensor<float>(want, TensorShape({2, 2, 2, 2, 2})));
}

TEST(BinaryOpsTest, LargeBroadcastMatchesLoop) {
  // Large enough for the Eigen device to split the work across threads.
  const int rows = 700, cols = 300;
  std::vector<float> m(rows * cols), v(cols), col(rows), want(rows * cols), want_col(rows * cols);
  for (int i = 0; i < rows * cols; ++i) m[i] = static_cast<float>(i % 97);
  for (int j = 0; j < cols; ++j) v[j] = static_cast<float>(j);
  for (int i = 0; i < rows; ++i) col[i] = static_cast<float>(-i);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      want[i * cols + j] = m[i * cols + j] * v[j];
      want_col[i * cols + j] = col[i] + v[j];
    }
  }
  ExpectTensorEqual(
      MustRun("Mul", {AsTensor<float>(m, TensorShape({rows, cols})), AsTensor<float>(v)}),
      AsTensor<float>(want, TensorShape({rows, cols})));
  ExpectTensorEqual(MustRun("Add", {AsTensor<float>(col, TensorShape({rows, 1})),
                                    AsTensor<float>(v, TensorShape({1, cols}))}),
                    AsTensor<float>(want_col, TensorShape({rows, cols})));
}

TEST(BinaryOpsTest, IncompatibleShapesNameBoth) {
  absl::StatusOr<Tensor> out = RunOp(
      "Add",
      {AsTensor<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})), AsTensor<float>({1, 2, 3, 4})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("Incompatible shapes: [2,3] vs. [4]"), std::string::npos)
      << out.status();
}

TEST(BinaryOpsTest, EmptyBroadcast) {
  ExpectTensorEqual(
      MustRun("Mul", {AsTensor<float>({}, TensorShape({0, 3})), AsTensor<float>({1, 2, 3})}),
      AsTensor<float>({}, TensorShape({0, 3})));
}

TEST(CompareOpsTest, BoolOutputsWithBroadcast) {
  Tensor a = AsTensor<float>({1, 5, 3, 4}, TensorShape({2, 2}));
  Tensor s = AsScalar<float>(3);
  ExpectTensorEqual(MustRun("Less", {a, s}),
                    AsTensor<bool>({true, false, false, false}, TensorShape({2, 2})));
  ExpectTensorEqual(MustRun("LessEqual", {a, s}),
                    AsTensor<bool>({true, false, true, false}, TensorShape({2, 2})));
  ExpectTensorEqual(MustRun("Greater", {a, s}),
                    AsTensor<bool>({false, true, false, true}, TensorShape({2, 2})));
  ExpectTensorEqual(MustRun("GreaterEqual", {a, s}),
                    AsTensor<bool>({false, true, true, true}, TensorShape({2, 2})));
  ExpectTensorEqual(MustRun("Equal", {AsTensor<int32_t>({1, 2}), AsTensor<int32_t>({1, 3})}),
                    AsTensor<bool>({true, false}));
  ExpectTensorEqual(MustRun("NotEqual", {AsTensor<int64_t>({1, 2}, TensorShape({2, 1})),
                                         AsTensor<int64_t>({1, 2})}),
                    AsTensor<bool>({false, true, true, false}, TensorShape({2, 2})));
  ExpectTensorEqual(MustRun("Equal", {AsTensor<bool>({true, false}), AsScalar<bool>(false)}),
                    AsTensor<bool>({false, true}));
  ExpectTensorEqual(MustRun("Less", {AsTensor<double>({1}), AsTensor<double>({2})}),
                    AsTensor<bool>({true}));
}

TEST(CompareOpsTest, LogicalAnd) {
  test::KernelRunner runner("LogicalAnd");
  auto out = runner.Run({Value(AsTensor<bool>({true, true, false, false})),
                         Value(AsTensor<bool>({true, false, true, false}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<bool>({true, false, false, false}));
}

absl::StatusOr<Tensor> RunAddN(const std::vector<Tensor>& inputs) {
  test::KernelRunner runner("AddN");
  runner.Attr("T", inputs[0].dtype()).Attr("N", static_cast<int>(inputs.size()));
  std::vector<TensorValue> values;
  for (const Tensor& t : inputs) values.push_back(Value(t));
  auto out = runner.Run(values);
  if (!out.ok()) return out.status();
  return out->at(0);
}

TEST(AddNTest, SumsAnyCount) {
  Tensor a = AsTensor<float>({1, 2}), b = AsTensor<float>({10, 20}),
         c = AsTensor<float>({100, 200});
  ExpectTensorEqual(*RunAddN({a}), a);
  ExpectTensorEqual(*RunAddN({a, b}), AsTensor<float>({11, 22}));
  ExpectTensorEqual(*RunAddN({a, b, c}), AsTensor<float>({111, 222}));
  ExpectTensorEqual(*RunAddN({a, b, c, a}), AsTensor<float>({112, 224}));
  ExpectTensorEqual(
      *RunAddN({AsTensor<int32_t>({1}), AsTensor<int32_t>({2}), AsTensor<int32_t>({3}),
                AsTensor<int32_t>({4}), AsTensor<int32_t>({5})}),
      AsTensor<int32_t>({15}));
}

TEST(AddNTest, ShapeMismatchIsInvalidArgument) {
  absl::StatusOr<Tensor> out = RunAddN({AsTensor<float>({1, 2}), AsTensor<float>({1, 2, 3})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("[2] != input 1: [3]"), std::string::npos) << out.status();
}

std::vector<Tensor> RunBcastArgs(const Tensor& s0, const Tensor& s1) {
  test::KernelRunner runner("BroadcastGradientArgs");
  runner.Attr("T", s0.dtype());
  auto out = runner.Run({Value(s0), Value(s1)});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>(2);
}

TEST(BroadcastGradientArgsTest, TensorFlowCases) {
  auto r = RunBcastArgs(AsTensor<int32_t>({2, 3}), AsTensor<int32_t>({3}));
  ExpectTensorEqual(r[0], AsTensor<int32_t>({}));
  ExpectTensorEqual(r[1], AsTensor<int32_t>({0}));
  r = RunBcastArgs(AsTensor<int32_t>({2, 1}), AsTensor<int32_t>({1, 3}));
  ExpectTensorEqual(r[0], AsTensor<int32_t>({1}));
  ExpectTensorEqual(r[1], AsTensor<int32_t>({0}));
  r = RunBcastArgs(AsTensor<int64_t>({}), AsTensor<int64_t>({2, 3}));
  ExpectTensorEqual(r[0], AsTensor<int64_t>({0, 1}));
  ExpectTensorEqual(r[1], AsTensor<int64_t>({}));
  // Axes where both are 1 are listed for both sides.
  r = RunBcastArgs(AsTensor<int32_t>({1, 4}), AsTensor<int32_t>({1, 4}));
  ExpectTensorEqual(r[0], AsTensor<int32_t>({0}));
  ExpectTensorEqual(r[1], AsTensor<int32_t>({0}));
  r = RunBcastArgs(AsTensor<int32_t>({5, 2, 3}), AsTensor<int32_t>({5, 2, 3}));
  ExpectTensorEqual(r[0], AsTensor<int32_t>({}));
  ExpectTensorEqual(r[1], AsTensor<int32_t>({}));
}

TEST(BroadcastGradientArgsTest, IncompatibleShapes) {
  test::KernelRunner runner("BroadcastGradientArgs");
  auto out = runner.Run({Value(AsTensor<int32_t>({2, 3})), Value(AsTensor<int32_t>({4}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("[2,3] vs. [4]"), std::string::npos) << out.status();
}

}  // namespace
}  // namespace overseer

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
using test::KernelRunner;
using test::Value;

absl::StatusOr<Tensor> RunOp(const std::string& op, const std::vector<Tensor>& inputs,
                             const std::string& data_format = "") {
  test::KernelRunner runner(op);
  runner.Attr("T", inputs[0].dtype());
  if (!data_format.empty()) runner.Attr("data_format", data_format);
  std::vector<TensorValue> values;
  for (const Tensor& t : inputs) values.push_back(Value(t));
  auto out = runner.Run(values);
  if (!out.ok()) return out.status();
  return out->at(0);
}

Tensor MustRun(const std::string& op, const std::vector<Tensor>& inputs) {
  auto out = RunOp(op, inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : Tensor();
}

TEST(BiasAddTest, AddsAlongLastAxis) {
  Tensor value = AsTensor<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  ExpectTensorEqual(MustRun("BiasAdd", {value, AsTensor<float>({10, 20, 30})}),
                    AsTensor<float>({11, 22, 33, 14, 25, 36}, TensorShape({2, 3})));
  Tensor v3 = AsTensor<int32_t>({1, 2, 3, 4, 5, 6, 7, 8}, TensorShape({2, 2, 2}));
  ExpectTensorEqual(
      MustRun("BiasAdd", {v3, AsTensor<int32_t>({100, 200})}),
      AsTensor<int32_t>({101, 202, 103, 204, 105, 206, 107, 208}, TensorShape({2, 2, 2})));
  ExpectTensorEqual(
      MustRun("BiasAdd", {AsTensor<double>({}, TensorShape({0, 2})), AsTensor<double>({1, 2})}),
      AsTensor<double>({}, TensorShape({0, 2})));
}

TEST(BiasAddTest, Errors) {
  auto bad = RunOp("BiasAdd", {AsTensor<float>(std::vector<float>(6), TensorShape({2, 3})),
                               AsTensor<float>({1, 2})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[2] vs. [2,3]"), std::string::npos) << bad.status();
  EXPECT_EQ(RunOp("BiasAdd", {AsTensor<float>({1, 2}), AsTensor<float>({1, 2})}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto nchw = RunOp(
      "BiasAdd",
      {AsTensor<float>(std::vector<float>(6), TensorShape({2, 3})), AsTensor<float>({1, 2, 3})},
      "NCHW");
  EXPECT_EQ(nchw.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(nchw.status().message().find("NCHW"), std::string::npos) << nchw.status();
}

TEST(BiasAddGradTest, SumsAllButLastAxis) {
  Tensor g = AsTensor<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  ExpectTensorEqual(MustRun("BiasAddGrad", {g}), AsTensor<float>({5, 7, 9}));
  Tensor g3 = AsTensor<int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, TensorShape({2, 2, 2}));
  ExpectTensorEqual(MustRun("BiasAddGrad", {g3}), AsTensor<int64_t>({16, 20}));
  ExpectTensorEqual(MustRun("BiasAddGrad", {AsTensor<float>({}, TensorShape({0, 3}))}),
                    AsTensor<float>({0, 0, 0}));
}

TEST(ActivationTest, Values) {
  ExpectTensorEqual(MustRun("Relu", {AsTensor<float>({-1, 0, 2})}), AsTensor<float>({0, 0, 2}));
  ExpectTensorEqual(MustRun("Relu", {AsTensor<int32_t>({-3, 4})}), AsTensor<int32_t>({0, 4}));
  ExpectTensorNear(MustRun("Sigmoid", {AsTensor<float>({0, 2})}),
                   AsTensor<float>({0.5f, static_cast<float>(1 / (1 + std::exp(-2.0)))}));
  ExpectTensorNear(MustRun("Tanh", {AsTensor<double>({0, 1})}),
                   AsTensor<double>({0, std::tanh(1.0)}));
  ExpectTensorEqual(MustRun("Tanh", {AsTensor<float>({}, TensorShape({0, 3}))}),
                    AsTensor<float>({}, TensorShape({0, 3})));
}

TEST(ActivationGradTest, Values) {
  ExpectTensorEqual(MustRun("ReluGrad", {AsTensor<float>({5, 6, 7}), AsTensor<float>({-1, 0, 2})}),
                    AsTensor<float>({0, 0, 7}));
  ExpectTensorEqual(MustRun("ReluGrad", {AsTensor<int64_t>({5, 6}), AsTensor<int64_t>({1, -1})}),
                    AsTensor<int64_t>({5, 0}));
  // SigmoidGrad(y, dy) = dy * y * (1 - y)
  ExpectTensorNear(
      MustRun("SigmoidGrad", {AsTensor<float>({0.5f, 0.25f}), AsTensor<float>({2, 4})}),
      AsTensor<float>({0.5f, 0.75f}));
  // TanhGrad(y, dy) = dy * (1 - y^2)
  ExpectTensorNear(MustRun("TanhGrad", {AsTensor<double>({0.5, 0}), AsTensor<double>({2, 3})}),
                   AsTensor<double>({1.5, 3}));
  // SqrtGrad(y, dy) = dy * 0.5 / y
  ExpectTensorNear(MustRun("SqrtGrad", {AsTensor<float>({2, 0.5f}), AsTensor<float>({4, 1})}),
                   AsTensor<float>({1, 1}));
}

// As TensorFlow's nn_test Relu6Test, EluTest and L2LossTest.
TEST(ActivationTest, Relu6EluAndL2Loss) {
  ExpectTensorEqual(MustRun("Relu6", {AsTensor<float>({-1, 0, 2, 6, 7.5f})}),
                    AsTensor<float>({0, 0, 2, 6, 6}));
  ExpectTensorEqual(MustRun("Relu6", {AsTensor<int32_t>({-3, 4, 9})}),
                    AsTensor<int32_t>({0, 4, 6}));
  ExpectTensorNear(MustRun("Elu", {AsTensor<double>({-1, 0, 2})}),
                   AsTensor<double>({std::exp(-1.0) - 1, 0, 2}));
  ExpectTensorEqual(
      MustRun("Relu6Grad", {AsTensor<float>({1, 2, 3, 4}), AsTensor<float>({-1, 3, 6, 7})}),
      AsTensor<float>({0, 2, 0, 0}));
  // EluGrad(gradients, outputs) = gradients * (outputs + 1) where outputs < 0.
  ExpectTensorNear(MustRun("EluGrad", {AsTensor<float>({2, 2}), AsTensor<float>({-0.5f, 3})}),
                   AsTensor<float>({1, 2}));
  ExpectTensorNear(MustRun("L2Loss", {AsTensor<float>({1, 2, 3}, TensorShape({3, 1}))}),
                   AsScalar<float>(7));
  ExpectTensorEqual(MustRun("L2Loss", {AsTensor<double>({}, TensorShape({0, 2}))}),
                    AsScalar<double>(0));
  // Elu and L2Loss are for floating types.
  EXPECT_EQ(RunOp("Elu", {AsTensor<int32_t>({1})}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// As TensorFlow's in_topk_op_test: ties count for the target; an out-of-range target
// or a prediction that is not finite is false.
TEST(InTopKTest, Values) {
  const Tensor predictions =
      AsTensor<float>({0.1f, 0.3f, 0.2f, 0.4f, 0.1f, 0.2f, 0.3f, 0.4f}, TensorShape({2, 4}));
  auto run = [&](const Tensor& targets, const Tensor& k) {
    KernelRunner runner("InTopKV2");
    runner.Attr("T", targets.dtype());
    return runner.Run({Value(predictions), Value(targets), Value(k)});
  };
  auto top1 = run(AsTensor<int32_t>({3, 3}), AsScalar<int32_t>(1));
  ASSERT_TRUE(top1.ok()) << top1.status();
  ExpectTensorEqual(top1->at(0), AsTensor<bool>({true, true}));
  auto top2 = run(AsTensor<int64_t>({1, 1}), AsScalar<int64_t>(2));
  ASSERT_TRUE(top2.ok()) << top2.status();
  ExpectTensorEqual(top2->at(0), AsTensor<bool>({true, false}));
  auto out_of_range = run(AsTensor<int32_t>({4, -1}), AsScalar<int32_t>(4));
  ASSERT_TRUE(out_of_range.ok()) << out_of_range.status();
  ExpectTensorEqual(out_of_range->at(0), AsTensor<bool>({false, false}));

  const Tensor ties = AsTensor<float>({0.5f, 0.5f, 0.1f}, TensorShape({1, 3}));
  KernelRunner tie("InTopKV2");
  tie.Attr("T", DT_INT32);
  auto tied = tie.Run({Value(ties), Value(AsTensor<int32_t>({1})), Value(AsScalar<int32_t>(1))});
  ASSERT_TRUE(tied.ok()) << tied.status();
  ExpectTensorEqual(tied->at(0), AsTensor<bool>({true}));
  const Tensor nan = AsTensor<float>({std::nanf(""), 0.5f}, TensorShape({1, 2}));
  auto with_nan = tie.Run({Value(nan), Value(AsTensor<int32_t>({1})), Value(AsScalar<int32_t>(2))});
  ASSERT_TRUE(with_nan.ok()) << with_nan.status();
  ExpectTensorEqual(with_nan->at(0), AsTensor<bool>({false}));

  auto bad = run(AsTensor<int32_t>({1}), AsScalar<int32_t>(1));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
}

// tf.nn.top_k: per row of the last dimension, largest first, ties to the lower index,
// NaN first; any leading dimensions; every numeric dtype.
TEST(TopKTest, ValuesAndIndices) {
  auto run = [](const Tensor& input, int32_t k) {
    KernelRunner runner("TopKV2");
    runner.Attr("T", input.dtype());
    return runner.Run({Value(input), Value(AsScalar<int32_t>(k))});
  };
  auto top = run(AsTensor<float>({3, 1, 4, 1, 5, 9, 2, 6}, TensorShape({2, 4})), 2);
  ASSERT_TRUE(top.ok()) << top.status();
  ExpectTensorEqual(top->at(0), AsTensor<float>({4, 3, 9, 6}, TensorShape({2, 2})));
  ExpectTensorEqual(top->at(1), AsTensor<int32_t>({2, 0, 1, 3}, TensorShape({2, 2})));
  auto ties = run(AsTensor<int64_t>({7, 7, 1, 7}), 3);
  ASSERT_TRUE(ties.ok()) << ties.status();
  ExpectTensorEqual(ties->at(0), AsTensor<int64_t>({7, 7, 7}));
  ExpectTensorEqual(ties->at(1), AsTensor<int32_t>({0, 1, 3}));
  auto nan = run(AsTensor<double>({1, std::nan(""), 2}), 2);
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_TRUE(std::isnan(nan->at(0).data<double>()[0]));
  EXPECT_EQ(nan->at(0).data<double>()[1], 2);
  ExpectTensorEqual(nan->at(1), AsTensor<int32_t>({1, 2}));
  auto none = run(AsTensor<int32_t>({1, 2, 3, 4}, TensorShape({2, 1, 2})), 0);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->at(0).shape(), TensorShape({2, 1, 0}));
}

TEST(TopKTest, BadInputIsInvalidArgument) {
  auto run = [](const Tensor& input, const Tensor& k) {
    KernelRunner runner("TopKV2");
    runner.Attr("T", input.dtype());
    return runner.Run({Value(input), Value(k)});
  };
  auto too_many = run(AsTensor<float>({1, 2}), AsScalar<int32_t>(3));
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_many.status().message().find("at least k = 3 columns, got 2"), std::string::npos)
      << too_many.status();
  EXPECT_EQ(run(AsTensor<float>({1, 2}), AsScalar<int32_t>(-1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run(AsScalar<float>(1), AsScalar<int32_t>(0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run(AsTensor<float>({1, 2}), AsTensor<int32_t>({1})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TopKTest, GradScattersIntoTheChosenEntries) {
  KernelRunner runner("_TopKGrad");
  runner.Attr("T", DT_FLOAT);
  auto out = runner.Run({Value(AsTensor<float>({0, 0, 0, 0, 0, 0}, TensorShape({2, 3}))),
                         Value(AsTensor<int32_t>({2, 0, 1, 2}, TensorShape({2, 2}))),
                         Value(AsTensor<float>({10, 20, 30, 40}, TensorShape({2, 2})))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({20, 0, 10, 0, 30, 40}, TensorShape({2, 3})));
  auto bad = runner.Run({Value(AsTensor<float>({0, 0}, TensorShape({1, 2}))),
                         Value(AsTensor<int32_t>({5}, TensorShape({1, 1}))),
                         Value(AsTensor<float>({1}, TensorShape({1, 1})))});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
}

TEST(ActivationGradTest, ShapeMismatchNamesBoth) {
  auto bad = RunOp("TanhGrad", {AsTensor<float>({1, 2}), AsTensor<float>({1, 2, 3})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[2] vs. [3]"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace overseer

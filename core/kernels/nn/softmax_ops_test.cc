#include <cmath>
#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsTensor;
using test::ExpectTensorNear;
using test::Value;

std::vector<double> SoftmaxRow(const std::vector<double>& x) {
  double m = x[0], sum = 0;
  for (double v : x) m = std::max(m, v);
  std::vector<double> out;
  for (double v : x) sum += std::exp(v - m);
  for (double v : x) out.push_back(std::exp(v - m) / sum);
  return out;
}

absl::StatusOr<std::vector<Tensor>> RunOp(const std::string& op, const std::vector<Tensor>& in) {
  test::KernelRunner runner(op);
  runner.Attr("T", in[0].dtype());
  if (in.size() > 1 && op == "SparseSoftmaxCrossEntropyWithLogits") {
    runner.Attr("Tlabels", in[1].dtype());
  }
  std::vector<TensorValue> values;
  for (const Tensor& t : in) values.push_back(Value(t));
  return runner.Run(values);
}

TEST(SoftmaxTest, RowsSumToOneAndAreStable) {
  // The second row would overflow exp() without the max shift.
  Tensor logits = AsTensor<float>({1, 2, 3, 1000, 1001, 1002}, TensorShape({2, 3}));
  auto out = RunOp("Softmax", {logits});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> row = SoftmaxRow({1, 2, 3});
  std::vector<float> want;
  for (int r = 0; r < 2; ++r)
    for (double v : row) want.push_back(static_cast<float>(v));
  ExpectTensorNear(out->at(0), AsTensor<float>(want, TensorShape({2, 3})));
}

TEST(SoftmaxTest, LogSoftmaxRank1And3) {
  auto out = RunOp("LogSoftmax", {AsTensor<double>({1, 2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> row = SoftmaxRow({1, 2, 3});
  ExpectTensorNear(out->at(0),
                   AsTensor<double>({std::log(row[0]), std::log(row[1]), std::log(row[2])}));
  out = RunOp("Softmax", {AsTensor<double>({0, 0, 5, 5}, TensorShape({2, 1, 2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorNear(out->at(0), AsTensor<double>({0.5, 0.5, 0.5, 0.5}, TensorShape({2, 1, 2})));
  EXPECT_FALSE(RunOp("Softmax", {Tensor::Scalar<float>(1)}).ok());
  out = RunOp("Softmax", {AsTensor<float>({}, TensorShape({0, 4}))});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->at(0).shape(), TensorShape({0, 4}));
}

TEST(SoftmaxXentTest, LossAndBackprop) {
  Tensor logits = AsTensor<float>({1, 2, 3, 0, 0, 0}, TensorShape({2, 3}));
  Tensor labels = AsTensor<float>({0, 0, 1, 0.5f, 0.5f, 0}, TensorShape({2, 3}));
  auto out = RunOp("SoftmaxCrossEntropyWithLogits", {logits, labels});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> p0 = SoftmaxRow({1, 2, 3});
  const double third = 1.0 / 3;
  ExpectTensorNear(out->at(0), AsTensor<float>({static_cast<float>(-std::log(p0[2])),
                                                static_cast<float>(-std::log(third))}));
  ExpectTensorNear(out->at(1),
                   AsTensor<float>({static_cast<float>(p0[0]), static_cast<float>(p0[1]),
                                    static_cast<float>(p0[2] - 1), static_cast<float>(third - 0.5),
                                    static_cast<float>(third - 0.5), static_cast<float>(third)},
                                   TensorShape({2, 3})));
}

TEST(SoftmaxXentTest, ShapeMismatch) {
  auto out = RunOp("SoftmaxCrossEntropyWithLogits",
                   {AsTensor<double>(std::vector<double>(6), TensorShape({2, 3})),
                    AsTensor<double>(std::vector<double>(4), TensorShape({2, 2}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("logits_size=[2,3] labels_size=[2,2]"), std::string::npos)
      << out.status();
}

TEST(SparseSoftmaxXentTest, LossAndBackpropBothLabelTypes) {
  Tensor logits = AsTensor<double>({1, 2, 3, 0, 0, 0}, TensorShape({2, 3}));
  std::vector<double> p0 = SoftmaxRow({1, 2, 3});
  const double third = 1.0 / 3;
  Tensor want_loss = AsTensor<double>({-std::log(p0[2]), -std::log(third)});
  Tensor want_backprop =
      AsTensor<double>({p0[0], p0[1], p0[2] - 1, third - 1, third, third}, TensorShape({2, 3}));
  for (const Tensor& labels : {AsTensor<int64_t>({2, 0}), AsTensor<int32_t>({2, 0})}) {
    auto out = RunOp("SparseSoftmaxCrossEntropyWithLogits", {logits, labels});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensorNear(out->at(0), want_loss);
    ExpectTensorNear(out->at(1), want_backprop);
  }
}

TEST(SparseSoftmaxXentTest, LabelOutOfRangeNamesValueAndClassCount) {
  auto out = RunOp(
      "SparseSoftmaxCrossEntropyWithLogits",
      {AsTensor<float>(std::vector<float>(6), TensorShape({2, 3})), AsTensor<int64_t>({1, 5})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("label value of 5"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("[0, 3)"), std::string::npos) << out.status();
  out = RunOp(
      "SparseSoftmaxCrossEntropyWithLogits",
      {AsTensor<float>(std::vector<float>(6), TensorShape({2, 3})), AsTensor<int32_t>({-1, 0})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

// Every gradient against finite differences, through a real session, in double
// precision.

#include "client/graph/gradients.h"

#include <functional>
#include <random>

#include "client/graph/ops.h"
#include "client/session/gradients_checker.h"
#include "core/tensor_eigen.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;
using Fn = std::function<Output(const Scope&, const std::vector<Output>&)>;

class GradientTest : public ::testing::Test {
 protected:
  // Uniform in [lo, hi), deterministic per call order.
  Tensor Random(const TensorShape& shape, double lo = -1, double hi = 1) {
    Tensor t(DT_DOUBLE, shape);
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < t.NumElements(); ++i) t.flat<double>()(i) = dist(rng_);
    return t;
  }
  // Rows of non-negative values summing to 1 (a distribution per row).
  Tensor Distributions(int64_t rows, int64_t cols) {
    Tensor t = Random({rows, cols}, 0.1, 1);
    auto m = t.matrix<double>();
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += m(r, c);
      for (int64_t c = 0; c < cols; ++c) m(r, c) /= sum;
    }
    return t;
  }
  // Values with pairwise gaps of at least 0.1 (no ties for Max/Maximum/Relu).
  Tensor Distinct(const TensorShape& shape, double offset = 0) {
    Tensor t(DT_DOUBLE, shape);
    const int64_t n = t.NumElements();
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng_);
    for (int64_t i = 0; i < n; ++i)
      t.flat<double>()(i) = 0.1 * (order[i] - n / 2.0) + offset + 0.05;
    return t;
  }

  // The max error between the symbolic and numeric Jacobians of f at `values`.
  double Error(const Fn& f, const std::vector<Tensor>& values) {
    Scope root = Scope::NewRootScope();
    std::vector<Output> xs;
    for (const Tensor& v : values) {
      xs.push_back(ops::Placeholder(root, v.dtype(), PartialShape(v.shape())));
    }
    Output y = f(root, xs);
    EXPECT_TRUE(root.ok()) << root.status();
    absl::StatusOr<double> err = ComputeGradientError(root, xs, values, {y}, 1e-4);
    EXPECT_TRUE(err.ok()) << err.status();
    return err.ok() ? *err : 1e9;
  }

  std::mt19937 rng_{42};
};

constexpr double kTol = 1e-6;

TEST_F(GradientTest, BinaryOpsSameShapeAndBroadcast) {
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}, {{4, 1}, {4, 1}}};
  for (const auto& [sx, sy] : shapes) {
    SCOPED_TRACE(sx.DebugString() + " vs " + sy.DebugString());
    Tensor x = Random(sx), y = Random(sy, 0.5, 2);
    EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Add(s, in[0], in[1]); }, {x, y}),
              kTol);
    EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Sub(s, in[0], in[1]); }, {x, y}),
              kTol);
    EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Mul(s, in[0], in[1]); }, {x, y}),
              kTol);
    EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Div(s, in[0], in[1]); }, {x, y}),
              kTol);
    // Pow's bases positive, so that both gradients are smooth.
    Tensor base = Random(sx, 0.5, 2);
    EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Pow(s, in[0], in[1]); }, {base, y}),
              kTol);
    Tensor a = Distinct(sx), b = Distinct(sy, 0.02);
    EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Maximum(s, in[0], in[1]); }, {a, b}),
              kTol);
    EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Minimum(s, in[0], in[1]); }, {a, b}),
              kTol);
  }
}

TEST_F(GradientTest, UnaryOps) {
  Tensor x = Random({2, 3}), pos = Random({2, 3}, 0.5, 2);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Neg(s, in[0]); }, {x}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Square(s, in[0]); }, {x}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Sqrt(s, in[0]); }, {pos}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Exp(s, in[0]); }, {x}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Log(s, in[0]); }, {pos}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Reciprocal(s, in[0]); }, {pos}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Sigmoid(s, in[0]); }, {x}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Tanh(s, in[0]); }, {x}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Sin(s, in[0]); }, {x}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Cos(s, in[0]); }, {x}), kTol);
  // TopK's values: distinct entries, so that a small step changes no choice.
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::TopK(s, in[0], 2).values; },
                  {Distinct({2, 3})}),
            kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Relu(s, in[0]); }, {Distinct({2, 3})}),
            kTol);
  EXPECT_LT(
      Error([](const Scope& s, auto& in) { return ops::Relu6(s, in[0]); }, {Distinct({2, 3})}),
      kTol);
  // Around the upper bend: values from 5.75 to 6.25, none at 6.
  EXPECT_LT(
      Error([](const Scope& s, auto& in) { return ops::Relu6(s, in[0]); }, {Distinct({2, 3}, 6.0)}),
      kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Elu(s, in[0]); }, {Distinct({2, 3})}),
            kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::L2Loss(s, in[0]); }, {x}), kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Identity(s, in[0]); }, {x}), kTol);
  // Repeated indices: their gradients add up.
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::GatherV2(s, in[0], ops::Const(s, {2, 0, 2}), 0);
                },
                {Random({3, 2})}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::UnsortedSegmentSum(s, in[0], ops::Const(s, {1, 0, 1}), 3);
                },
                {Random({3, 2})}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::AddN(s, {in[0], in[1], in[0]});
                },
                {x, Random({2, 3})}),
            kTol);
}

TEST_F(GradientTest, MatMulAllTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "ta=" << ta << " tb=" << tb);
      Tensor a = Random(ta ? TensorShape({3, 2}) : TensorShape({2, 3}));
      Tensor b = Random(tb ? TensorShape({4, 3}) : TensorShape({3, 4}));
      EXPECT_LT(
          Error([ta, tb](const Scope& s, auto& in) { return ops::MatMul(s, in[0], in[1], ta, tb); },
                {a, b}),
          kTol);
    }
  }
}

TEST_F(GradientTest, NnOps) {
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::BiasAdd(s, in[0], in[1]); },
                  {Random({3, 4}), Random({4})}),
            kTol);
  EXPECT_LT(
      Error([](const Scope& s, auto& in) { return ops::Softmax(s, in[0]); }, {Random({2, 4})}),
      kTol);
  EXPECT_LT(
      Error([](const Scope& s, auto& in) { return ops::LogSoftmax(s, in[0]); }, {Random({2, 4})}),
      kTol);
  // Loss with respect to features and labels. As in TensorFlow, backprop (and so the
  // features' gradient) assumes each row of labels sums to 1.
  EXPECT_LT(Error([](const Scope& s,
                     auto& in) { return ops::SoftmaxCrossEntropyWithLogits(s, in[0], in[1]).loss; },
                  {Random({3, 4}), Distributions(3, 4)}),
            kTol);
  // Both outputs at once (the backprop output's own gradient).
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  auto r = ops::SoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
                  return ops::Add(s, ops::ExpandDims(s, r.loss, -1), ops::Square(s, r.backprop));
                },
                {Random({2, 3}), Distributions(2, 3)}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::SparseSoftmaxCrossEntropyWithLogits(s, in[0], {2, 0, 1}).loss;
                },
                {Random({3, 4})}),
            kTol);
}

TEST_F(GradientTest, Reductions) {
  Tensor x = Random({2, 3, 2});
  for (bool keep : {false, true}) {
    SCOPED_TRACE(keep);
    EXPECT_LT(Error([keep](const Scope& s, auto& in) { return ops::Sum(s, in[0], 1, keep); }, {x}),
              kTol);
    EXPECT_LT(Error(
                  [keep](const Scope& s, auto& in) {
                    return ops::Sum(s, in[0], {0, 2}, keep);
                  },
                  {x}),
              kTol);
    EXPECT_LT(
        Error([keep](const Scope& s, auto& in) { return ops::Mean(s, in[0], -1, keep); }, {x}),
        kTol);
    EXPECT_LT(Error(
                  [keep](const Scope& s, auto& in) {
                    return ops::Mean(s, in[0], {0, 1, 2}, keep);
                  },
                  {x}),
              kTol);
    EXPECT_LT(Error([keep](const Scope& s, auto& in) { return ops::Max(s, in[0], {1}, keep); },
                    {Distinct({2, 3, 2})}),
              kTol);
    EXPECT_LT(Error(
                  [keep](const Scope& s, auto& in) {
                    return ops::Max(s, in[0], Tensor::FromVector<int64_t>({0, 2}), keep);
                  },
                  {Distinct({2, 3, 2})}),
              kTol);
  }
}

TEST_F(GradientTest, ShapeOps) {
  Tensor x = Random({2, 3});
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::Reshape(s, in[0], {3, 2});
                },
                {x}),
            kTol);
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::ExpandDims(s, in[0], 1); }, {x}),
            kTol);
  EXPECT_LT(
      Error([](const Scope& s, auto& in) { return ops::Squeeze(s, in[0]); }, {Random({2, 1, 3})}),
      kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::Transpose(s, in[0], {1, 0});
                },
                {x}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::Transpose(s, in[0], {2, 0, 1});
                },
                {Random({2, 3, 4})}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::BroadcastTo(s, in[0], {4, 2, 3});
                },
                {Random({2, 1})}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::Fill(s, {2, 3}, in[0]);
                },
                {Random({})}),
            kTol);
  EXPECT_LT(Error([](const Scope& s,
                     auto& in) { return ops::Mul(s, ops::PlaceholderWithDefault(s, in[0]), 3.0); },
                  {x}),
            kTol);
}

TEST_F(GradientTest, PackUnpackConcat) {
  Tensor a = Random({2, 3}), b = Random({2, 3}), c = Random({2, 1});
  for (int axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    EXPECT_LT(Error(
                  [axis](const Scope& s, auto& in) {
                    return ops::Pack(s, {in[0], in[1]}, axis);
                  },
                  {a, b}),
              kTol);
  }
  EXPECT_LT(Error([](const Scope& s, auto& in) { return ops::Unpack(s, in[0], 3, 1)[2]; }, {a}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  std::vector<Output> parts = ops::Unpack(s, in[0], 2, 0);
                  return ops::Mul(s, parts[0], parts[1]);
                },
                {a}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::ConcatV2(s, {in[0], in[1]}, 0);
                },
                {a, b}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::ConcatV2(s, {in[0], in[1]}, -1);
                },
                {a, c}),
            kTol);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::ConcatV2(s, {in[0], in[1], in[0]}, int64_t{1});
                },
                {a, c}),
            kTol);
}

TEST_F(GradientTest, CastAndSelect) {
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::Cast(s, ops::Mul(s, ops::Cast(s, in[0], DT_FLOAT), 2.0f), DT_DOUBLE);
                },
                {Random({3})}),
            1e-3);
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  Output cond = ops::Const(s, {{true, false, true}, {false, false, true}});
                  return ops::Select(s, cond, in[0], in[1]);
                },
                {Random({2, 3}), Random({2, 3})}),
            kTol);
}

TEST_F(GradientTest, MultiplePathsAreSummed) {
  // y = x * x + sigmoid(x) * x, reaching x along four edges.
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  Output x = in[0];
                  return ops::Add(s, ops::Mul(s, x, x), ops::Mul(s, ops::Sigmoid(s, x), x));
                },
                {Random({4})}),
            kTol);
  // A two-layer network with a softmax loss.
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  Output h = ops::Relu(s, ops::BiasAdd(s, ops::MatMul(s, in[0], in[1]), in[2]));
                  Output logits = ops::MatMul(s, h, in[3]);
                  Output labels = ops::Const(s, {{1.0, 0.0}, {0.0, 1.0}, {0.5, 0.5}});
                  return ops::Mean(s, ops::SoftmaxCrossEntropyWithLogits(s, logits, labels).loss,
                                   0);
                },
                {Random({3, 4}), Random({4, 5}), Random({5}, 0.5, 1), Random({5, 2})}),
            kTol);
}

TEST(SymbolicGradientsTest, GradInputsScaleAndUnreachableInputsAreNull) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  Output z = ops::Placeholder(root.WithOpName("z"), DT_DOUBLE);
  Output y = ops::Square(root, x);
  Output stopped = ops::Mul(root, ops::StopGradient(root, x), 3.0);
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x, z}, &grads).ok());
  EXPECT_TRUE(grads[0].valid());
  EXPECT_FALSE(grads[1].valid());
  EXPECT_EQ(grads[0].node()->name().rfind("gradients/", 0), 0u) << grads[0].node()->name();
  std::vector<Output> none;
  ASSERT_TRUE(AddSymbolicGradients(root, {stopped}, {x}, &none).ok());
  EXPECT_FALSE(none[0].valid());
}

TEST(SymbolicGradientsTest, MissingGradientIsAnErrorNamingTheOp) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DT_DOUBLE, PartialShape({4}));
  Output y = ops::Slice(root.WithOpName("my_slice"), x, {1}, {2});
  std::vector<Output> grads;
  absl::Status s = AddSymbolicGradients(root, {y}, {x}, &grads);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("Slice"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("my_slice"));
  EXPECT_TRUE(root.ok());  // The graph stays usable.
}

TEST(SymbolicGradientsTest, BadArgumentsAreRejected) {
  Scope root = Scope::NewRootScope();
  Scope other = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DT_DOUBLE);
  Output y = ops::Square(root, x);
  Output foreign = ops::Placeholder(other, DT_DOUBLE);
  std::vector<Output> grads;
  EXPECT_FALSE(AddSymbolicGradients(root, {y}, {foreign}, &grads).ok());
  EXPECT_FALSE(AddSymbolicGradients(root, {y}, {Output()}, &grads).ok());
  EXPECT_FALSE(AddSymbolicGradients(root, {y}, {x}, {ops::Const(root, 1.0f)}, &grads).ok());
  EXPECT_FALSE(AddSymbolicGradients(root, {y}, {x}, {x, x}, &grads).ok());
}

TEST(GradientRegistryTest, DuplicateRegistrationFails) {
  EXPECT_EQ(GradientRegistry::Global()->Register("MatMul", nullptr).code(),
            absl::StatusCode::kAlreadyExists);
  absl::StatusOr<GradFunc> none = GradientRegistry::Global()->Lookup("StopGradient");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
  EXPECT_EQ(GradientRegistry::Global()->Lookup("Slice").status().code(),
            absl::StatusCode::kNotFound);
}

// Conv2D with respect to input and filter, MaxPool and AvgPool, SAME and VALID, strides
// 1 and 2 (numeric against symbolic, as TensorFlow's conv_ops_test and pooling_ops_test).
TEST_F(GradientTest, ConvolutionAndPooling) {
  for (const char* padding : {"SAME", "VALID"}) {
    for (int stride : {1, 2}) {
      SCOPED_TRACE(std::string(padding) + " stride " + std::to_string(stride));
      Tensor x = Random({2, 5, 4, 3}), f = Random({3, 2, 3, 2});
      const std::vector<int> strides = {1, stride, stride, 1};
      EXPECT_LT(Error([&](const Scope& s,
                          auto& in) { return ops::Conv2D(s, in[0], in[1], strides, padding); },
                      {x, f}),
                kTol);
      Tensor distinct = Distinct({2, 5, 4, 3});
      EXPECT_LT(Error(
                    [&](const Scope& s, auto& in) {
                      return ops::MaxPool(s, in[0], {1, 2, 2, 1}, strides, padding);
                    },
                    {distinct}),
                kTol);
      EXPECT_LT(Error(
                    [&](const Scope& s, auto& in) {
                      return ops::AvgPool(s, in[0], {1, 3, 2, 1}, strides, padding);
                    },
                    {x}),
                kTol);
    }
  }
}

// DynamicPartition and DynamicStitch (the pieces of a partitioned embedding lookup).
TEST_F(GradientTest, DynamicPartitionAndStitch) {
  Tensor x = Random({4, 3});
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  std::vector<Output> parts =
                      ops::DynamicPartition(s, in[0], ops::Const(s, {1, 0, 1, 1}), 2);
                  // Both outputs reach the loss, the second scaled so that they differ.
                  return ops::ConcatV2(s, {parts[0], ops::Mul(s, parts[1], ops::Const(s, 3.0))}, 0);
                },
                {x}),
            kTol);
  Tensor a = Random({2, 3}), b = Random({3, 3});
  EXPECT_LT(Error(
                [](const Scope& s, auto& in) {
                  return ops::DynamicStitch(s, {ops::Const(s, {0, 3}), ops::Const(s, {1, 2, 4})},
                                            {in[0], in[1]});
                },
                {a, b}),
            kTol);
}

}  // namespace
}  // namespace overseer

// Op functions that the gradient and optimizer tests do not reach, run through a
// ClientSession: queues, random ops, defaults, grouping, clipping, in-top-k and dropout.

#include "client/graph/ops.h"

#include <cmath>

#include "client/graph/gradients.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "core/resource_mgr.h"
#include "core/tensor_eigen.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

class OpsTest : public ::testing::Test {
 protected:
  ClientSession* Session() {
    if (session_ == nullptr) {
      SessionOptions options;
      options.resource_mgr = &resources_;
      auto s = ClientSession::Create(root_, options);
      EXPECT_TRUE(s.ok()) << s.status();
      session_ = std::move(*s);
    }
    return session_.get();
  }
  Scope root_ = Scope::NewRootScope();
  ResourceMgr resources_;
  std::unique_ptr<ClientSession> session_;
};

TEST_F(OpsTest, FifoQueueEnqueueDequeueClose) {
  ops::FIFOQueueAttrs attrs;
  attrs.shapes = {PartialShape::Scalar(), PartialShape({2})};
  attrs.capacity = 10;
  Output q = ops::FIFOQueue(root_.WithOpName("q"), {DT_FLOAT, DT_INT32}, attrs);
  Operation enqueue_many = ops::QueueEnqueueMany(
      root_, q,
      {ops::Const(root_, {1.0f, 2.0f, 3.0f}), ops::Const(root_, {{1, 2}, {3, 4}, {5, 6}})});
  Output x = ops::Placeholder(root_, DT_FLOAT);
  Operation enqueue = ops::QueueEnqueue(root_, q, {x, ops::Const(root_, {7, 8})});
  Output size = ops::QueueSize(root_, q);
  std::vector<Output> one = ops::QueueDequeue(root_, q, {DT_FLOAT, DT_INT32});
  std::vector<Output> two = ops::QueueDequeueMany(root_, q, 2, {DT_FLOAT, DT_INT32});
  Operation close = ops::QueueClose(root_, q);
  ASSERT_TRUE(root_.ok()) << root_.status();
  ASSERT_EQ(one.size(), 2u);
  std::vector<Tensor> out;
  ASSERT_TRUE(Session()->Run({}, {}, {enqueue_many}, &out).ok());
  ASSERT_TRUE(Session()->Run({{x, Tensor::Scalar<float>(4)}}, {}, {enqueue}, &out).ok());
  ASSERT_TRUE(Session()->Run({size}, &out).ok());
  EXPECT_EQ(out[0].scalar<int32_t>(), 4);
  ASSERT_TRUE(Session()->Run(one, &out).ok());
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 1.0f);
  EXPECT_TRUE(out[1].Equals(Tensor::FromVector<int32_t>({1, 2})));
  ASSERT_TRUE(Session()->Run(two, &out).ok());
  EXPECT_TRUE(out[0].Equals(Tensor::FromVector<float>({2, 3})));
  EXPECT_EQ(out[1].shape(), TensorShape({2, 2}));
  ASSERT_TRUE(Session()->Run({}, {}, {close}, &out).ok());
  ASSERT_TRUE(Session()->Run(one, &out).ok());
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 4.0f);
  EXPECT_EQ(Session()->Run(one, &out).code(), absl::StatusCode::kOutOfRange);
}

TEST_F(OpsTest, RandomOpsHaveTheirShapesAndMoments) {
  Output n = ops::RandomNormal(root_, {4000}, DT_DOUBLE, 3.0, 0.5, {11, 0});
  Output u = ops::RandomUniform(root_, {2, 3}, DT_FLOAT, {5, 0});
  Output t = ops::TruncatedNormal(root_, {1000}, DT_DOUBLE, {7, 0});
  ASSERT_TRUE(root_.ok()) << root_.status();
  EXPECT_EQ(u.shape(), PartialShape({2, 3}));
  std::vector<Tensor> out;
  ASSERT_TRUE(Session()->Run({n, u, t}, &out).ok());
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < 4000; ++i) {
    const double v = out[0].flat<double>()(i);
    sum += v;
    sq += v * v;
  }
  const double mean = sum / 4000;
  EXPECT_NEAR(mean, 3.0, 0.05);
  EXPECT_NEAR(std::sqrt(sq / 4000 - mean * mean), 0.5, 0.05);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_GE(out[1].flat<float>()(i), 0.0f);
    EXPECT_LT(out[1].flat<float>()(i), 1.0f);
  }
  for (int64_t i = 0; i < 1000; ++i) EXPECT_LE(std::abs(out[2].flat<double>()(i)), 2.0);
}

TEST_F(OpsTest, DefaultsGroupsAndVariableChecks) {
  Output d = ops::PlaceholderWithDefault(root_, ops::Const(root_, {1.0f, 2.0f}));
  Output doubled = ops::Mul(root_, d, 2.0f);
  Variable v = MakeVariable(root_.WithOpName("v"), 1.0f);
  Output is_init = ops::IsVariableInitialized(root_, v.ref);
  Output a = ops::Assign(root_, v.ref, 5.0f);
  Output s = ops::AssignSub(root_, v.ref, 2.0f);
  Operation both = ops::Group(root_.WithOpName("both"), {Operation(a.node())});
  Output am = ops::ArgMax(root_, ops::Const(root_, {{1.0f, 9.0f}, {8.0f, 2.0f}}), 1);
  ASSERT_TRUE(root_.ok()) << root_.status();
  EXPECT_EQ(both.name(), "both");
  EXPECT_EQ(d.shape(), PartialShape({2}));
  std::vector<Tensor> out;
  ASSERT_TRUE(Session()->Run({doubled, is_init, am}, &out).ok());
  EXPECT_TRUE(out[0].Equals(Tensor::FromVector<float>({2, 4})));
  EXPECT_FALSE(out[1].scalar<bool>());
  EXPECT_TRUE(out[2].Equals(Tensor::FromVector<int64_t>({1, 0})));
  ASSERT_TRUE(
      Session()->Run({{d, Tensor::FromVector<float>({3, 3})}}, {doubled}, {both}, &out).ok());
  EXPECT_TRUE(out[0].Equals(Tensor::FromVector<float>({6, 6})));
  ASSERT_TRUE(Session()->Run({s, is_init}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 3.0f);
  EXPECT_TRUE(out[1].scalar<bool>());
}

// As TensorFlow's clip_ops_test testClipByGlobalNorm: [3, 4] and [0, 0] have a global
// norm of 5; clipped to 2.5 they halve, and a clip of 10 leaves them.
TEST_F(OpsTest, ClipByGlobalNormScalesEveryTensorByOneFactor) {
  Output a = ops::Const(root_, {3.0f, 4.0f});
  Output b = ops::Const(root_, {{0.0f}, {0.0f}});
  ops::ClippedByGlobalNorm tight = ops::ClipByGlobalNorm(root_, {a, b}, 2.5f);
  ops::ClippedByGlobalNorm loose = ops::ClipByGlobalNorm(root_, {a, b}, 10.0f);
  ASSERT_TRUE(root_.ok()) << root_.status();
  ASSERT_EQ(tight.clipped.size(), 2u);
  EXPECT_EQ(tight.clipped[1].shape(), PartialShape({2, 1}));
  std::vector<Tensor> out;
  ASSERT_TRUE(
      Session()
          ->Run({tight.global_norm, tight.clipped[0], tight.clipped[1], loose.clipped[0]}, &out)
          .ok());
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 5.0f);
  EXPECT_TRUE(out[1].Equals(Tensor::FromVector<float>({1.5f, 2.0f}))) << out[1].DebugString();
  EXPECT_TRUE(out[2].Equals(Tensor::FromVector<float>({0, 0}, TensorShape({2, 1}))));
  EXPECT_TRUE(out[3].Equals(Tensor::FromVector<float>({3, 4})));

  // All zeros: a norm of 0, nothing scaled.
  ops::ClippedByGlobalNorm zeros = ops::ClipByGlobalNorm(root_, {b}, 1.0f);
  ASSERT_TRUE(Session()->Run({zeros.global_norm, zeros.clipped[0]}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 0.0f);
  EXPECT_TRUE(out[1].Equals(Tensor::FromVector<float>({0, 0}, TensorShape({2, 1}))));

  Scope other = Scope::NewRootScope();
  ops::ClipByGlobalNorm(other, {}, 1.0f);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(OpsTest, InTopKThroughASession) {
  Output predictions = ops::Const(root_, {{0.1f, 0.3f, 0.2f, 0.4f}, {0.1f, 0.2f, 0.3f, 0.4f}});
  Output in = ops::InTopK(root_, predictions, ops::Const(root_, {1, 1}), 2);
  ASSERT_TRUE(root_.ok()) << root_.status();
  EXPECT_EQ(in.shape(), PartialShape({2}));
  std::vector<Tensor> out;
  ASSERT_TRUE(Session()->Run({in}, &out).ok());
  EXPECT_TRUE(out[0].Equals(Tensor::FromVector<bool>({true, false})));
}

// tf.nn.dropout: kept elements scaled by 1 / keep_prob, the rest 0, in about keep_prob
// of the elements; the gradient is the same mask and scale (one run computes both).
TEST_F(OpsTest, DropoutKeepsAboutKeepProbAndScales) {
  Output x = ops::Fill(root_, ops::Const(root_, {100, 100}), 1.0f);
  Output y = ops::Dropout(root_, x, 0.25, /*seed=*/7);
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root_, {ops::Sum(root_, y, {0, 1})}, {x}, &grads).ok());
  ASSERT_TRUE(root_.ok()) << root_.status();
  EXPECT_EQ(y.shape(), PartialShape({100, 100}));
  std::vector<Tensor> out;
  ASSERT_TRUE(Session()->Run({y, grads[0]}, &out).ok());
  int kept = 0;
  for (int64_t i = 0; i < out[0].NumElements(); ++i) {
    const float v = out[0].flat<float>()(i);
    ASSERT_TRUE(v == 0.0f || v == 4.0f) << v;
    EXPECT_EQ(out[1].flat<float>()(i), v) << i;  // d(sum)/dx: the mask times 1/keep_prob.
    kept += v != 0.0f;
  }
  EXPECT_GT(kept, 2200);
  EXPECT_LT(kept, 2800);

  // keep_prob 1 is the identity; a tensor keep_prob (fed 1 for evaluation) keeps all.
  EXPECT_EQ(ops::Dropout(root_, x, 1.0).node(), x.node());
  Output keep = ops::Placeholder(root_, DT_FLOAT);
  Output eval = ops::Dropout(root_, x, keep);
  ASSERT_TRUE(Session()->Run({{keep, Tensor::Scalar<float>(1)}}, {eval}, &out).ok());
  for (int64_t i = 0; i < out[0].NumElements(); ++i) ASSERT_EQ(out[0].flat<float>()(i), 1.0f);
}

TEST_F(OpsTest, DropoutRejectsBadArguments) {
  for (double keep : {0.0, -0.5, 1.5}) {
    Scope scope = Scope::NewRootScope();
    ops::Dropout(scope, ops::Const(scope, {1.0f}), keep);
    EXPECT_EQ(scope.status().code(), absl::StatusCode::kInvalidArgument) << keep;
    EXPECT_NE(scope.status().message().find("keep_prob must be in (0, 1]"), std::string::npos);
  }
  Scope ints = Scope::NewRootScope();
  ops::Dropout(ints, ops::Const(ints, {1, 2}), 0.5);
  EXPECT_EQ(ints.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ints.status().message().find("float or double"), std::string::npos);
}

TEST_F(OpsTest, TopKThroughASessionWithItsShapeKnown) {
  Output x = ops::Const(root_, {{1.0f, 5.0f, 3.0f}, {9.0f, 7.0f, 8.0f}});
  ops::TopKOutput top = ops::TopK(root_, x, 2);
  ASSERT_TRUE(root_.ok()) << root_.status();
  EXPECT_EQ(top.values.shape(), PartialShape({2, 2}));  // A constant k is known.
  std::vector<Tensor> out;
  ASSERT_TRUE(Session()->Run({top.values, top.indices}, &out).ok());
  EXPECT_TRUE(out[0].Equals(Tensor::FromVector<float>({5, 3, 9, 8}, TensorShape({2, 2}))));
  EXPECT_TRUE(out[1].Equals(Tensor::FromVector<int32_t>({1, 2, 0, 2}, TensorShape({2, 2}))));
  Scope other = Scope::NewRootScope();
  ops::TopK(other, ops::Const(other, {1.0f, 2.0f}), 3);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("at least k = 3 columns"), std::string::npos)
      << other.status();
}

TEST_F(OpsTest, ConvolutionShapesAreKnownAtGraphBuild) {
  Output x = ops::Placeholder(root_, DT_FLOAT, PartialShape({-1, 28, 28, 1}));
  Output f = ops::Const(root_, Tensor(DT_FLOAT, TensorShape({5, 5, 1, 32})));
  Output conv = ops::Conv2D(root_, x, f, {1, 1, 1, 1}, "SAME");
  Output pool = ops::MaxPool(root_, conv, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
  Output avg = ops::AvgPool(root_, pool, {1, 3, 3, 1}, {1, 2, 2, 1}, "VALID");
  ASSERT_TRUE(root_.ok()) << root_.status();
  EXPECT_EQ(conv.shape(), PartialShape({-1, 28, 28, 32}));
  EXPECT_EQ(pool.shape(), PartialShape({-1, 14, 14, 32}));
  EXPECT_EQ(avg.shape(), PartialShape({-1, 6, 6, 32}));
  // Mismatched channels and a batch stride fail when the node is added, naming it.
  Scope bad = Scope::NewRootScope();
  ops::Conv2D(bad.WithOpName("conv"), ops::Placeholder(bad, DT_FLOAT, PartialShape({1, 4, 4, 2})),
              ops::Const(bad, Tensor(DT_FLOAT, TensorShape({2, 2, 3, 1}))), {1, 1, 1, 1}, "SAME");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("conv"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("input depth 2"), std::string::npos) << bad.status();
  Scope stride = Scope::NewRootScope();
  ops::MaxPool(stride, ops::Placeholder(stride, DT_FLOAT), {1, 2, 2, 1}, {2, 2, 2, 1}, "SAME");
  EXPECT_EQ(stride.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

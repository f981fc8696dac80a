#include "client/graph/learning_rate_decay.h"

#include <cmath>
#include <memory>
#include <vector>

#include "client/graph/ops.h"
#include "client/graph/optimizers.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "core/resource_mgr.h"
#include "core/tensor_eigen.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

// Evaluates schedules of a fed int64 step.
class DecayTest : public ::testing::Test {
 protected:
  void SetUp() override { step_ = ops::Placeholder(root_.WithOpName("step"), DT_INT64); }

  float At(const absl::StatusOr<Output>& lr, int64_t step) {
    EXPECT_TRUE(lr.ok()) << lr.status();
    if (!lr.ok()) return NAN;
    if (session_ == nullptr) {
      SessionOptions options;
      options.resource_mgr = &resources_;
      auto s = ClientSession::Create(root_, options);
      EXPECT_TRUE(s.ok()) << s.status();
      session_ = std::move(*s);
    }
    std::vector<Tensor> out;
    absl::Status s = session_->Run({{step_, Tensor::Scalar<int64_t>(step)}}, {*lr}, &out);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(out[0].dtype(), DT_FLOAT);
    return s.ok() ? out[0].scalar<float>() : NAN;
  }

  Scope root_ = Scope::NewRootScope();
  Output step_;
  ResourceMgr resources_;
  std::unique_ptr<ClientSession> session_;
};

TEST_F(DecayTest, ExponentialDecaySmoothAndStaircase) {
  auto smooth = ExponentialDecay(root_, 0.1, step_, 100, 0.5);
  auto stairs = ExponentialDecay(root_, 0.1, step_, 100, 0.5, /*staircase=*/true);
  EXPECT_NEAR(At(smooth, 0), 0.1f, 1e-7);
  EXPECT_NEAR(At(smooth, 50), 0.1 * std::pow(0.5, 0.5), 1e-7);
  EXPECT_NEAR(At(smooth, 200), 0.025f, 1e-7);
  EXPECT_NEAR(At(stairs, 99), 0.1f, 1e-7);
  EXPECT_NEAR(At(stairs, 100), 0.05f, 1e-7);
  EXPECT_NEAR(At(stairs, 250), 0.025f, 1e-7);
}

TEST_F(DecayTest, PiecewiseConstantBoundariesBelongToTheLeft) {
  auto lr = PiecewiseConstant(root_, step_, {100, 200}, {1.0, 0.5, 0.1});
  EXPECT_EQ(At(lr, 0), 1.0f);
  EXPECT_EQ(At(lr, 100), 1.0f);
  EXPECT_EQ(At(lr, 101), 0.5f);
  EXPECT_EQ(At(lr, 200), 0.5f);
  EXPECT_EQ(At(lr, 201), 0.1f);
  EXPECT_EQ(At(lr, int64_t{1} << 60), 0.1f);
}

TEST_F(DecayTest, PolynomialDecayWithAndWithoutCycle) {
  auto linear = PolynomialDecay(root_, 1.0, step_, 100, 0.0);
  EXPECT_NEAR(At(linear, 0), 1.0f, 1e-7);
  EXPECT_NEAR(At(linear, 25), 0.75f, 1e-7);
  EXPECT_NEAR(At(linear, 100), 0.0f, 1e-7);
  EXPECT_NEAR(At(linear, 500), 0.0f, 1e-7);  // Held at the end.
  auto squared = PolynomialDecay(root_, 1.0, step_, 100, 0.1, 2.0);
  EXPECT_NEAR(At(squared, 50), 0.9 * 0.25 + 0.1, 1e-6);
  auto cycled = PolynomialDecay(root_, 1.0, step_, 100, 0.0, 1.0, /*cycle=*/true);
  EXPECT_NEAR(At(cycled, 0), 1.0f, 1e-7);
  EXPECT_NEAR(At(cycled, 50), 0.5f, 1e-7);
  EXPECT_NEAR(At(cycled, 150), 0.25f, 1e-7);  // Decaying over 200 steps now.
}

TEST_F(DecayTest, CosineDecay) {
  auto lr = CosineDecay(root_, 2.0, step_, 100, 0.1);
  EXPECT_NEAR(At(lr, 0), 2.0f, 1e-6);
  EXPECT_NEAR(At(lr, 50), 2.0 * (0.9 * 0.5 + 0.1), 1e-6);
  EXPECT_NEAR(At(lr, 100), 0.2f, 1e-6);
  EXPECT_NEAR(At(lr, 1000), 0.2f, 1e-6);
}

TEST_F(DecayTest, BadArgumentsAreInvalidArgument) {
  auto expect_invalid = [](const absl::StatusOr<Output>& lr, const std::string& text) {
    EXPECT_EQ(lr.status().code(), absl::StatusCode::kInvalidArgument) << lr.status();
    EXPECT_THAT(std::string(lr.status().message()), HasSubstr(text));
  };
  expect_invalid(ExponentialDecay(root_, 0.1, step_, 0, 0.5), "decay_steps must be positive");
  expect_invalid(PolynomialDecay(root_, 0.1, step_, -3), "decay_steps must be positive, got -3");
  expect_invalid(CosineDecay(root_, 0.1, Output(), 10), "global_step is not a tensor");
  expect_invalid(PiecewiseConstant(root_, step_, {10, 20}, {1.0, 2.0}),
                 "2 values for 2 boundaries");
  expect_invalid(PiecewiseConstant(root_, step_, {20, 10}, {1.0, 2.0, 3.0}),
                 "boundaries must increase");
  Output text = ops::Const(root_, std::string("step"));
  expect_invalid(ExponentialDecay(root_, 0.1, text, 10, 0.5), "global_step must be a number");
  EXPECT_TRUE(root_.status().ok()) << root_.status();
}

// An optimizer follows a schedule on the global step: w -= lr(step) * 2w, with lr 0.1 for
// the first step and 0.01 after.
TEST(ScheduledOptimizerTest, GradientDescentFollowsTheGlobalStep) {
  Scope root = Scope::NewRootScope();
  Variable w = MakeVariable(root.WithOpName("w"), {1.0, 2.0});  // double.
  Output loss = ops::Sum(root, ops::Square(root, w.value), 0);
  absl::StatusOr<Variable> step = CreateGlobalStep(root);
  ASSERT_TRUE(step.ok()) << step.status();
  absl::StatusOr<Output> lr = PiecewiseConstant(root, step->value, {0}, {0.1, 0.01});
  ASSERT_TRUE(lr.ok()) << lr.status();
  GradientDescentOptimizer sgd(*lr);  // A float rate for double variables: cast.
  absl::StatusOr<Operation> train = sgd.Minimize(root, loss, &*step);
  ASSERT_TRUE(train.ok()) << train.status();
  ResourceMgr resources;
  SessionOptions options;
  options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {GlobalVariablesInitializer(root)}, &out).ok());
  ASSERT_TRUE((*session)->Run({}, {}, {*train}, &out).ok());
  ASSERT_TRUE((*session)->Run({w.value}, &out).ok());
  EXPECT_NEAR(out[0].flat<double>()(0), 0.8, 1e-7);  // 1 - 0.1 * 2.
  ASSERT_TRUE((*session)->Run({}, {}, {*train}, &out).ok());
  ASSERT_TRUE((*session)->Run({w.value}, &out).ok());
  EXPECT_NEAR(out[0].flat<double>()(0), 0.8 - 0.01 * 1.6, 1e-7);
}

}  // namespace
}  // namespace overseer

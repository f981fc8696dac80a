#include "client/graph/optimizers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/graph/indexed_slices.h"
#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "core/resource_mgr.h"
#include "core/tensor_eigen.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

// loss = sum(w * w) for w = [1, 2] (gradient 2w), with a global step.
class OptimizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w_ = MakeVariable(root_.WithOpName("w"), {1.0, 2.0});
    loss_ = ops::Sum(root_, ops::Square(root_, w_.value), 0);
    absl::StatusOr<Variable> step = CreateGlobalStep(root_);
    ASSERT_TRUE(step.ok()) << step.status();
    step_ = *step;
  }

  void Init() {
    SessionOptions options;
    options.resource_mgr = &resources_;
    auto s = ClientSession::Create(root_, options);
    ASSERT_TRUE(s.ok()) << s.status();
    session_ = std::move(*s);
    std::vector<Tensor> out;
    ASSERT_TRUE(session_->Run({}, {}, {GlobalVariablesInitializer(root_)}, &out).ok());
  }

  void Step(const Operation& train) {
    std::vector<Tensor> out;
    ASSERT_TRUE(session_->Run({}, {}, {train}, &out).ok());
  }

  std::vector<double> Values(const Output& t) {
    std::vector<Tensor> out;
    EXPECT_TRUE(session_->Run({t}, &out).ok());
    std::vector<double> v;
    for (int64_t i = 0; i < out[0].NumElements(); ++i) v.push_back(out[0].flat<double>()(i));
    return v;
  }

  int64_t GlobalStep() {
    std::vector<Tensor> out;
    EXPECT_TRUE(session_->Run({step_.value}, &out).ok());
    return out[0].scalar<int64_t>();
  }

  Scope root_ = Scope::NewRootScope();
  Variable w_, step_;
  Output loss_;
  ResourceMgr resources_;
  std::unique_ptr<ClientSession> session_;
};

TEST_F(OptimizerTest, GradientDescentStep) {
  GradientDescentOptimizer sgd(0.1);
  absl::StatusOr<Operation> train = sgd.Minimize(root_, loss_, &step_);
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->name(), "GradientDescent");
  Init();
  Step(*train);
  std::vector<double> w = Values(w_.value);
  EXPECT_NEAR(w[0], 0.8, 1e-12);
  EXPECT_NEAR(w[1], 1.6, 1e-12);
  EXPECT_EQ(GlobalStep(), 1);
  Step(*train);
  EXPECT_NEAR(Values(w_.value)[0], 0.64, 1e-12);
  EXPECT_EQ(GlobalStep(), 2);
}

TEST_F(OptimizerTest, MomentumSteps) {
  MomentumOptimizer momentum(0.1, 0.9);
  absl::StatusOr<Operation> train = momentum.Minimize(root_, loss_, &step_);
  ASSERT_TRUE(train.ok()) << train.status();
  absl::StatusOr<Variable> accum = momentum.GetSlot(w_, "momentum");
  ASSERT_TRUE(accum.ok());
  EXPECT_EQ(accum->name(), "w/Momentum");
  Init();
  Step(*train);
  // accum = g = [2, 4]; w -= 0.1 * accum.
  EXPECT_NEAR(Values(w_.value)[0], 0.8, 1e-12);
  EXPECT_NEAR(Values(accum->value)[1], 4.0, 1e-12);
  Step(*train);
  // g = [1.6, 3.2]; accum = 0.9 * [2, 4] + g = [3.4, 6.8]; w = [0.46, 0.92].
  std::vector<double> w = Values(w_.value);
  EXPECT_NEAR(w[0], 0.46, 1e-12);
  EXPECT_NEAR(w[1], 0.92, 1e-12);
  EXPECT_EQ(GlobalStep(), 2);
}

TEST_F(OptimizerTest, AdamStepsAndSlots) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  AdamOptimizer adam(lr, b1, b2, eps);
  absl::StatusOr<Operation> train = adam.Minimize(root_, loss_, &step_);
  ASSERT_TRUE(train.ok()) << train.status();
  absl::StatusOr<Variable> m = adam.GetSlot(w_, "m");
  absl::StatusOr<Variable> v = adam.GetSlot(w_, "v");
  ASSERT_TRUE(m.ok() && v.ok());
  EXPECT_EQ(m->name(), "w/Adam");
  EXPECT_EQ(v->name(), "w/Adam_1");
  EXPECT_FALSE(m->trainable);
  ASSERT_TRUE(root_.graph()->FindNode("beta1_power") != nullptr);
  EXPECT_EQ(TrainableVariables(*root_.graph()).size(), 1u);
  Init();
  // Reference computation of TensorFlow's Adam update.
  double w[2] = {1.0, 2.0}, mm[2] = {0, 0}, vv[2] = {0, 0}, p1 = b1, p2 = b2;
  for (int step = 0; step < 3; ++step) {
    Step(*train);
    const double lr_t = lr * std::sqrt(1 - p2) / (1 - p1);
    for (int i = 0; i < 2; ++i) {
      const double g = 2 * w[i];
      mm[i] = b1 * mm[i] + (1 - b1) * g;
      vv[i] = b2 * vv[i] + (1 - b2) * g * g;
      w[i] -= lr_t * mm[i] / (std::sqrt(vv[i]) + eps);
    }
    p1 *= b1;
    p2 *= b2;
    std::vector<double> got = Values(w_.value);
    EXPECT_NEAR(got[0], w[0], 1e-9) << "step " << step;
    EXPECT_NEAR(got[1], w[1], 1e-9) << "step " << step;
  }
  std::vector<Tensor> out;
  ASSERT_TRUE(session_->Run({root_.graph()->FindOutput("beta1_power:0").value()}, &out).ok());
  EXPECT_NEAR(out[0].scalar<double>(), p1, 1e-12);
  EXPECT_NEAR(Values(m->value)[0], mm[0], 1e-9);
  EXPECT_EQ(GlobalStep(), 3);
}

// The race the hooks found: a hook fetching the global step's read in the run of the
// train op must see the step before the increment, never after. The increment waits
// for the read (a control dependency), so the value fetched with run i is always i.
TEST_F(OptimizerTest, GlobalStepReadInTheTrainRunPrecedesTheIncrement) {
  GradientDescentOptimizer sgd(0.01);
  absl::StatusOr<Operation> train = sgd.Minimize(root_, loss_, &step_);
  ASSERT_TRUE(train.ok()) << train.status();
  const std::vector<Node*>& deps = train->node()->control_inputs();
  EXPECT_TRUE(std::find(deps.begin(), deps.end(), step_.value.node()) != deps.end())
      << "the increment does not wait for " << step_.value.name();
  Init();
  for (int64_t i = 0; i < 200; ++i) {
    std::vector<Tensor> out;
    ASSERT_TRUE(session_->Run({}, {step_.value}, {*train}, &out).ok());
    ASSERT_EQ(out[0].scalar<int64_t>(), i) << "run " << i << " saw the step after its increment";
  }
  EXPECT_EQ(GlobalStep(), 200);
}

TEST_F(OptimizerTest, ApplyWithoutGlobalStepAndErrors) {
  GradientDescentOptimizer sgd(0.5);
  Output unrelated = ops::Const(root_, 3.0);
  absl::StatusOr<Operation> none = sgd.Minimize(root_, unrelated);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("no gradients"));
  absl::StatusOr<std::vector<GradAndVar>> grads = sgd.ComputeGradients(root_, loss_);
  ASSERT_TRUE(grads.ok());
  ASSERT_EQ(grads->size(), 1u);
  absl::StatusOr<Operation> train = sgd.ApplyGradients(root_, *grads);
  ASSERT_TRUE(train.ok()) << train.status();
  Init();
  Step(*train);
  EXPECT_NEAR(Values(w_.value)[0], 0.0, 1e-12);
  EXPECT_EQ(GlobalStep(), 0);

  Scope empty = Scope::NewRootScope();
  EXPECT_EQ(sgd.Minimize(empty, ops::Const(empty, 1.0f)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Fits y = X w + b on a small exact least-squares problem.
void LeastSquares(Optimizer* optimizer, int steps, double tolerance) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Const(root, {{1.0, 2.0},
                               {2.0, -1.0},
                               {0.5, 0.5},
                               {-1.0, 1.5},
                               {3.0, 0.0},
                               {0.0, -2.0},
                               {1.5, 1.0},
                               {-2.0, -0.5}});
  // Targets from w = [2, -3], b = 0.5.
  Output y = ops::Const(root, {{-3.5}, {7.5}, {0.0}, {-6.0}, {6.5}, {6.5}, {0.5}, {-2.0}});
  Variable w = MakeVariable(root.WithOpName("w"), {{0.0}, {0.0}});
  Variable b = MakeVariable(root.WithOpName("b"), {0.0});
  Output pred = ops::BiasAdd(root, ops::MatMul(root, x, w.value), b.value);
  Output loss = ops::Mean(root, ops::Square(root, ops::Sub(root, pred, y)), {0, 1});
  absl::StatusOr<Variable> step = CreateGlobalStep(root);
  ASSERT_TRUE(step.ok());
  absl::StatusOr<Operation> train = optimizer->Minimize(root, loss, &*step);
  ASSERT_TRUE(train.ok()) << train.status();
  ResourceMgr resources;
  SessionOptions options;
  options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {GlobalVariablesInitializer(root)}, &out).ok());
  for (int i = 0; i < steps; ++i) ASSERT_TRUE((*session)->Run({}, {}, {*train}, &out).ok());
  ASSERT_TRUE((*session)->Run({w.value, b.value, loss, step->value}, &out).ok());
  EXPECT_NEAR(out[0].flat<double>()(0), 2.0, tolerance);
  EXPECT_NEAR(out[0].flat<double>()(1), -3.0, tolerance);
  EXPECT_NEAR(out[1].flat<double>()(0), 0.5, tolerance);
  EXPECT_LT(out[2].scalar<double>(), tolerance);
  EXPECT_EQ(out[3].scalar<int64_t>(), steps);
}

TEST(MinimizeTest, LeastSquaresConverges) {
  GradientDescentOptimizer sgd(0.1);
  LeastSquares(&sgd, 300, 1e-3);
  MomentumOptimizer momentum(0.05, 0.9);
  LeastSquares(&momentum, 300, 1e-3);
  AdamOptimizer adam(0.1);
  LeastSquares(&adam, 1000, 1e-3);
}

// One step of each from w = [1, 2] (gradient 2w), against TensorFlow's update rules.
TEST_F(OptimizerTest, AdagradRMSPropAndAdadeltaSteps) {
  AdagradOptimizer adagrad(0.1);
  absl::StatusOr<Operation> train = adagrad.Minimize(root_, loss_, &step_);
  ASSERT_TRUE(train.ok()) << train.status();
  absl::StatusOr<Variable> accum = adagrad.GetSlot(w_, "accumulator");
  ASSERT_TRUE(accum.ok()) << accum.status();
  EXPECT_EQ(accum->name(), "w/Adagrad");
  Init();
  Step(*train);
  EXPECT_EQ(Values(accum->value), (std::vector<double>{4.1, 16.1}));
  std::vector<double> w = Values(w_.value);
  EXPECT_NEAR(w[0], 1 - 0.1 * 2 / std::sqrt(4.1), 1e-12);
  EXPECT_NEAR(w[1], 2 - 0.1 * 4 / std::sqrt(16.1), 1e-12);
  EXPECT_EQ(GlobalStep(), 1);
}

TEST_F(OptimizerTest, RMSPropStep) {
  RMSPropOptimizer rmsprop(0.01, 0.9, 0.5);
  absl::StatusOr<Operation> train = rmsprop.Minimize(root_, loss_, &step_);
  ASSERT_TRUE(train.ok()) << train.status();
  absl::StatusOr<Variable> rms = rmsprop.GetSlot(w_, "rms");
  ASSERT_TRUE(rms.ok()) << rms.status();
  Init();
  EXPECT_EQ(Values(rms->value), (std::vector<double>{1, 1}));  // TensorFlow's start.
  Step(*train);
  const double ms = 0.9 + 0.1 * 4;
  EXPECT_NEAR(Values(w_.value)[0], 1 - 0.01 * 2 / std::sqrt(ms + 1e-10), 1e-12);
}

TEST_F(OptimizerTest, AdadeltaStep) {
  AdadeltaOptimizer adadelta(1.0, 0.95, 1e-6);
  absl::StatusOr<Operation> train = adadelta.Minimize(root_, loss_, &step_);
  ASSERT_TRUE(train.ok()) << train.status();
  Init();
  Step(*train);
  const double update = std::sqrt(1e-6) / std::sqrt(0.05 * 4 + 1e-6) * 2;
  EXPECT_NEAR(Values(w_.value)[0], 1 - update, 1e-12);
}

TEST_F(OptimizerTest, AdagradNeedsAPositiveInitialAccumulator) {
  AdagradOptimizer adagrad(0.1, 0.0);
  absl::StatusOr<Operation> train = adagrad.Minimize(root_, loss_, &step_);
  EXPECT_EQ(train.status().code(), absl::StatusCode::kInvalidArgument) << train.status();
  EXPECT_THAT(std::string(train.status().message()), HasSubstr("initial_accumulator_value"));
}

// A table of 5 rows of 2 after one step of an optimizer on loss = sum(c * rows^2) for
// the rows at ids [3, 1, 3] (3 repeated), read by a Gather (the gradient is sparse) or by
// a one-hot MatMul (the same gradient, dense).
struct TableStep {
  std::vector<double> table;
  std::map<std::string, std::vector<double>> slots;
  bool sparse = false;  // Whether the table's gradient had a sparse form.
};

TableStep StepOnTable(Optimizer* opt, bool gather, const std::vector<std::string>& slot_names) {
  TableStep result;
  Scope root = Scope::NewRootScope();
  Variable table =
      MakeVariable(root.WithOpName("table"),
                   Tensor::FromVector<double>({0.5, -1, 1.5, 2, -0.5, 0.25, 1, -2, 3, 0.75},
                                              TensorShape({5, 2})));
  Output rows;
  if (gather) {
    rows = ops::GatherV2(root, table.value,
                         ops::Const(root, Tensor::FromVector<int64_t>({3, 1, 3}, TensorShape({3}))),
                         0);
  } else {
    std::vector<double> one_hot(15, 0.0);
    one_hot[3] = one_hot[5 + 1] = one_hot[10 + 3] = 1;
    rows = ops::MatMul(root,
                       ops::Const(root, Tensor::FromVector<double>(one_hot, TensorShape({3, 5}))),
                       table.value);
  }
  Output c = ops::Const(root, Tensor::FromVector<double>({1, 1, 2, 2, 3, 3}, TensorShape({3, 2})));
  Output loss = ops::Sum(root, ops::Mul(root, c, ops::Square(root, rows)), {0, 1});
  absl::StatusOr<std::vector<GradAndVar>> grads = opt->ComputeGradients(root, loss);
  EXPECT_TRUE(grads.ok()) << grads.status();
  if (!grads.ok()) return result;
  result.sparse = AsIndexedSlices(grads->at(0).grad).has_value();
  absl::StatusOr<Operation> train = opt->ApplyGradients(root, *grads);
  EXPECT_TRUE(train.ok()) << train.status();
  if (!train.ok()) return result;
  ResourceMgr resources;
  SessionOptions options;
  options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, options);
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  EXPECT_TRUE((*session)->Run({}, {}, {GlobalVariablesInitializer(root)}, &out).ok());
  EXPECT_TRUE((*session)->Run({}, {}, {*train}, &out).ok());
  auto values = [&](const Output& t) {
    std::vector<Tensor> v;
    EXPECT_TRUE((*session)->Run({t}, &v).ok());
    return std::vector<double>(v[0].data<double>(), v[0].data<double>() + v[0].NumElements());
  };
  result.table = values(table.value);
  for (const std::string& name : slot_names) {
    absl::StatusOr<Variable> slot = opt->GetSlot(table, name);
    EXPECT_TRUE(slot.ok()) << slot.status();
    if (slot.ok()) result.slots[name] = values(slot->value);
  }
  return result;
}

// Each optimizer's sparse update changes the rows the lookup read exactly as its dense
// update does (the repeated row's two slices summed first), and leaves every other row
// of the variable and of its slots as it was, where the dense update would move some
// (RMSProp's and Adadelta's accumulators decay, Ftrl sets weights without history to 0).
TEST(SparseUpdateTest, OnlyTheRowsLookedUpChangeAndThoseAsTheDenseUpdate) {
  struct Case {
    std::function<std::unique_ptr<Optimizer>()> make;
    std::map<std::string, double> slots;  // Each slot and its initial value.
  };
  std::vector<Case> cases = {
      {[] { return std::make_unique<GradientDescentOptimizer>(0.1); }, {}},
      {[] { return std::make_unique<MomentumOptimizer>(0.1, 0.9); }, {{"momentum", 0}}},
      {[] { return std::make_unique<AdagradOptimizer>(0.1); }, {{"accumulator", 0.1}}},
      {[] { return std::make_unique<RMSPropOptimizer>(0.01, 0.9, 0.5); },
       {{"rms", 1}, {"momentum", 0}}},
      {[] { return std::make_unique<AdadeltaOptimizer>(1.0); },
       {{"accum", 0}, {"accum_update", 0}}},
      {[] { return std::make_unique<FtrlOptimizer>(0.5, -0.5, 0.1, 0.01, 0.1); },
       {{"accum", 0.1}, {"linear", 0}}},
  };
  const std::vector<double> start = {0.5, -1, 1.5, 2, -0.5, 0.25, 1, -2, 3, 0.75};
  for (const Case& c : cases) {
    std::unique_ptr<Optimizer> sparse_opt = c.make(), dense_opt = c.make();
    SCOPED_TRACE(sparse_opt->name());
    std::vector<std::string> slot_names;
    for (const auto& [name, initial] : c.slots) slot_names.push_back(name);
    TableStep sparse = StepOnTable(sparse_opt.get(), /*gather=*/true, slot_names);
    TableStep dense = StepOnTable(dense_opt.get(), /*gather=*/false, slot_names);
    ASSERT_TRUE(sparse.sparse);
    ASSERT_FALSE(dense.sparse);
    ASSERT_EQ(sparse.table.size(), 10u);
    ASSERT_EQ(dense.table.size(), 10u);
    for (int row : {1, 3}) {
      for (int j = 0; j < 2; ++j) {
        EXPECT_NEAR(sparse.table[2 * row + j], dense.table[2 * row + j], 1e-12) << "row " << row;
        EXPECT_NE(sparse.table[2 * row + j], start[2 * row + j]) << "row " << row;
        for (const auto& [slot, initial] : c.slots) {
          EXPECT_NEAR(sparse.slots[slot][2 * row + j], dense.slots[slot][2 * row + j], 1e-12)
              << slot << " row " << row;
        }
      }
    }
    for (int row : {0, 2, 4}) {
      for (int j = 0; j < 2; ++j) {
        EXPECT_EQ(sparse.table[2 * row + j], start[2 * row + j]) << "row " << row;
        for (const auto& [slot, initial] : c.slots) {
          EXPECT_EQ(sparse.slots[slot][2 * row + j], initial) << slot << " row " << row;
        }
      }
    }
  }
}

TEST(SparseUpdateTest, AdamAppliesTheDenseForm) {
  AdamOptimizer sparse_opt(0.1), dense_opt(0.1);
  TableStep sparse = StepOnTable(&sparse_opt, /*gather=*/true, {"m", "v"});
  TableStep dense = StepOnTable(&dense_opt, /*gather=*/false, {"m", "v"});
  ASSERT_TRUE(sparse.sparse);
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(sparse.table[i], dense.table[i], 1e-12) << i;
}

TEST_F(OptimizerTest, FtrlStepAndItsChecks) {
  FtrlOptimizer ftrl(0.5, -0.5, 0.1, 0.0, 0.2);
  absl::StatusOr<Operation> train = ftrl.Minimize(root_, loss_, &step_);
  ASSERT_TRUE(train.ok()) << train.status();
  absl::StatusOr<Variable> accum = ftrl.GetSlot(w_, "accum");
  ASSERT_TRUE(accum.ok()) << accum.status();
  EXPECT_EQ(accum->name(), "w/Ftrl");
  Init();
  EXPECT_EQ(Values(accum->value), (std::vector<double>{0.1, 0.1}));
  Step(*train);
  // w = 1, gradient 2: linear = 2 - (sqrt(4.1) - sqrt(0.1)) / 0.5 * 1, then
  // w = -linear / (sqrt(4.1) / 0.5 + 2 * 0.2).
  const double linear = 2 - (std::sqrt(4.1) - std::sqrt(0.1)) / 0.5;
  EXPECT_NEAR(Values(w_.value)[0], -linear / (std::sqrt(4.1) / 0.5 + 0.4), 1e-12);
  EXPECT_EQ(GlobalStep(), 1);

  for (auto [power, initial, l1, l2] : std::vector<std::array<double, 4>>{
           {0.5, 0.1, 0, 0}, {-0.5, -0.1, 0, 0}, {-0.5, 0.1, -1, 0}, {-0.5, 0.1, 0, -1}}) {
    FtrlOptimizer bad(0.1, power, initial, l1, l2);
    absl::StatusOr<Operation> t = bad.Minimize(root_, loss_);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
    EXPECT_THAT(std::string(t.status().message()), HasSubstr("learning_rate_power <= 0"));
  }
}

}  // namespace
}  // namespace overseer

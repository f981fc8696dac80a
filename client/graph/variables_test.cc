#include "client/graph/variables.h"

#include <cmath>

#include "client/graph/ops.h"
#include "client/graph/variables_init.h"
#include "client/session/client_session.h"
#include "core/resource_mgr.h"
#include "core/tensor_eigen.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

class VariablesTest : public ::testing::Test {
 protected:
  std::unique_ptr<ClientSession> NewClientSession(const Scope& scope, ResourceMgr* mgr) {
    SessionOptions options;
    options.resource_mgr = mgr;
    absl::StatusOr<std::unique_ptr<ClientSession>> s = ClientSession::Create(scope, options);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  std::vector<std::string> Strings(const Tensor& t) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < t.NumElements(); ++i) out.push_back(t.flat<std::string>()(i));
    return out;
  }
  ResourceMgr resources_;
};

TEST_F(VariablesTest, NodesAreNamedAsTensorFlowNamesThem) {
  Scope root = Scope::NewRootScope();
  Variable w = MakeVariable(root.WithOpName("w"), {1.0f, 2.0f});
  Variable b = MakeVariable(root.NewSubScope("layer").WithOpName("b"), 0.5f,
                            VariableOptions{false, {GraphKeys::kGlobalVariables, "extra"}});
  Variable anon = MakeVariable(root, 1.0);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(w.name(), "w");
  EXPECT_EQ(w.initial_value.name(), "w/initial_value:0");
  EXPECT_EQ(w.initializer.name(), "w/Assign");
  EXPECT_EQ(w.value.name(), "w/read:0");
  EXPECT_EQ(w.dtype(), DT_FLOAT);
  EXPECT_EQ(w.shape(), PartialShape({2}));
  EXPECT_EQ(w.ref.dtype(), DT_FLOAT_REF);
  EXPECT_EQ(b.name(), "layer/b");
  EXPECT_EQ(anon.name(), "Variable");
  ClientGraph* g = root.graph();
  EXPECT_EQ(g->GetCollection(GraphKeys::kGlobalVariables),
            (std::vector<std::string>{"w", "layer/b", "Variable"}));
  EXPECT_EQ(g->GetCollection(GraphKeys::kTrainableVariables),
            (std::vector<std::string>{"w", "Variable"}));
  EXPECT_EQ(g->GetCollection("extra"), std::vector<std::string>{"layer/b"});
  ASSERT_EQ(TrainableVariables(*g).size(), 2u);
  absl::StatusOr<Variable> found = LookupVariable(*g, "layer/b");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->value, b.value);
  EXPECT_FALSE(found->trainable);
  EXPECT_FALSE(LookupVariable(*g, "w/read").ok());
}

// As TensorFlow's: `collections` are the variable's collections (the global one by
// default); a local variable is only local, and a variable may join none.
TEST_F(VariablesTest, LocalVariablesAndVariablesOfNoCollection) {
  Scope root = Scope::NewRootScope();
  MakeVariable(root.WithOpName("global"), 1.0f);
  MakeVariable(root.WithOpName("local"), 2.0f,
               VariableOptions{false, {GraphKeys::kLocalVariables}});
  MakeVariable(root.WithOpName("loose"), 3.0f, VariableOptions{false, {}});
  ASSERT_TRUE(root.ok()) << root.status();
  ClientGraph* g = root.graph();
  EXPECT_EQ(g->GetCollection(GraphKeys::kGlobalVariables), std::vector<std::string>{"global"});
  EXPECT_EQ(g->GetCollection(GraphKeys::kLocalVariables), std::vector<std::string>{"local"});
  EXPECT_EQ(g->GetCollection(GraphKeys::kTrainableVariables), std::vector<std::string>{"global"});
  ASSERT_EQ(LocalVariables(*g).size(), 1u);
  EXPECT_EQ(LocalVariables(*g)[0].name(), "local");
  EXPECT_TRUE(LookupVariable(*g, "loose").ok());
  // The global initializer leaves the local variable alone; the local one sets it; the
  // default report names uninitialised global and local variables, not loose ones.
  Output report = ReportUninitializedVariables(root.WithOpName("report"));
  Operation global_init = GlobalVariablesInitializer(root.WithOpName("global_init"));
  Operation local_init = LocalVariablesInitializer(root.WithOpName("local_init"));
  ASSERT_TRUE(root.ok()) << root.status();
  SessionOptions options;
  options.resource_mgr = &resources_;
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  auto uninitialized = [&] {
    std::vector<Tensor> out;
    EXPECT_TRUE((*session)->Run({report}, &out).ok());
    return std::vector<std::string>(out[0].data<std::string>(),
                                    out[0].data<std::string>() + out[0].NumElements());
  };
  EXPECT_EQ(uninitialized(), (std::vector<std::string>{"global", "local"}));
  ASSERT_TRUE((*session)->Run({}, {}, {global_init}, nullptr).ok());
  EXPECT_EQ(uninitialized(), std::vector<std::string>{"local"});
  ASSERT_TRUE((*session)->Run({}, {}, {local_init}, nullptr).ok());
  EXPECT_TRUE(uninitialized().empty());
}

TEST_F(VariablesTest, ControlDependenciesOfTheScopeDoNotApply) {
  Scope root = Scope::NewRootScope();
  Operation first = ops::NoOp(root.WithOpName("first"));
  Variable v = MakeVariable(root.WithControlDependencies({first}).WithOpName("v"), 1.0f);
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(v.ref.node()->control_inputs().empty());
  EXPECT_TRUE(v.initializer.node()->control_inputs().empty());
}

TEST_F(VariablesTest, InitializerAndUninitializedReport) {
  Scope root = Scope::NewRootScope();
  Variable a = MakeVariable(root.WithOpName("a"), {1.0f, 2.0f});
  Variable b = MakeVariable(root.WithOpName("b"), int64_t{7});
  Output report = ReportUninitializedVariables(root);
  Output report_b = ReportUninitializedVariables(root, {b});
  Output report_none = ReportUninitializedVariables(root, {});
  Operation init = GlobalVariablesInitializer(root);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(init.name(), "init");
  auto session = NewClientSession(root, &resources_);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({report, report_none}, &out).ok());
  EXPECT_EQ(Strings(out[0]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(out[1].NumElements(), 0);
  ASSERT_TRUE(session->Run({}, {}, {a.initializer}, &out).ok());
  ASSERT_TRUE(session->Run({report, report_b}, &out).ok());
  EXPECT_EQ(Strings(out[0]), std::vector<std::string>{"b"});
  EXPECT_EQ(Strings(out[1]), std::vector<std::string>{"b"});
  ASSERT_TRUE(session->Run({}, {}, {init}, &out).ok());
  ASSERT_TRUE(session->Run({report, b.value}, &out).ok());
  EXPECT_EQ(out[0].NumElements(), 0);
  EXPECT_EQ(out[1].scalar<int64_t>(), 7);
}

// A filled initialiser is one repeated value in the GraphDef, as TensorFlow writes
// tf.constant(v, shape): Adam's slots of a [512, 1024] variable used to add 4 MiB of
// zeros each to every graph the trainers sent and logged.
TEST_F(VariablesTest, FilledInitializersAreSmallInTheGraph) {
  Scope root = Scope::NewRootScope();
  Variable zeros = MakeVariable(root.WithOpName("zeros"),
                                ZerosInitializer(TensorShape({512, 1024})), VariableOptions());
  Variable sevens =
      MakeVariable(root.WithOpName("sevens"), ConstantInitializer(TensorShape({3, 2}), 7, DT_INT64),
                   VariableOptions());
  ASSERT_TRUE(root.ok()) << root.status();
  GraphDef graph;
  ASSERT_TRUE(root.ToGraphDef(&graph).ok());
  EXPECT_LT(graph.ByteSizeLong(), 8192u);
  auto session = NewClientSession(root, &resources_);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {GlobalVariablesInitializer(root)}, &out).ok());
  ASSERT_TRUE(session->Run({zeros.value, sevens.value}, &out).ok());
  ASSERT_EQ(out[0].shape(), TensorShape({512, 1024}));
  for (int64_t i = 0; i < out[0].NumElements(); i += 4099) EXPECT_EQ(out[0].flat<float>()(i), 0);
  EXPECT_EQ(out[0].flat<float>()(out[0].NumElements() - 1), 0);
  ASSERT_EQ(out[1].shape(), TensorShape({3, 2}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out[1].flat<int64_t>()(i), 7);
}

TEST_F(VariablesTest, GlobalStep) {
  Scope root = Scope::NewRootScope();
  EXPECT_EQ(GetGlobalStep(*root.graph()).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<Variable> step = CreateGlobalStep(root.NewSubScope("somewhere"));
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(step->name(), "global_step");
  EXPECT_EQ(step->dtype(), DT_INT64);
  EXPECT_EQ(step->shape(), PartialShape::Scalar());
  EXPECT_FALSE(step->trainable);
  EXPECT_EQ(CreateGlobalStep(root).status().code(), absl::StatusCode::kAlreadyExists);
  absl::StatusOr<Variable> got = GetOrCreateGlobalStep(root);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->ref, step->ref);
  EXPECT_TRUE(TrainableVariables(*root.graph()).empty());
  EXPECT_EQ(GlobalVariables(*root.graph()).size(), 1u);
}

// tf.count_up_to on the global step: the value before each increment, then OUT_OF_RANGE
// at the limit (how a trainer stops after N steps without a hook).
TEST_F(VariablesTest, CountUpToTheLimitOnTheGlobalStep) {
  Scope root = Scope::NewRootScope();
  absl::StatusOr<Variable> step = GetOrCreateGlobalStep(root);
  ASSERT_TRUE(step.ok()) << step.status();
  Output count = ops::CountUpTo(root.WithOpName("count"), step->ref, 2);
  ASSERT_TRUE(root.status().ok()) << root.status();
  EXPECT_EQ(count.dtype(), DT_INT64);
  ResourceMgr resources;
  auto session = NewClientSession(root, &resources);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {GlobalVariablesInitializer(root)}, &out).ok());
  for (int64_t want : {0, 1}) {
    ASSERT_TRUE(session->Run({count}, &out).ok());
    EXPECT_EQ(out[0].scalar<int64_t>(), want);
  }
  absl::Status done = session->Run({count}, &out);
  EXPECT_EQ(done.code(), absl::StatusCode::kOutOfRange) << done;
  ASSERT_TRUE(session->Run({step->value}, &out).ok());
  EXPECT_EQ(out[0].scalar<int64_t>(), 2);
}

TEST_F(VariablesTest, SeededInitializersAreReproducibleAndInRange) {
  auto values = [&](ResourceMgr* mgr) {
    Scope root = Scope::NewRootScope();
    Variable g = MakeVariable(root.WithOpName("g"), GlorotUniformInitializer({20, 30}, 7));
    Variable t = MakeVariable(root.WithOpName("t"),
                              TruncatedNormalInitializer({500}, 0.1, 3, 1.0, DT_DOUBLE));
    Variable z = MakeVariable(root.WithOpName("z"), ZerosInitializer({2, 2}, DT_INT32));
    EXPECT_TRUE(root.ok()) << root.status();
    EXPECT_EQ(g.shape(), PartialShape({20, 30}));
    EXPECT_EQ(g.initial_value.node()->name().rfind("g/Initializer/", 0), 0u);
    auto session = NewClientSession(root, mgr);
    std::vector<Tensor> out;
    EXPECT_TRUE(session->Run({}, {}, {GlobalVariablesInitializer(root)}, &out).ok());
    EXPECT_TRUE(session->Run({g.value, t.value, z.value}, &out).ok());
    return out;
  };
  ResourceMgr other;
  std::vector<Tensor> first = values(&resources_);
  std::vector<Tensor> second = values(&other);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_TRUE(first[0].Equals(second[0]));
  EXPECT_TRUE(first[1].Equals(second[1]));
  const double limit = std::sqrt(6.0 / 50);
  for (int64_t i = 0; i < first[0].NumElements(); ++i) {
    EXPECT_LE(std::abs(first[0].flat<float>()(i)), limit);
  }
  double sum = 0;
  for (int64_t i = 0; i < first[1].NumElements(); ++i) {
    const double v = first[1].flat<double>()(i);
    EXPECT_LE(std::abs(v - 1.0), 0.2 + 1e-9);
    sum += v;
  }
  EXPECT_NEAR(sum / 500, 1.0, 0.02);
  EXPECT_TRUE(first[2].Equals(Tensor(DT_INT32, TensorShape({2, 2}))));
}

}  // namespace
}  // namespace overseer

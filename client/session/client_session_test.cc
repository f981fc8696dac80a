#include "client/session/client_session.h"

#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/session/client_session_default.h"
#include "core/resource_mgr.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

class ClientSessionTest : public ::testing::Test {
 protected:
  std::unique_ptr<ClientSession> NewClientSession(const Scope& scope) {
    SessionOptions options;
    options.resource_mgr = &resources_;
    absl::StatusOr<std::unique_ptr<ClientSession>> s = ClientSession::Create(scope, options);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  ResourceMgr resources_;
};

TEST_F(ClientSessionTest, RunsFetchesFeedsAndTargets) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DT_FLOAT, PartialShape({2}));
  Output y = ops::Mul(root, x, 3.0f);
  Output c = ops::Const(root, {{1.0f, 2.0f}, {3.0f, 4.0f}});
  auto session = NewClientSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{x, Tensor::FromVector<float>({1, 2})}}, {y, c}, &out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].Equals(Tensor::FromVector<float>({3, 6})));
  EXPECT_EQ(out[1].shape(), TensorShape({2, 2}));

  Variable v = MakeVariable(root.WithOpName("v"), 5.0f);
  Output inc = ops::AssignAdd(root, v.ref, 1.0f);
  ASSERT_TRUE(session->Run({}, {}, {v.initializer}, &out).ok());
  ASSERT_TRUE(session->Run({}, {}, {Operation(inc.node())}, &out).ok());
  ASSERT_TRUE(session->Run({v.value}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 6.0f);
}

// TensorFlow's nested fetches: lists and maps of tensors and operations, nested, run in
// one step; results in the same shape, an operation's as none.
TEST_F(ClientSessionTest, NestedFetchesComeBackInTheirShape) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DT_FLOAT, PartialShape({2}));
  Output doubled = ops::Mul(root, x, 2.0f);
  Output sum = ops::Sum(root, x, {0});
  Variable v = MakeVariable(root.WithOpName("v"), 5.0f);
  Output inc = ops::AssignAdd(root, v.ref, 1.0f);
  auto session = NewClientSession(root);
  ASSERT_TRUE(session->Run({}, {}, {v.initializer}, nullptr).ok());

  absl::StatusOr<Fetched> got = session->RunFetches(
      {Operation(inc.node()), Fetches::Map({{"sum", sum}, {"both", {doubled, sum}}}), x},
      {{x, Tensor::FromVector<float>({1, 2})}});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_TRUE((*got)[0].is_none());
  const Fetched& named = (*got)[1];
  EXPECT_EQ(named.keys(), (std::vector<std::string>{"both", "sum"}));
  EXPECT_FLOAT_EQ(named["sum"].tensor().scalar<float>(), 3.0f);
  ASSERT_EQ(named["both"].size(), 2u);
  EXPECT_TRUE(named["both"][0].tensor().Equals(Tensor::FromVector<float>({2, 4})));
  EXPECT_FLOAT_EQ(named["both"][1].tensor().scalar<float>(), 3.0f);
  EXPECT_TRUE((*got)[2].tensor().Equals(Tensor::FromVector<float>({1, 2})));
  // The operation ran once, in the same step.
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({v.value}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 6.0f);

  // A single tensor; errors as Run's.
  absl::StatusOr<Fetched> one = session->RunFetches(v.value);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_FLOAT_EQ(one->tensor().scalar<float>(), 6.0f);
  absl::StatusOr<Fetched> unfed = session->RunFetches(Fetches::Map({{"d", doubled}}));
  EXPECT_EQ(unfed.status().code(), absl::StatusCode::kInvalidArgument) << unfed.status();
}

TEST_F(ClientSessionTest, ExtendsWithNodesAddedAfterTheFirstRun) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Const(root, 2.0);
  auto session = NewClientSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({a}, &out).ok());
  Output b = ops::Square(root, a);
  Output c = ops::Add(root, b, a);
  ASSERT_TRUE(session->Run({c}, &out).ok());
  EXPECT_DOUBLE_EQ(out[0].scalar<double>(), 6.0);
  Output d = ops::Neg(root, c);
  RunOptions options;
  options.set_timeout_in_ms(60000);
  RunMetadata metadata;
  ASSERT_TRUE(session->Run(options, {}, {d}, {}, &out, &metadata).ok());
  EXPECT_DOUBLE_EQ(out[0].scalar<double>(), -6.0);
}

TEST_F(ClientSessionTest, TensorsOfAnotherGraphAreRejected) {
  Scope root = Scope::NewRootScope();
  Scope other = Scope::NewRootScope();
  Output mine = ops::Const(root, 1.0f);
  Output theirs = ops::Const(other.WithOpName("x"), 1.0f);
  auto session = NewClientSession(root);
  std::vector<Tensor> out;
  absl::Status s = session->Run({theirs}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "tensor 'x:0' belongs to a different graph than this session's");
  s = session->Run({{theirs, Tensor::Scalar<float>(1)}}, {mine}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = session->Run({}, {}, {ops::NoOp(other.WithOpName("n"))}, &out);
  EXPECT_THAT(std::string(s.message()), HasSubstr("operation 'n' belongs to a different graph"));
  EXPECT_FALSE(session->Run({Output()}, &out).ok());
}

TEST_F(ClientSessionTest, GraphErrorsAndSessionErrorsAreReturned) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto session = NewClientSession(root);
  std::vector<Tensor> out;
  absl::Status missing_feed = session->Run({x}, &out);
  EXPECT_EQ(missing_feed.code(), absl::StatusCode::kInvalidArgument);
  ops::Add(root.WithOpName("broken"), x, 1);  // dtype mismatch, recorded in the graph
  absl::Status s = session->Run({{x, Tensor::Scalar<float>(1)}}, {x}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("broken"));
}

TEST_F(ClientSessionTest, UnknownTargetFailsCreate) {
  SessionOptions options;
  options.target = "nope://x";
  EXPECT_FALSE(ClientSession::Create(Scope::NewRootScope(), options).ok());
}

TEST_F(ClientSessionTest, CloseStopsRuns) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Const(root, 1.0f);
  auto session = NewClientSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({a}, &out).ok());
  ASSERT_TRUE(session->Close().ok());
  EXPECT_EQ(session->Run({a}, &out).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ClientSessionTest, DefaultSessionEvalAndRunOp) {
  Scope root = Scope::NewRootScope();
  Output c = ops::Add(root, 1.0f, 2.0f);
  EXPECT_EQ(Eval(c).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RunOp(ops::NoOp(root)).code(), absl::StatusCode::kFailedPrecondition);
  auto session = NewClientSession(root);
  {
    DefaultSessionScope as_default(session.get());
    EXPECT_EQ(GetDefaultSession(), session.get());
    absl::StatusOr<Tensor> v = Eval(c);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_FLOAT_EQ(v->scalar<float>(), 3.0f);
    Variable w = MakeVariable(root.WithOpName("w"), 4.0f);
    ASSERT_TRUE(RunOp(w.initializer).ok());
    EXPECT_FLOAT_EQ(Eval(w.value)->scalar<float>(), 4.0f);

    Scope other = Scope::NewRootScope();
    auto other_session = NewClientSession(other);
    Output k = ops::Const(other, 7.0f);
    EXPECT_EQ(Eval(k).status().code(), absl::StatusCode::kInvalidArgument);
    {
      DefaultSessionScope inner(other_session.get());
      EXPECT_FLOAT_EQ(Eval(k)->scalar<float>(), 7.0f);
    }
    EXPECT_EQ(GetDefaultSession(), session.get());
  }
  EXPECT_EQ(GetDefaultSession(), nullptr);
}

TEST_F(ClientSessionTest, InteractiveSessionIsTheDefaultForItsLifetime) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DT_INT32);
  Output y = ops::Mul(root, x, 2);
  {
    SessionOptions options;
    options.resource_mgr = &resources_;
    absl::StatusOr<std::unique_ptr<InteractiveSession>> s =
        InteractiveSession::Create(root, options);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(GetDefaultSession(), (*s)->session());
    absl::StatusOr<Tensor> v = Eval(y, {{x, Tensor::Scalar<int32_t>(21)}});
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->scalar<int32_t>(), 42);
  }
  EXPECT_EQ(GetDefaultSession(), nullptr);
  EXPECT_EQ(Eval(y).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace overseer

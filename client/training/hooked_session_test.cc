#include "client/training/hooked_session.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/graph/ops.h"
#include "core/resource_mgr.h"
#include "core/tensor_eigen.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

// Records every call; returns `request` from BeforeRun and stops when asked to.
class FakeHook : public SessionRunHook {
 public:
  absl::Status Begin(const Scope&) override {
    ++calls["begin"];
    return absl::OkStatus();
  }
  absl::Status AfterCreateSession(ClientSession*, Coordinator*) override {
    ++calls["after_create_session"];
    return absl::OkStatus();
  }
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext* context) override {
    ++calls["before_run"];
    last_original_fetches.clear();
    for (const Fetch& f : context->original_args().fetches) {
      last_original_fetches.push_back(f.DebugName());
    }
    last_session = context->session();
    if (!before_run_error.ok()) return before_run_error;
    return request;
  }
  absl::Status AfterRun(SessionRunContext* context, const SessionRunValues& values) override {
    ++calls["after_run"];
    last_values = values;
    if (should_stop) context->RequestStop();
    return after_run_error;
  }
  absl::Status End(ClientSession*) override {
    ++calls["end"];
    return absl::OkStatus();
  }

  std::map<std::string, int> calls;
  SessionRunArgs request;
  bool should_stop = false;
  absl::Status before_run_error;
  absl::Status after_run_error;
  std::vector<std::string> last_original_fetches;
  ClientSession* last_session = nullptr;
  SessionRunValues last_values;
};

int64_t Int(const Tensor& t) { return t.flat<int32_t>()(0); }

class HookedSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SessionOptions options;
    options.resource_mgr = &resources_;
    session_ = *ClientSession::Create(root_, options);
  }

  Scope root_ = Scope::NewRootScope();
  ResourceMgr resources_;
  std::unique_ptr<ClientSession> session_;
  FakeHook hook1_, hook2_;
};

TEST_F(HookedSessionTest, RunPassesAllArguments) {
  HookedSession hooked(session_.get(), {});
  Output x = ops::Placeholder(root_.WithOpName("x"), DT_INT32);
  Output y = ops::Add(root_.WithOpName("y"), x, 1);
  RunOptions options;
  options.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> out;
  ASSERT_TRUE(
      hooked.Run(options, {{x, Tensor::Scalar<int32_t>(41)}}, {y}, {}, &out, &metadata).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Int(out[0]), 42);
  // The caller's options reached the session: a full trace fills the step stats.
  EXPECT_GT(metadata.step_stats().dev_stats_size(), 0);
}

TEST_F(HookedSessionTest, CallsOnlyBeforeAndAfterRun) {
  HookedSession hooked(session_.get(), {&hook1_, &hook2_});
  Output a = ops::Const(root_.WithOpName("a_tensor"), {0});
  std::vector<Tensor> out;
  ASSERT_TRUE(hooked.Run({a}, &out).ok());
  for (FakeHook* hook : {&hook1_, &hook2_}) {
    EXPECT_TRUE(hook->last_values.results.empty());
    EXPECT_EQ(hook->last_values.options.trace_level(), RunOptions::NO_TRACE);
    EXPECT_EQ(hook->last_original_fetches, std::vector<std::string>{"a_tensor:0"});
    EXPECT_EQ(hook->last_session, session_.get());
    EXPECT_EQ(hook->calls["begin"], 0);
    EXPECT_EQ(hook->calls["after_create_session"], 0);
    EXPECT_EQ(hook->calls["before_run"], 1);
    EXPECT_EQ(hook->calls["after_run"], 1);
    EXPECT_EQ(hook->calls["end"], 0);
  }
}

TEST_F(HookedSessionTest, ShouldStop) {
  HookedSession hooked(session_.get(), {&hook1_, &hook2_});
  Output a = ops::Const(root_.WithOpName("a_tensor"), {0});
  std::vector<Tensor> out;
  ASSERT_TRUE(hooked.Run({a}, &out).ok());
  EXPECT_FALSE(hooked.ShouldStop());
  hook1_.should_stop = true;
  ASSERT_TRUE(hooked.Run({a}, &out).ok());
  EXPECT_TRUE(hooked.ShouldStop());
  // Stop is sticky.
  hook1_.should_stop = false;
  ASSERT_TRUE(hooked.Run({a}, &out).ok());
  EXPECT_TRUE(hooked.ShouldStop());
}

TEST_F(HookedSessionTest, FetchesHookRequests) {
  HookedSession hooked(session_.get(), {&hook1_, &hook2_});
  Output a = ops::Const(root_.WithOpName("a_tensor"), {0});
  Output another = ops::Const(root_.WithOpName("another_tensor"), {5});
  ops::Const(root_.WithOpName("third_tensor"), {10});
  hook1_.request.fetches = {another};
  // By name, and the caller's own tensor too: each party gets its own results.
  hook2_.request.fetches = {"third_tensor:0", "a_tensor"};
  std::vector<Tensor> out;
  ASSERT_TRUE(hooked.Run({a}, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Int(out[0]), 0);
  ASSERT_EQ(hook1_.last_values.results.size(), 1u);
  EXPECT_EQ(Int(hook1_.last_values.results[0]), 5);
  ASSERT_EQ(hook2_.last_values.results.size(), 2u);
  EXPECT_EQ(Int(hook2_.last_values.results[0]), 10);
  EXPECT_EQ(Int(hook2_.last_values.results[1]), 0);
}

TEST_F(HookedSessionTest, HookFetchOfAMissingTensorIsNotFound) {
  HookedSession hooked(session_.get(), {&hook1_});
  Output a = ops::Const(root_.WithOpName("a_tensor"), {0});
  hook1_.request.fetches = {"no_such_tensor:0"};
  std::vector<Tensor> out;
  absl::Status s = hooked.Run({a}, &out);
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_NE(s.message().find("no_such_tensor"), std::string::npos) << s;
  EXPECT_EQ(hook1_.calls["after_run"], 0);
}

TEST_F(HookedSessionTest, HookTargetsRun) {
  HookedSession hooked(session_.get(), {&hook1_});
  Output a = ops::Const(root_.WithOpName("a_tensor"), {0});
  Output x = ops::Placeholder(root_.WithOpName("x"), DT_INT32);
  // A target that needs a feed nobody gives fails the run: the target was run.
  hook1_.request.targets = {Operation(ops::Identity(root_, x).node())};
  std::vector<Tensor> out;
  absl::Status s = hooked.Run({a}, &out);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  hook1_.request.feeds = {{x, Tensor::Scalar<int32_t>(1)}};
  EXPECT_TRUE(hooked.Run({a}, &out).ok());
}

TEST_F(HookedSessionTest, OnlyHooksHaveFeeds) {
  HookedSession hooked(session_.get(), {&hook1_, &hook2_});
  Output a = ops::Placeholder(root_.WithOpName("a_tensor"), DT_INT32);
  Output b = ops::Placeholder(root_.WithOpName("b_tensor"), DT_INT32);
  Output sum = ops::Add(root_, a, b);
  hook1_.request.feeds = {{a, Tensor::Scalar<int32_t>(5)}};
  hook2_.request.feeds = {{b, Tensor::Scalar<int32_t>(10)}};
  std::vector<Tensor> out;
  ASSERT_TRUE(hooked.Run({sum}, &out).ok());
  EXPECT_EQ(Int(out[0]), 15);
}

TEST_F(HookedSessionTest, BothHooksAndUserHaveFeeds) {
  HookedSession hooked(session_.get(), {&hook1_, &hook2_});
  Output a = ops::Placeholder(root_.WithOpName("a_tensor"), DT_INT32);
  Output b = ops::Placeholder(root_.WithOpName("b_tensor"), DT_INT32);
  Output c = ops::Placeholder(root_.WithOpName("c_tensor"), DT_INT32);
  Output sum = ops::Add(root_, ops::Add(root_, a, b), c);
  hook1_.request.feeds = {{a, Tensor::Scalar<int32_t>(5)}};
  hook2_.request.feeds = {{b, Tensor::Scalar<int32_t>(10)}};
  const std::vector<FeedPair> feeds = {{c, Tensor::Scalar<int32_t>(20)}};
  std::vector<Tensor> out;
  ASSERT_TRUE(hooked.Run(feeds, {sum}, {}, &out).ok());
  EXPECT_EQ(Int(out[0]), 35);
}

TEST_F(HookedSessionTest, HooksFeedConflicts) {
  HookedSession hooked(session_.get(), {&hook1_, &hook2_});
  Output a = ops::Placeholder(root_.WithOpName("a_tensor"), DT_INT32);
  Output b = ops::Placeholder(root_.WithOpName("b_tensor"), DT_INT32);
  Output sum = ops::Add(root_, a, b);
  hook1_.request.feeds = {{a, Tensor::Scalar<int32_t>(5)}};
  hook2_.request.feeds = {{a, Tensor::Scalar<int32_t>(10)}};
  std::vector<Tensor> out;
  absl::Status s = hooked.Run({sum}, &out);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'a_tensor:0' is fed by two hooks"), std::string::npos) << s;
  EXPECT_EQ(hook1_.calls["after_run"], 0);
}

TEST_F(HookedSessionTest, HooksAndUserFeedConflicts) {
  HookedSession hooked(session_.get(), {&hook1_, &hook2_});
  Output a = ops::Placeholder(root_.WithOpName("a_tensor"), DT_INT32);
  Output b = ops::Placeholder(root_.WithOpName("b_tensor"), DT_INT32);
  Output sum = ops::Add(root_, a, b);
  hook1_.request.feeds = {{a, Tensor::Scalar<int32_t>(5)}};
  hook2_.request.feeds = {{b, Tensor::Scalar<int32_t>(10)}};
  std::vector<Tensor> out;
  absl::Status s = hooked.Run({{b, Tensor::Scalar<int32_t>(10)}}, {sum}, {}, &out);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'b_tensor:0' is fed by a hook and by the caller"), std::string::npos)
      << s;
}

// Asks for `options` in every run and records what AfterRun sees.
class RunOptionsMetadataHook : public SessionRunHook {
 public:
  RunOptionsMetadataHook(RunOptions::TraceLevel trace_level, int64_t timeout_in_ms,
                         int32_t inter_op_thread_pool) {
    options_.set_trace_level(trace_level);
    options_.set_timeout_in_ms(timeout_in_ms);
    options_.set_inter_op_thread_pool(inter_op_thread_pool);
  }
  absl::StatusOr<SessionRunArgs> BeforeRun(SessionRunContext*) override {
    SessionRunArgs args;
    args.options = options_;
    return args;
  }
  absl::Status AfterRun(SessionRunContext*, const SessionRunValues& values) override {
    run_options.push_back(values.options);
    run_metadata.push_back(values.run_metadata);
    return absl::OkStatus();
  }
  std::vector<RunOptions> run_options;
  std::vector<RunMetadata> run_metadata;

 private:
  RunOptions options_;
};

TEST_F(HookedSessionTest, MergeRunOptionsFromHooks) {
  RunOptionsMetadataHook hook_a(RunOptions::HARDWARE_TRACE, 30000, 0);
  RunOptionsMetadataHook hook_b(RunOptions::FULL_TRACE, 60000, 1);
  HookedSession hooked(session_.get(), {&hook_a, &hook_b});
  Output c = ops::Const(root_.WithOpName("my_const"), 42);
  std::vector<Tensor> out;
  ASSERT_TRUE(hooked.Run({c}, &out).ok());
  EXPECT_EQ(Int(out[0]), 42);
  ASSERT_EQ(hook_b.run_options.size(), 1u);
  EXPECT_EQ(hook_b.run_options[0].trace_level(), RunOptions::FULL_TRACE);
  EXPECT_EQ(hook_b.run_options[0].timeout_in_ms(), 60000);
  EXPECT_EQ(hook_b.run_options[0].inter_op_thread_pool(), 1);
  // Both hooks see the same merged options and the traced run's metadata.
  EXPECT_EQ(hook_a.run_options[0].SerializeAsString(), hook_b.run_options[0].SerializeAsString());
  ASSERT_EQ(hook_b.run_metadata.size(), 1u);
  EXPECT_GT(hook_b.run_metadata[0].step_stats().dev_stats_size(), 0);
}

TEST_F(HookedSessionTest, MergeCallerAndHookRunOptions) {
  RunOptionsMetadataHook hook(RunOptions::HARDWARE_TRACE, 60000, 0);
  HookedSession hooked(session_.get(), {&hook});
  Output c = ops::Const(root_.WithOpName("my_const"), 42);
  RunOptions caller;
  caller.set_trace_level(RunOptions::FULL_TRACE);
  caller.set_timeout_in_ms(30000);
  caller.set_inter_op_thread_pool(1);
  RunMetadata metadata;
  std::vector<Tensor> out;
  ASSERT_TRUE(hooked.Run(caller, {}, {c}, {}, &out, &metadata).ok());
  EXPECT_EQ(Int(out[0]), 42);
  // trace_level 3 of the caller beats 2 of the hook; timeout 60000 of the hook beats
  // the caller's 30000.
  ASSERT_EQ(hook.run_options.size(), 1u);
  EXPECT_EQ(hook.run_options[0].trace_level(), RunOptions::FULL_TRACE);
  EXPECT_EQ(hook.run_options[0].timeout_in_ms(), 60000);
  EXPECT_EQ(hook.run_options[0].inter_op_thread_pool(), 1);
  EXPECT_GT(metadata.step_stats().dev_stats_size(), 0);
}

TEST_F(HookedSessionTest, BeforeRunErrorStopsTheRun) {
  HookedSession hooked(session_.get(), {&hook1_, &hook2_});
  Output v = ops::Const(root_.WithOpName("v"), 1);
  hook1_.before_run_error = absl::OutOfRangeError("end of input");
  std::vector<Tensor> out;
  EXPECT_TRUE(absl::IsOutOfRange(hooked.Run({v}, &out)));
  EXPECT_EQ(hook2_.calls["before_run"], 0);
  EXPECT_EQ(hook1_.calls["after_run"], 0);
}

TEST_F(HookedSessionTest, AfterRunErrorIsReturnedAndStopStillCounts) {
  HookedSession hooked(session_.get(), {&hook1_, &hook2_});
  Output v = ops::Const(root_.WithOpName("v"), 1);
  hook1_.should_stop = true;
  hook1_.after_run_error = absl::InternalError("hook failed");
  std::vector<Tensor> out;
  absl::Status s = hooked.Run({v}, &out);
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_EQ(hook2_.calls["after_run"], 0);
  EXPECT_TRUE(hooked.ShouldStop());
}

TEST_F(HookedSessionTest, SessionErrorSkipsAfterRun) {
  HookedSession hooked(session_.get(), {&hook1_});
  Output x = ops::Placeholder(root_.WithOpName("x"), DT_INT32);
  std::vector<Tensor> out;
  EXPECT_TRUE(absl::IsInvalidArgument(hooked.Run({x}, &out)));
  EXPECT_EQ(hook1_.calls["before_run"], 1);
  EXPECT_EQ(hook1_.calls["after_run"], 0);
}

TEST_F(HookedSessionTest, CloseClosesTheSession) {
  HookedSession hooked(session_.get(), {});
  Output v = ops::Const(root_.WithOpName("v"), 1);
  std::vector<Tensor> out;
  ASSERT_TRUE(hooked.Run({v}, &out).ok());
  ASSERT_TRUE(hooked.Close().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(hooked.Run({v}, &out)));
}

}  // namespace
}  // namespace overseer

// TensorFlow's monitored_session_test.py WrappedSessionTest and CoordinatedSessionTest,
// on DirectSession.

#include "client/training/wrapped_session.h"

#include <memory>
#include <vector>

#include "client/training/monitored_session_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::StepGraph;
using ::testing::HasSubstr;

// Stops at the n-th ShouldStop (TensorFlow's StopAtNSession).
class StopAtNLayer : public WrappedSession {
 public:
  StopAtNLayer(std::unique_ptr<WrappedSession> inner, int n) : inner_(std::move(inner)), n_(n) {}
  absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                   const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    return inner_->Run(options, feeds, fetches, targets, outputs, metadata);
  }
  absl::StatusOr<bool> ShouldStop() override {
    if (n_ == 0) return true;
    --n_;
    return inner_->ShouldStop();
  }
  absl::Status Close() override { return inner_->Close(); }
  ClientGraph* graph() const override { return inner_->graph(); }

 private:
  const std::unique_ptr<WrappedSession> inner_;
  int n_;
};

class WrappedSessionTest : public ::testing::Test {
 protected:
  WrappedSessionTest() {
    SessionOptions options;
    options.resource_mgr = &g_.resources;
    session_ = *ClientSession::Create(g_.root, options);
  }
  bool Stop(WrappedSession& s) {
    absl::StatusOr<bool> stop = s.ShouldStop();
    EXPECT_TRUE(stop.ok()) << stop.status();
    return stop.ok() && *stop;
  }
  int32_t RunV(WrappedSession& s, int32_t fed) {
    std::vector<Tensor> out;
    absl::Status status = s.Run(RunOptions(), {g_.Feed(fed)}, {g_.v}, {}, &out, nullptr);
    EXPECT_TRUE(status.ok()) << status;
    return status.ok() ? StepGraph::Int32(out) : -1;
  }

  StepGraph g_;
  std::unique_ptr<ClientSession> session_;
};

TEST_F(WrappedSessionTest, Properties) {
  ClientSessionLayer wrapped(session_.get());
  EXPECT_EQ(wrapped.graph(), g_.root.graph());
}

TEST_F(WrappedSessionTest, ShouldStopOnClose) {
  ClientSessionLayer wrapped(session_.get());
  EXPECT_FALSE(Stop(wrapped));
  ASSERT_TRUE(wrapped.Close().ok());
  EXPECT_TRUE(Stop(wrapped));
}

TEST_F(WrappedSessionTest, ShouldStopUsesCheckStop) {
  StopAtNLayer wrapped(std::make_unique<ClientSessionLayer>(session_.get()), 3);
  EXPECT_FALSE(Stop(wrapped));
  EXPECT_FALSE(Stop(wrapped));
  EXPECT_FALSE(Stop(wrapped));
  EXPECT_TRUE(Stop(wrapped));
}

TEST_F(WrappedSessionTest, ShouldStopDelegatesToWrappedSession) {
  CoordinatedSession wrapped(
      std::make_unique<StopAtNLayer>(std::make_unique<ClientSessionLayer>(session_.get()), 4),
      std::make_shared<Coordinator>());
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(Stop(wrapped)) << i;
  EXPECT_TRUE(Stop(wrapped));
}

TEST_F(WrappedSessionTest, CloseTwice) {
  ClientSessionLayer wrapped(session_.get());
  ASSERT_TRUE(wrapped.Close().ok());
  EXPECT_TRUE(Stop(wrapped));
  EXPECT_TRUE(wrapped.Close().ok());
  EXPECT_TRUE(Stop(wrapped));
}

TEST_F(WrappedSessionTest, Run) {
  ClientSessionLayer wrapped(session_.get());
  EXPECT_EQ(RunV(wrapped, 51), 51);
}

TEST_F(WrappedSessionTest, HookedLayerStopsWhenAHookAsksAndRefusesFurtherRuns) {
  test::FakeHook hook;
  HookedSessionLayer hooked(std::move(session_), {&hook});
  EXPECT_EQ(RunV(hooked, 1), 1);
  EXPECT_FALSE(Stop(hooked));
  hook.should_stop = true;
  EXPECT_EQ(RunV(hooked, 2), 2);
  EXPECT_TRUE(Stop(hooked));
  absl::Status again = hooked.Run(RunOptions(), {g_.Feed(3)}, {g_.v}, {}, nullptr, nullptr);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("Run called even after should_stop requested"));
  EXPECT_EQ(hook.calls["before_run"], 2);
}

// A thread that waits for the coordinator to stop (busy_wait_for_coord_stop).
std::shared_ptr<ManagedThread> WaitForStop(Coordinator& coord) {
  auto thread = ManagedThread::Start("wait_for_stop", [&coord] { coord.WaitForStop(); });
  coord.RegisterThread(thread);
  return thread;
}

class CoordinatedSessionTest : public WrappedSessionTest {
 protected:
  std::unique_ptr<CoordinatedSession> Coordinated() {
    return std::make_unique<CoordinatedSession>(
        std::make_unique<ClientSessionLayer>(session_.get()), coord_);
  }
  std::shared_ptr<Coordinator> coord_ = std::make_shared<Coordinator>();
};

TEST_F(CoordinatedSessionTest, Properties) {
  auto coord_sess = Coordinated();
  EXPECT_EQ(coord_sess->graph(), g_.root.graph());
  EXPECT_EQ(coord_sess->coordinator(), coord_.get());
}

TEST_F(CoordinatedSessionTest, Run) { EXPECT_EQ(RunV(*Coordinated(), 42), 42); }

TEST_F(CoordinatedSessionTest, ShouldStopOnClose) {
  auto coord_sess = Coordinated();
  EXPECT_FALSE(Stop(*coord_sess));
  ASSERT_TRUE(coord_sess->Close().ok());
  EXPECT_TRUE(Stop(*coord_sess));
}

TEST_F(CoordinatedSessionTest, ShouldStopOnCoordStop) {
  auto coord_sess = Coordinated();
  EXPECT_FALSE(Stop(*coord_sess));
  ASSERT_TRUE(coord_->RequestStop().ok());
  EXPECT_TRUE(Stop(*coord_sess));
}

TEST_F(CoordinatedSessionTest, DontRequestStopOnErrorInMainThread) {
  auto coord_sess = Coordinated();
  EXPECT_FALSE(Stop(*coord_sess));
  EXPECT_EQ(RunV(*coord_sess, 0), 0);
  EXPECT_EQ(RunV(*coord_sess, 1), 1);
  absl::Status bad = coord_sess->Run(RunOptions(), {g_.Feed(2)}, {Output()}, {}, nullptr, nullptr);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(coord_->ShouldStop());
  EXPECT_FALSE(Stop(*coord_sess));
}

TEST_F(CoordinatedSessionTest, StopThreadsOnCloseAfterError) {
  std::vector<std::shared_ptr<ManagedThread>> threads;
  for (int i = 0; i < 3; ++i) threads.push_back(WaitForStop(*coord_));
  auto coord_sess = Coordinated();
  EXPECT_FALSE(Stop(*coord_sess));
  for (const auto& t : threads) EXPECT_TRUE(t->IsAlive());
  EXPECT_EQ(RunV(*coord_sess, 0), 0);
  EXPECT_EQ(RunV(*coord_sess, 1), 1);
  for (const auto& t : threads) EXPECT_TRUE(t->IsAlive());
  EXPECT_FALSE(coord_sess->Run(RunOptions(), {g_.Feed(2)}, {Output()}, {}, nullptr, nullptr).ok());
  ASSERT_TRUE(coord_sess->Close().ok());
  for (const auto& t : threads) EXPECT_TRUE(t->finished());
  EXPECT_TRUE(coord_->ShouldStop());
  EXPECT_TRUE(Stop(*coord_sess));
}

TEST_F(CoordinatedSessionTest, StopThreadsOnClose) {
  std::vector<std::shared_ptr<ManagedThread>> threads;
  for (int i = 0; i < 3; ++i) threads.push_back(WaitForStop(*coord_));
  auto coord_sess = Coordinated();
  ASSERT_TRUE(coord_sess->Close().ok());
  for (const auto& t : threads) EXPECT_TRUE(t->finished());
  EXPECT_TRUE(coord_->ShouldStop());
  EXPECT_TRUE(Stop(*coord_sess));
}

TEST_F(CoordinatedSessionTest, PropagatesTheErrorAThreadStoppedTheCoordinatorWith) {
  auto coord_sess = Coordinated();
  ASSERT_TRUE(coord_->RequestStop(absl::UnknownError("a thread failed")).ok());
  absl::StatusOr<bool> stop = coord_sess->ShouldStop();
  EXPECT_EQ(stop.status().code(), absl::StatusCode::kUnknown);
  absl::Status closed = coord_sess->Close();
  EXPECT_EQ(closed.code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(closed.message(), HasSubstr("a thread failed"));
}

TEST_F(CoordinatedSessionTest, ARecoverableRootCauseReplacesARunError) {
  auto coord_sess = Coordinated();
  ASSERT_TRUE(coord_->RequestStop(absl::AbortedError("ps restarted")).ok());
  absl::Status s = coord_sess->Run(RunOptions(), {}, {Output()}, {}, nullptr, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(s.message(), HasSubstr("ps restarted"));
}

TEST_F(CoordinatedSessionTest, ANonRecoverableCoordinatorErrorLeavesTheRunError) {
  auto coord_sess = Coordinated();
  ASSERT_TRUE(coord_->RequestStop(absl::UnknownError("elsewhere")).ok());
  absl::Status s = coord_sess->Run(RunOptions(), {}, {Output()}, {}, nullptr, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

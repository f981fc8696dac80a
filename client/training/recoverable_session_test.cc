// TensorFlow's monitored_session_test.py RecoverableSessionTest, plus the backoff and
// limits TensorFlow does not have, on DirectSession with a manual clock.

#include "client/training/recoverable_session.h"

#include <deque>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "client/training/monitored_session_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using test::StepGraph;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A FakeClock that records its sleeps.
class RecordingClock : public test::FakeClock {
 public:
  void SleepFor(absl::Duration d) override {
    FakeClock::SleepFor(d);
    absl::MutexLock lock(&mu_);
    sleeps_.push_back(d);
  }
  std::vector<absl::Duration> sleeps() {
    absl::MutexLock lock(&mu_);
    return sleeps_;
  }

 private:
  absl::Mutex mu_;
  std::vector<absl::Duration> sleeps_ ABSL_GUARDED_BY(mu_);
};

// A layer over a ClientSession that fails its run after `runs` successful ones with
// `error` (TensorFlow's AbortAtNSession); its stop condition and close are scripted.
// Each Close adds one to *closes, which outlives the layer.
class FakeLayer : public WrappedSession {
 public:
  FakeLayer(ClientSession* session, int runs, int* closes,
            absl::Status error = absl::AbortedError("Aborted at N"))
      : session_(session), runs_(runs), closes_(closes), error_(std::move(error)) {}
  absl::Status Run(const RunOptions& options, const std::vector<FeedPair>& feeds,
                   const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                   std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    if (runs_ == 0) return error_;
    --runs_;
    return session_->Run(options, feeds, fetches, targets, outputs, metadata);
  }
  absl::StatusOr<bool> ShouldStop() override {
    if (!stop_error.ok()) return stop_error;
    return closed;
  }
  absl::Status Close() override {
    closed = true;
    ++*closes_;
    return close_error;
  }
  ClientGraph* graph() const override { return session_->graph(); }

  absl::Status stop_error;
  absl::Status close_error;
  bool closed = false;

 private:
  ClientSession* const session_;
  int runs_;
  int* const closes_;
  const absl::Status error_;
};

class RecoverableSessionTest : public ::testing::Test {
 protected:
  RecoverableSessionTest() {
    SessionOptions options;
    options.resource_mgr = &g_.resources;
    session_ = *ClientSession::Create(g_.root, options);
  }

  // A factory that hands out the scripted results in order, then FAILED_PRECONDITION.
  WrappedSessionFactory Stack() {
    return [this]() -> absl::StatusOr<std::unique_ptr<WrappedSession>> {
      ++created_;
      if (to_use_.empty()) return absl::FailedPreconditionError("pop from empty list");
      auto next = std::move(to_use_.front());
      to_use_.pop_front();
      if (!next.ok()) return next.status();
      last_ = next->get();
      return std::unique_ptr<WrappedSession>(std::move(*next));
    };
  }
  void Push(int runs) {
    to_use_.push_back(std::make_unique<FakeLayer>(session_.get(), runs, &closes_));
  }
  void PushError(absl::Status error, int times = 1) {
    for (int i = 0; i < times; ++i) to_use_.push_back(error);
  }
  std::unique_ptr<RecoverableSession> Create(const RecoveryOptions& options = {}) {
    auto s = RecoverableSession::Create(Stack(), options, &clock_);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  absl::StatusOr<int32_t> RunV(WrappedSession& s, int32_t fed) {
    std::vector<Tensor> out;
    absl::Status status = s.Run(RunOptions(), {g_.Feed(fed)}, {g_.v}, {}, &out, nullptr);
    if (!status.ok()) return status;
    return StepGraph::Int32(out);
  }

  StepGraph g_;
  std::unique_ptr<ClientSession> session_;
  RecordingClock clock_;
  std::deque<absl::StatusOr<std::unique_ptr<FakeLayer>>> to_use_;
  FakeLayer* last_ = nullptr;  // Deleted when the recoverable session replaces it.
  int closes_ = 0;             // Close calls on every FakeLayer.
  int created_ = 0;
};

TEST_F(RecoverableSessionTest, Properties) {
  Push(10);
  auto recoverable = Create();
  EXPECT_EQ(recoverable->graph(), g_.root.graph());
  EXPECT_EQ(recoverable->recoveries(), 0);
}

TEST_F(RecoverableSessionTest, Run) {
  Push(10);
  auto recoverable = Create();
  EXPECT_EQ(*RunV(*recoverable, 51), 51);
}

TEST_F(RecoverableSessionTest, Recovery) {
  // Three sessions: the first aborts after 1 run, the second after 2, the third after 3.
  for (int i = 1; i <= 3; ++i) Push(i);
  auto recoverable = Create();
  EXPECT_EQ(to_use_.size(), 2u);  // One session popped.
  EXPECT_EQ(*RunV(*recoverable, 51), 51);
  EXPECT_EQ(to_use_.size(), 2u);
  // This fails and recovers by picking up the second session.
  EXPECT_EQ(*RunV(*recoverable, 42), 42);
  EXPECT_EQ(to_use_.size(), 1u);
  EXPECT_EQ(*RunV(*recoverable, 33), 33);
  EXPECT_EQ(to_use_.size(), 1u);
  // This fails and recovers by picking up the last session.
  EXPECT_EQ(*RunV(*recoverable, 24), 24);
  EXPECT_EQ(to_use_.size(), 0u);
  EXPECT_EQ(*RunV(*recoverable, 11), 11);
  EXPECT_EQ(*RunV(*recoverable, 0), 0);
  // This fails, and recreating fails with a real error.
  absl::StatusOr<int32_t> last = RunV(*recoverable, -12);
  EXPECT_EQ(last.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(last.status().message(), HasSubstr("pop from empty list"));
  EXPECT_EQ(recoverable->recoveries(), 3);
  EXPECT_EQ(recoverable->last_recovery_cause().code(), absl::StatusCode::kAborted);
  // Each recovery began a new series (a step succeeded in between): one initial backoff.
  EXPECT_THAT(clock_.sleeps(), ElementsAre(absl::Milliseconds(100), absl::Milliseconds(100),
                                           absl::Milliseconds(100)));
}

TEST_F(RecoverableSessionTest, RecoversOnUnavailableToo) {
  to_use_.push_back(
      std::make_unique<FakeLayer>(session_.get(), 0, &closes_, absl::UnavailableError("ps down")));
  Push(5);
  auto recoverable = Create();
  EXPECT_EQ(*RunV(*recoverable, 7), 7);
  EXPECT_EQ(recoverable->recoveries(), 1);
  EXPECT_EQ(recoverable->last_recovery_cause().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(recoverable->last_recovery_cause().message(), HasSubstr("ps down"));
}

TEST_F(RecoverableSessionTest, NonRecoverableErrorsEndTheRun) {
  to_use_.push_back(
      std::make_unique<FakeLayer>(session_.get(), 0, &closes_, absl::InternalError("broken")));
  Push(5);
  auto recoverable = Create();
  absl::StatusOr<int32_t> r = RunV(*recoverable, 7);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(recoverable->recoveries(), 0);
  EXPECT_EQ(created_, 1);
  EXPECT_TRUE(clock_.sleeps().empty());
}

TEST_F(RecoverableSessionTest, CreationRetriesRecoverableErrorsWithCappedExponentialBackoff) {
  PushError(absl::UnavailableError("master restarting"), 6);
  Push(5);
  RecoveryOptions options;
  options.max_backoff = absl::Seconds(1);
  auto recoverable = Create(options);
  ASSERT_NE(recoverable, nullptr);
  EXPECT_EQ(created_, 7);
  EXPECT_EQ(recoverable->recoveries(), 6);
  EXPECT_THAT(clock_.sleeps(),
              ElementsAre(absl::Milliseconds(100), absl::Milliseconds(200), absl::Milliseconds(400),
                          absl::Milliseconds(800), absl::Seconds(1), absl::Seconds(1)));
  EXPECT_EQ(*RunV(*recoverable, 3), 3);
}

TEST_F(RecoverableSessionTest, ARecoverableRunErrorThenFailingCreationsAreOneSeries) {
  to_use_.push_back(std::make_unique<FakeLayer>(session_.get(), 0, &closes_));
  PushError(absl::AbortedError("again"), 2);
  Push(5);
  auto recoverable = Create();
  EXPECT_EQ(*RunV(*recoverable, 9), 9);
  EXPECT_EQ(recoverable->recoveries(), 3);
  EXPECT_THAT(clock_.sleeps(), ElementsAre(absl::Milliseconds(100), absl::Milliseconds(200),
                                           absl::Milliseconds(400)));
}

TEST_F(RecoverableSessionTest, GivesUpAfterMaxAttemptsWithTheLastError) {
  to_use_.push_back(std::make_unique<FakeLayer>(session_.get(), 0, &closes_));
  PushError(absl::AbortedError("first"), 1);
  PushError(absl::AbortedError("second"), 1);
  PushError(absl::UnavailableError("the last one"), 1);
  Push(5);  // Never reached.
  RecoveryOptions options;
  options.max_attempts = 3;
  auto recoverable = Create(options);
  absl::StatusOr<int32_t> r = RunV(*recoverable, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("recovery gave up after 3 recreations"));
  EXPECT_THAT(r.status().message(), HasSubstr("max_attempts 3"));
  EXPECT_THAT(r.status().message(), HasSubstr("the last one"));
  EXPECT_EQ(recoverable->recoveries(), 3);
  EXPECT_EQ(to_use_.size(), 1u);
  // Later runs say the same.
  EXPECT_EQ(RunV(*recoverable, 1).status(), r.status());
}

TEST_F(RecoverableSessionTest, GivesUpAfterMaxRecoveryTime) {
  PushError(absl::UnavailableError("unreachable"), 1000);
  const absl::Time start = clock_.Now();
  auto s = RecoverableSession::Create(Stack(), {}, &clock_);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.status().message(), HasSubstr("max_recovery_time 10m"));
  EXPECT_THAT(s.status().message(), HasSubstr("unreachable"));
  // Backoff 0.1 s doubling to 10 s, the last sleep cut to end at the limit.
  EXPECT_EQ(clock_.Now() - start, absl::Minutes(10));
  const std::vector<absl::Duration> sleeps = clock_.sleeps();
  ASSERT_GT(sleeps.size(), 8u);
  EXPECT_EQ(sleeps[7], absl::Seconds(10));  // 0.1 * 2^7 = 12.8 s, capped.
}

TEST_F(RecoverableSessionTest, InvalidOptionsAreRejected) {
  RecoveryOptions options;
  options.max_backoff = absl::Milliseconds(10);  // Below initial_backoff.
  EXPECT_EQ(RecoverableSession::Create(Stack(), options, &clock_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RecoverableSession::Create(nullptr, {}, &clock_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(RecoverableSessionTest, ShouldStopRecreatesOnARecoverableStopError) {
  Push(5);
  Push(5);
  auto recoverable = Create();
  FakeLayer* first = last_;
  first->stop_error = absl::AbortedError("coordinator aborted");
  EXPECT_FALSE(*recoverable->ShouldStop());
  EXPECT_EQ(closes_, 1);  // The first layer was closed (and deleted).
  EXPECT_NE(last_, first);
  EXPECT_EQ(recoverable->recoveries(), 1);
  EXPECT_EQ(*RunV(*recoverable, 4), 4);
}

TEST_F(RecoverableSessionTest, ShouldStopIsTrueOnANonRecoverableStopError) {
  Push(5);
  auto recoverable = Create();
  last_->stop_error = absl::UnknownError("fatal");
  EXPECT_TRUE(*recoverable->ShouldStop());
  EXPECT_EQ(created_, 1);
}

TEST_F(RecoverableSessionTest, AFailedRecoveryInShouldStopComesOutOfRunAndClose) {
  Push(5);
  PushError(absl::InternalError("cannot create"));
  auto recoverable = Create();
  last_->stop_error = absl::UnavailableError("ps unreachable");
  EXPECT_TRUE(*recoverable->ShouldStop());
  EXPECT_EQ(RunV(*recoverable, 1).status().code(), absl::StatusCode::kInternal);
  absl::Status closed = recoverable->Close();
  EXPECT_EQ(closed.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(closed.message(), HasSubstr("cannot create"));
}

TEST_F(RecoverableSessionTest, CloseIgnoresRecoverableErrorsAndRunAfterCloseFails) {
  Push(5);
  auto recoverable = Create();
  last_->close_error = absl::UnavailableError("ps gone");
  EXPECT_TRUE(recoverable->Close().ok());
  EXPECT_TRUE(*recoverable->ShouldStop());
  EXPECT_TRUE(recoverable->Close().ok());
  EXPECT_EQ(RunV(*recoverable, 1).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(RecoverableSessionTest, RunStepRerunsTheWholeStep) {
  Push(1);  // The step's second run aborts.
  Push(5);
  auto recoverable = Create();
  int calls = 0;
  absl::Status s = recoverable->RunStep([&](WrappedSession& session) -> absl::Status {
    ++calls;
    if (!RunV(session, 1).ok()) return absl::AbortedError("second run aborted");
    return RunV(session, 2).status();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(recoverable->recoveries(), 1);
}

}  // namespace
}  // namespace overseer

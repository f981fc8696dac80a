// TensorFlow's coordinator_test.py scenarios as GoogleTest cases, plus the C++ parts
// (ManagedThread, lingering threads, the destructor, LooperThread on a FakeClock).
// Threads synchronise through absl::Notification; nothing sleeps to wait.

#include "client/training/coordinator.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "client/training/looper_thread.h"
#include "client/training/managed_thread.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A thread that waits for `go`, then requests a stop and notifies `stopped` (TF's
// StopOnEvent).
std::shared_ptr<ManagedThread> StopOnEvent(Coordinator* coord, absl::Notification* go,
                                           absl::Notification* stopped) {
  return ManagedThread::Start("StopOnEvent", [=] {
    go->WaitForNotification();
    coord->RequestStop().IgnoreError();
    stopped->Notify();
  });
}

// A thread that waits for `go`, then reports `error` and notifies `reported` if given
// (TF's RaiseOnEvent).
std::shared_ptr<ManagedThread> RaiseOnEvent(Coordinator* coord, absl::Notification* go,
                                            absl::Notification* reported, absl::Status error) {
  return ManagedThread::Start("RaiseOnEvent", [=] {
    go->WaitForNotification();
    coord->RequestStop(error).IgnoreError();
    if (reported != nullptr) reported->Notify();
  });
}

// As RaiseOnEvent, with the error returned from a StopOnException body (TF's
// RaiseOnEventUsingContextHandler).
std::shared_ptr<ManagedThread> RaiseOnEventUsingHandler(Coordinator* coord, absl::Notification* go,
                                                        absl::Notification* reported,
                                                        absl::Status error) {
  return ManagedThread::Start("RaiseOnEventUsingHandler", [=] {
    absl::Status returned = coord->StopOnException([&] {
      go->WaitForNotification();
      return error;
    });
    EXPECT_EQ(returned, error);
    if (reported != nullptr) reported->Notify();
  });
}

// A thread that runs until `release` (TF's SleepABit with a long sleep).
std::shared_ptr<ManagedThread> BlockUntil(const std::string& name, absl::Notification* release) {
  return ManagedThread::Start(name, [release] { release->WaitForNotification(); });
}

// Advances `clock` by `step` until `done` is notified: drives waits on a FakeClock
// whatever moment they started at.
void AdvanceUntil(test::FakeClock* clock, absl::Duration step, absl::Notification* done) {
  while (!done->WaitForNotificationWithTimeout(absl::Milliseconds(1))) clock->Advance(step);
}

TEST(CoordinatorTest, StopAPI) {
  Coordinator coord;
  EXPECT_FALSE(coord.ShouldStop());
  EXPECT_FALSE(coord.WaitForStop(absl::ZeroDuration()));
  EXPECT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.ShouldStop());
  EXPECT_TRUE(coord.WaitForStop(absl::ZeroDuration()));
  EXPECT_TRUE(coord.WaitForStop(absl::Seconds(10)));
}

TEST(CoordinatorTest, WaitForStopTimesOutOnTheInjectedClock) {
  test::FakeClock clock;
  const absl::Time start = clock.Now();
  CoordinatorOptions options;
  options.clock = &clock;
  Coordinator coord(options);
  bool stopped = true;
  absl::Notification done;
  auto waiter = ManagedThread::Start("waiter", [&] {
    stopped = coord.WaitForStop(absl::Seconds(30));
    done.Notify();
  });
  AdvanceUntil(&clock, absl::Seconds(1), &done);
  EXPECT_FALSE(stopped);
  EXPECT_GE(clock.Now() - start, absl::Seconds(30));
}

TEST(CoordinatorTest, StopAsync) {
  Coordinator coord;
  absl::Notification go, stopped;
  auto thread = StopOnEvent(&coord, &go, &stopped);
  EXPECT_FALSE(coord.ShouldStop());
  EXPECT_FALSE(coord.WaitForStop(absl::ZeroDuration()));
  go.Notify();
  EXPECT_TRUE(coord.WaitForStop());
  stopped.WaitForNotification();
  EXPECT_TRUE(coord.ShouldStop());
  EXPECT_TRUE(coord.Join({thread}).ok());
}

TEST(CoordinatorTest, Join) {
  Coordinator coord;
  absl::Notification release;
  std::vector<std::shared_ptr<ManagedThread>> threads = {
      BlockUntil("a", &release), BlockUntil("b", &release), BlockUntil("c", &release)};
  release.Notify();
  EXPECT_TRUE(coord.Join(threads).ok());
  for (const auto& t : threads) EXPECT_FALSE(t->IsAlive()) << t->name();
  EXPECT_TRUE(coord.joined());
  EXPECT_FALSE(coord.ShouldStop());  // All threads ended; nobody asked for a stop.
}

TEST(CoordinatorTest, JoinAllRegistered) {
  Coordinator coord;
  absl::Notification release;
  std::vector<std::shared_ptr<ManagedThread>> threads = {
      BlockUntil("a", &release), BlockUntil("b", &release), BlockUntil("c", &release)};
  for (const auto& t : threads) coord.RegisterThread(t);
  coord.RegisterThread(threads[0]);  // Twice is harmless.
  release.Notify();
  EXPECT_TRUE(coord.Join().ok());
  for (const auto& t : threads) EXPECT_FALSE(t->IsAlive()) << t->name();
}

TEST(CoordinatorTest, JoinSomeRegistered) {
  Coordinator coord;
  absl::Notification release;
  std::vector<std::shared_ptr<ManagedThread>> threads = {
      BlockUntil("a", &release), BlockUntil("b", &release), BlockUntil("c", &release)};
  coord.RegisterThread(threads[0]);
  coord.RegisterThread(threads[2]);
  release.Notify();
  // threads[1] is not registered: it must be passed in.
  EXPECT_TRUE(coord.Join({threads[1]}).ok());
  for (const auto& t : threads) EXPECT_FALSE(t->IsAlive()) << t->name();
}

TEST(CoordinatorTest, JoinTreatsThreadsNeverStartedAsFinished) {
  Coordinator coord;
  auto never = ManagedThread::Create("never started", [] {});
  coord.RegisterThread(never);
  EXPECT_TRUE(coord.Join().ok());
  EXPECT_FALSE(never->started());
}

TEST(CoordinatorTest, JoinGraceExpires) {
  for (absl::Duration grace : {absl::ZeroDuration(), absl::Nanoseconds(1)}) {
    absl::Notification release;
    {
      Coordinator coord;
      absl::Notification go, stopped;
      std::vector<std::shared_ptr<ManagedThread>> threads = {StopOnEvent(&coord, &go, &stopped),
                                                             BlockUntil("sleeper", &release)};
      go.Notify();
      stopped.WaitForNotification();
      // The stopper must have ended, not only notified, for the grace period of zero.
      threads[0]->WaitUntilFinished(Clock::Real(), absl::InfiniteFuture());
      absl::Status s = coord.Join(threads, grace);
      EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
      EXPECT_THAT(s.message(), HasSubstr("threads still running"));
      EXPECT_THAT(s.message(), HasSubstr("sleeper"));
      EXPECT_THAT(s.message(), Not(HasSubstr("StopOnEvent")));
      release.Notify();  // The destructor waits for the sleeper.
    }
  }
}

TEST(CoordinatorTest, JoinGraceExpiresOnTheInjectedClock) {
  test::FakeClock clock;
  CoordinatorOptions options;
  options.clock = &clock;
  absl::Notification release;  // Outlives coord, whose destructor waits for the sleeper.
  Coordinator coord(options);
  coord.RegisterThread(BlockUntil("sleeper", &release));
  ASSERT_TRUE(coord.RequestStop().ok());
  const absl::Time start = clock.Now();
  absl::Status joined;
  absl::Notification done;
  auto joiner = ManagedThread::Start("joiner", [&] {
    joined = coord.Join({}, absl::Seconds(60));
    done.Notify();
  });
  AdvanceUntil(&clock, absl::Seconds(5), &done);
  EXPECT_EQ(joined.code(), absl::StatusCode::kDeadlineExceeded) << joined;
  EXPECT_THAT(joined.message(), HasSubstr("sleeper"));
  EXPECT_GE(clock.Now() - start, absl::Seconds(60));
  release.Notify();
}

TEST(CoordinatorTest, JoinWithoutGraceExpires) {
  absl::Notification release;
  Coordinator coord;
  absl::Notification go, stopped;
  std::vector<std::shared_ptr<ManagedThread>> threads = {StopOnEvent(&coord, &go, &stopped),
                                                         BlockUntil("sleeper", &release)};
  go.Notify();
  stopped.WaitForNotification();
  EXPECT_TRUE(coord.Join(threads, absl::ZeroDuration(), /*ignore_live_threads=*/true).ok());
  release.Notify();
}

TEST(CoordinatorTest, JoinReturnsWhenThreadsEndWithinTheGracePeriod) {
  Coordinator coord;
  absl::Notification release;
  coord.RegisterThread(ManagedThread::Start("waits for stop", [&] {
    coord.WaitForStop();
    release.WaitForNotification();
  }));
  ASSERT_TRUE(coord.RequestStop().ok());
  release.Notify();
  EXPECT_TRUE(coord.Join({}, absl::InfiniteDuration()).ok());
}

// TF's testJoinRaiseReportExcInfo and testJoinRaiseReportException: in C++ an error
// is always a Status, so both are this test.
TEST(CoordinatorTest, JoinReturnsTheFirstReportedError) {
  Coordinator coord;
  absl::Notification ev1, ev2;
  std::vector<std::shared_ptr<ManagedThread>> threads = {
      RaiseOnEvent(&coord, &ev1, &ev2, absl::InternalError("First")),
      RaiseOnEvent(&coord, &ev2, nullptr, absl::InternalError("Too late"))};
  ev1.Notify();
  absl::Status s = coord.Join(threads);
  EXPECT_EQ(s, absl::InternalError("First"));
  EXPECT_EQ(coord.RequestedError(), absl::InternalError("First"));
}

TEST(CoordinatorTest, JoinIgnoresOutOfRange) {
  Coordinator coord;
  absl::Notification go;
  auto thread = RaiseOnEvent(&coord, &go, nullptr, absl::OutOfRangeError("First"));
  go.Notify();
  EXPECT_TRUE(coord.Join({thread}).ok());
  EXPECT_TRUE(coord.ShouldStop());
}

TEST(CoordinatorTest, JoinIgnoresMyErrorCode) {
  CoordinatorOptions options;
  options.clean_stop_codes = {absl::StatusCode::kInvalidArgument};
  Coordinator coord(options);
  absl::Notification go;
  auto thread = RaiseOnEvent(&coord, &go, nullptr, absl::InvalidArgumentError("Clean stop"));
  go.Notify();
  EXPECT_TRUE(coord.Join({thread}).ok());
  EXPECT_TRUE(coord.ShouldStop());

  // The configured codes replace the default: OUT_OF_RANGE is an error here.
  coord.ClearStop();
  EXPECT_TRUE(coord.RequestStop(absl::OutOfRangeError("end of input")).ok());
  EXPECT_EQ(coord.Join().code(), absl::StatusCode::kOutOfRange);
}

TEST(CoordinatorTest, JoinRaiseReportExceptionUsingHandler) {
  Coordinator coord;
  absl::Notification ev1, ev2;
  std::vector<std::shared_ptr<ManagedThread>> threads = {
      RaiseOnEventUsingHandler(&coord, &ev1, &ev2, absl::InternalError("First")),
      RaiseOnEventUsingHandler(&coord, &ev2, nullptr, absl::InternalError("Too late"))};
  ev1.Notify();
  EXPECT_EQ(coord.Join(threads), absl::InternalError("First"));
}

TEST(CoordinatorTest, StopOnExceptionDoesNotStopOnSuccess) {
  Coordinator coord;
  EXPECT_TRUE(coord.StopOnException([] { return absl::OkStatus(); }).ok());
  EXPECT_FALSE(coord.ShouldStop());
}

TEST(CoordinatorTest, StopOnErrorStopsOnlyOnErrorsAndReturnsTheStatus) {
  Coordinator coord;
  EXPECT_TRUE(coord.StopOnError(absl::OkStatus()).ok());
  EXPECT_FALSE(coord.ShouldStop());
  EXPECT_EQ(coord.StopOnError(absl::AbortedError("step")), absl::AbortedError("step"));
  EXPECT_TRUE(coord.ShouldStop());
  EXPECT_EQ(coord.Join(), absl::AbortedError("step"));
}

TEST(CoordinatorTest, ClearStopClearsExceptionToo) {
  Coordinator coord;
  absl::Notification ev1;
  auto first = RaiseOnEvent(&coord, &ev1, nullptr, absl::InternalError("First"));
  ev1.Notify();
  EXPECT_EQ(coord.Join({first}), absl::InternalError("First"));

  coord.ClearStop();
  EXPECT_FALSE(coord.ShouldStop());
  EXPECT_FALSE(coord.joined());
  EXPECT_TRUE(coord.RequestedError().ok());
  absl::Notification ev2;
  auto second = RaiseOnEvent(&coord, &ev2, nullptr, absl::InternalError("Second"));
  ev2.Notify();
  EXPECT_EQ(coord.Join({second}), absl::InternalError("Second"));
}

// TF's testRequestStopRaisesIfJoined and its _ExcInfo twin.
TEST(CoordinatorTest, RequestStopReturnsTheErrorIfJoined) {
  Coordinator coord;
  EXPECT_TRUE(coord.Join().ok());  // Join right away: there are no threads.
  EXPECT_EQ(coord.RequestStop(absl::InternalError("Too late")), absl::InternalError("Too late"));
  EXPECT_TRUE(coord.RequestStop(absl::OutOfRangeError("a clean stop")).ok());
  // If we ClearStop the errors are handled normally.
  coord.ClearStop();
  EXPECT_TRUE(coord.RequestStop(absl::InternalError("After clear")).ok());
  EXPECT_EQ(coord.Join(), absl::InternalError("After clear"));
}

TEST(CoordinatorTest, RequestStopAfterJoinWithoutErrorStops) {
  Coordinator coord;
  EXPECT_TRUE(coord.Join().ok());
  EXPECT_FALSE(coord.ShouldStop());
  EXPECT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.ShouldStop());
}

TEST(CoordinatorTest, TheFirstStopRequestWinsEvenWithoutAnError) {
  Coordinator coord;
  EXPECT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.RequestStop(absl::InternalError("after the stop")).ok());
  EXPECT_TRUE(coord.Join().ok());
}

TEST(CoordinatorTest, ThreadsRegisteredDuringJoinAreLeftForTheNextJoin) {
  absl::Notification release;  // Outlives coord, whose destructor waits for "late".
  Coordinator coord;
  EXPECT_TRUE(coord.Join().ok());
  auto late = BlockUntil("late", &release);
  coord.RegisterThread(late);
  ASSERT_TRUE(coord.RequestStop().ok());
  EXPECT_EQ(coord.Join({}, absl::ZeroDuration()).code(), absl::StatusCode::kDeadlineExceeded);
  release.Notify();
  EXPECT_TRUE(coord.Join().ok());  // The straggler ended: nothing left to report.
}

TEST(CoordinatorTest, DestructorWaitsForThreadsThatOutlivedTheGracePeriod) {
  auto coord = std::make_unique<Coordinator>();
  absl::Notification release;
  auto straggler = BlockUntil("straggler", &release);
  coord->RegisterThread(straggler);
  ASSERT_TRUE(coord->RequestStop().ok());
  ASSERT_EQ(coord->Join({}, absl::ZeroDuration()).code(), absl::StatusCode::kDeadlineExceeded);
  absl::Notification destroyed;
  auto destroyer = ManagedThread::Start("destroyer", [&] {
    coord.reset();
    destroyed.Notify();
  });
  EXPECT_FALSE(destroyed.HasBeenNotified());  // Cannot end before the straggler does.
  release.Notify();
  destroyed.WaitForNotification();
  EXPECT_TRUE(straggler->finished());
}

TEST(CoordinatorTest, DestructorRequestsAStopAndWaitsForRegisteredThreads) {
  auto coord = std::make_unique<Coordinator>();
  bool saw_stop = false;
  auto worker =
      ManagedThread::Start("worker", [&, c = coord.get()] { saw_stop = c->WaitForStop(); });
  coord->RegisterThread(worker);
  coord.reset();
  EXPECT_TRUE(worker->finished());
  EXPECT_TRUE(saw_stop);
}

TEST(ManagedThreadTest, ReportsItsLifecycle) {
  absl::Notification release;
  auto t = ManagedThread::Create("t", [&] { release.WaitForNotification(); });
  EXPECT_EQ(t->name(), "t");
  EXPECT_FALSE(t->started());
  EXPECT_FALSE(t->IsAlive());
  EXPECT_FALSE(t->WaitUntilFinished(Clock::Real(), absl::Now()));
  t->Start();
  t->Start();  // Once only.
  EXPECT_TRUE(t->IsAlive());
  EXPECT_FALSE(t->WaitUntilFinished(Clock::Real(), absl::Now()));
  release.Notify();
  EXPECT_TRUE(t->WaitUntilFinished(Clock::Real(), absl::InfiniteFuture()));
  EXPECT_TRUE(t->finished());
  EXPECT_FALSE(t->IsAlive());
  bool observed = false;
  t->AddFinishObserver([&] { observed = true; });  // Already finished: called now.
  EXPECT_TRUE(observed);
}

TEST(ManagedThreadTest, LastReferenceDroppedInsideTheBodyDetaches) {
  auto holder = std::make_shared<std::shared_ptr<ManagedThread>>();
  absl::Notification go, dropped;
  auto t = ManagedThread::Create("self-owned", [holder, &go, &dropped] {
    go.WaitForNotification();
    holder->reset();  // The last reference: ~ManagedThread runs on this thread.
    dropped.Notify();
  });
  *holder = t;
  t->Start();
  t.reset();
  go.Notify();
  dropped.WaitForNotification();
}

// ---- LooperThread (TF's LooperTest) ----

// TF's testTargetArgs / testTargetKwargs / testTargetMixedArgs: Python's ways of
// passing arguments are, in C++, a closure or std::bind; both are tested.
absl::Status StopAt0(Coordinator* coord, int* n) {
  if (*n == 0) {
    coord->RequestStop().IgnoreError();
  } else {
    --*n;
  }
  return absl::OkStatus();
}

TEST(LooperThreadTest, TargetClosure) {
  int n = 3;
  Coordinator coord;
  auto thread =
      LooperThread::Loop(&coord, absl::ZeroDuration(), [&] { return StopAt0(&coord, &n); });
  EXPECT_TRUE(coord.Join({thread}).ok());
  EXPECT_EQ(n, 0);
}

TEST(LooperThreadTest, TargetBoundArgs) {
  int n = 3;
  Coordinator coord;
  LooperThread::Loop(&coord, absl::ZeroDuration(), std::bind(StopAt0, &coord, &n));
  EXPECT_TRUE(coord.Join().ok());  // The looper registered itself.
  EXPECT_EQ(n, 0);
}

// Records the clock's time at each call; Wait(n) blocks until n calls were made.
class CallLog {
 public:
  explicit CallLog(Clock* clock) : clock_(clock) {}
  void Record() {
    absl::MutexLock lock(&mu_);
    times_.push_back(clock_->Now());
  }
  std::vector<absl::Time> Wait(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return times_.size() >= n; };
    mu_.Await(absl::Condition(&enough));
    return times_;
  }

 private:
  Clock* const clock_;
  absl::Mutex mu_;
  std::vector<absl::Time> times_ ABSL_GUARDED_BY(mu_);
};

// A clock on which every reading takes a second, so that code reading it twice sees
// it move in between. A wait with a deadline is recorded and ends at once, the clock
// moved on to the deadline; a wait without one blocks on its condition.
class TickingClock : public Clock {
 public:
  explicit TickingClock(absl::Time start) : now_(start) {}
  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    const absl::Time now = now_;
    now_ += absl::Seconds(1);
    return now;
  }
  void SleepFor(absl::Duration d) override {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) override {
    if (deadline == absl::InfiniteFuture()) {
      mu->Await(cond);
      return true;
    }
    {
      absl::MutexLock lock(&mu_);
      deadlines_.push_back(deadline);
      now_ = std::max(now_, deadline);
    }
    return cond.Eval();
  }
  std::vector<absl::Time> deadlines() {
    absl::MutexLock lock(&mu_);
    return deadlines_;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> deadlines_ ABSL_GUARDED_BY(mu_);
};

TEST(LooperThreadTest, WaitsUntilTheDueTimeHoweverTheClockMovesMeanwhile) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  TickingClock clock(t0);
  CoordinatorOptions options;
  options.clock = &clock;
  Coordinator coord(options);
  int calls = 0;
  std::shared_ptr<ManagedThread> looper = LooperThread::Loop(&coord, absl::Seconds(10), [&] {
    if (++calls == 3) {
      EXPECT_TRUE(coord.RequestStop().ok());
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(looper->WaitUntilFinished(Clock::Real(), absl::InfiniteFuture()));
  // Due at t0 (Loop read the clock once), then every 10 s from there: not 10 s from
  // wherever the clock stood when the looper turned its due time into a wait.
  EXPECT_THAT(clock.deadlines(),
              ::testing::ElementsAre(t0, t0 + absl::Seconds(10), t0 + absl::Seconds(20),
                                     t0 + absl::Seconds(30)));
}

TEST(LooperThreadTest, CallsOnIntervalBoundariesOfTheInjectedClock) {
  test::FakeClock clock;
  CoordinatorOptions options;
  options.clock = &clock;
  Coordinator coord(options);
  CallLog log(&clock);
  int calls = 0;
  LooperThread::Loop(&coord, absl::Seconds(10), [&] {
    log.Record();
    // The third call overruns the next two boundaries.
    if (++calls == 3) clock.Advance(absl::Seconds(25));
    return absl::OkStatus();
  });
  const absl::Time t0 = log.Wait(1)[0];
  clock.Advance(absl::Seconds(9));
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(log.Wait(2)[1], t0 + absl::Seconds(10));
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(log.Wait(3)[2], t0 + absl::Seconds(20));
  // Due at t0+30, but the overrun took the clock to t0+45: called at once, and the
  // missed boundary at t0+40 is not made up.
  EXPECT_EQ(log.Wait(4)[3], t0 + absl::Seconds(45));
  clock.Advance(absl::Seconds(9));
  clock.Advance(absl::Seconds(1));
  std::vector<absl::Time> times = log.Wait(5);
  EXPECT_EQ(times[4], t0 + absl::Seconds(55));
  ASSERT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join().ok());
  EXPECT_EQ(log.Wait(5).size(), 5u);
}

TEST(LooperThreadTest, InitialDelayAndStopBeforeTheFirstCall) {
  test::FakeClock clock;
  CoordinatorOptions options;
  options.clock = &clock;
  Coordinator coord(options);
  int calls = 0;
  LooperThreadOptions looper;
  looper.initial_delay = absl::Hours(1);
  looper.name = "delayed";
  auto thread = LooperThread::Loop(
      &coord, absl::Seconds(1),
      [&] {
        ++calls;
        return absl::OkStatus();
      },
      looper);
  EXPECT_EQ(thread->name(), "delayed");
  ASSERT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join().ok());
  EXPECT_EQ(calls, 0);
}

TEST(LooperThreadTest, FirstCallWaitsForTheInitialDelay) {
  test::FakeClock clock;
  CoordinatorOptions options;
  options.clock = &clock;
  Coordinator coord(options);
  CallLog log(&clock);
  const absl::Time start = clock.Now();
  LooperThreadOptions looper;
  looper.initial_delay = absl::Seconds(30);
  LooperThread::Loop(
      &coord, absl::Seconds(10),
      [&] {
        log.Record();
        return absl::OkStatus();
      },
      looper);
  absl::Notification called;
  auto watcher = ManagedThread::Start("watcher", [&] {
    log.Wait(1);
    called.Notify();
  });
  AdvanceUntil(&clock, absl::Seconds(1), &called);
  EXPECT_GE(log.Wait(1)[0] - start, absl::Seconds(30));
  ASSERT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join().ok());
}

TEST(LooperThreadTest, AnErrorIsReportedAndEndsTheLoop) {
  Coordinator coord;
  int calls = 0;
  auto thread = LooperThread::Loop(&coord, absl::ZeroDuration(), [&] {
    return ++calls == 2 ? absl::InternalError("looper failed") : absl::OkStatus();
  });
  EXPECT_EQ(coord.Join(), absl::InternalError("looper failed"));
  EXPECT_TRUE(thread->finished());
  EXPECT_EQ(calls, 2);
}

TEST(LooperThreadTest, CreateDoesNotStart) {
  Coordinator coord;
  auto thread = LooperThread::Create(&coord, absl::ZeroDuration(), [] { return absl::OkStatus(); });
  EXPECT_FALSE(thread->started());
  thread->Start();
  ASSERT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join().ok());
  EXPECT_TRUE(thread->finished());
}

}  // namespace
}  // namespace overseer

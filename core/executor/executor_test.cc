#include "core/executor/executor.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "core/executor/test_kernels.h"
#include "core/executor/thread_pool.h"
#include "core/graph/validate.h"
#include "core/node_def_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

// Bounds a step whose async kernels a test completes, so that a step left waiting (a
// test's failure: testing_kernels::CompleteAsync found nothing waiting) ends rather
// than hangs.
constexpr int64_t kAsyncStepTimeoutMs = 120000;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_kernels::TestLog;

class ExecutorTest : public ::testing::Test {
 protected:
  NodeDef* Add(const std::string& name, const std::string& op,
               const std::vector<std::string>& inputs = {}) {
    NodeDef* n = def_.add_node();
    n->set_name(name);
    n->set_op(op);
    for (const std::string& in : inputs) n->add_input(in);
    return n;
  }
  NodeDef* Const(const std::string& name, int value) {
    NodeDef* n = Add(name, "TestConstInt");
    SetNodeAttr(n, "value", static_cast<int64_t>(value));
    return n;
  }

  std::unique_ptr<Executor> Build(const std::vector<std::string>& feeds,
                                  const std::vector<std::string>& fetches,
                                  const std::vector<std::string>& targets,
                                  ThreadPool* pool = nullptr) {
    auto validated = ValidateAndIndexGraph(def_);
    EXPECT_TRUE(validated.ok()) << validated.status();
    if (!validated.ok()) return nullptr;
    auto pruned = PruneGraph(*validated->graph, feeds, fetches, targets);
    EXPECT_TRUE(pruned.ok()) << pruned.status();
    if (!pruned.ok()) return nullptr;
    auto executor =
        Executor::Create(std::move(*pruned), &kernels_, pool != nullptr ? pool : &pool_);
    EXPECT_TRUE(executor.ok()) << executor.status();
    return executor.ok() ? std::move(*executor) : nullptr;
  }

  absl::Status Run(Executor* e, std::vector<Tensor>* out, int64_t timeout_ms = 0,
                   const std::vector<const Tensor*>& feeds = {}, StepStats* stats = nullptr) {
    ExecutorRunArgs args;
    args.resource_mgr = &resources_;
    args.clock = clock_;
    args.timer = &timer_;
    args.feeds = feeds;
    args.timeout_ms = timeout_ms;
    args.stats = stats;
    return e->Run(args, out);
  }

  // A RunAsync: what its `done` got, and the thread it ran on.
  struct AsyncRun {
    ExecutorRunArgs args;
    std::vector<Tensor> out;
    absl::Notification done;
    absl::Status status;
    std::string thread;

    // False if `done` did not run within a minute (a test's failure, not a timing).
    bool Wait() { return done.WaitForNotificationWithTimeout(absl::Seconds(60)); }
  };
  void StartAsync(Executor* e, AsyncRun* run, int64_t timeout_ms = kAsyncStepTimeoutMs,
                  CancellationManager* caller = nullptr) {
    run->args.resource_mgr = &resources_;
    run->args.clock = clock_;
    run->args.timer = &timer_;
    run->args.timeout_ms = timeout_ms;
    run->args.cancellation = caller;
    e->RunAsync(run->args, &run->out, [run](absl::Status status) {
      run->status = std::move(status);
      run->thread = testing_kernels::ThreadName();
      run->done.Notify();
    });
  }

  static int Int(const Tensor& t) { return t.scalar<int32_t>(); }

  GraphDef def_;
  ThreadPool pool_{DefaultMinThreads()};  // Build's default.
  KernelCache kernels_;
  ResourceMgr resources_;
  Clock* const clock_ = Clock::Real();
  StepTimer timer_{Clock::Real()};
};

TEST_F(ExecutorTest, ComputesAChainAndFetchesInOrder) {
  Const("c", 1);
  Add("a1", "TestAddOne", {"c"});
  Add("a2", "TestAddOne", {"a1"});
  auto e = Build({}, {"a2", "c:0", "a2"}, {});
  std::vector<Tensor> out;
  ASSERT_TRUE(Run(e.get(), &out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(Int(out[0]), 3);
  EXPECT_EQ(Int(out[1]), 1);
  EXPECT_EQ(Int(out[2]), 3);
  // A second step reuses the cached state.
  ASSERT_TRUE(Run(e.get(), &out).ok());
  EXPECT_EQ(Int(out[0]), 3);
}

TEST_F(ExecutorTest, FeedsReplaceComputation) {
  Const("c", 1);
  Add("a1", "TestAddOne", {"c"});
  Add("a2", "TestAddOne", {"a1"});
  auto e = Build({"a1:0"}, {"a2"}, {});
  Tensor fed = Tensor::Scalar<int32_t>(10);
  std::vector<Tensor> out;
  ASSERT_TRUE(Run(e.get(), &out, 0, {&fed}).ok());
  EXPECT_EQ(Int(out[0]), 11);
  EXPECT_FALSE(Run(e.get(), &out, 0, {}).ok());  // The feed's value is missing.
}

TEST_F(ExecutorTest, ControlDependenciesOrderNodes) {
  for (const char* n : {"third", "first", "second"})
    SetNodeAttr(Add(n, "TestRecord"), "log", "order");
  def_.mutable_node(0)->add_input("^second");
  def_.mutable_node(2)->add_input("^first");
  auto e = Build({}, {}, {"third"});
  std::vector<Tensor> out;
  ASSERT_TRUE(Run(e.get(), &out).ok());
  EXPECT_THAT(TestLog("order"), ElementsAre("first", "second", "third"));
}

TEST_F(ExecutorTest, RunsIndependentNodesInParallel) {
  NodeDef* a = Add("left", "TestRendezvous");
  SetNodeAttr(a, "key", "par/left");
  SetNodeAttr(a, "peer", "par/right");
  NodeDef* b = Add("right", "TestRendezvous");
  SetNodeAttr(b, "key", "par/right");
  SetNodeAttr(b, "peer", "par/left");
  auto e = Build({}, {"left", "right"}, {});
  std::vector<Tensor> out;
  // The timeout only turns a deadlock into a failure.
  absl::Status s = Run(e.get(), &out, 60000);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Int(out[0]) + Int(out[1]), 2);
}

TEST_F(ExecutorTest, MakesProgressWhenThePoolIsBlocked) {
  absl::Notification release;  // Outlives the pool, which joins the thread waiting on it.
  ThreadPool pool(1, 64);
  pool.Schedule([&] { release.WaitForNotification(); });  // Occupies the only thread.
  NodeDef* a = Add("left", "TestRendezvous");
  SetNodeAttr(a, "key", "busy/left");
  SetNodeAttr(a, "peer", "busy/right");
  NodeDef* b = Add("right", "TestRendezvous");
  SetNodeAttr(b, "key", "busy/right");
  SetNodeAttr(b, "peer", "busy/left");
  auto e = Build({}, {"left", "right"}, {}, &pool);
  std::vector<Tensor> out;
  absl::Status s = Run(e.get(), &out, 60000);
  EXPECT_TRUE(s.ok()) << s;
  release.Notify();
}

TEST_F(ExecutorTest, CheapNodesRunOnTheThreadThatMadeThemReady) {
  ThreadPool pool(1, 64);
  std::vector<std::string> fetches;
  for (int i = 0; i < 8; ++i) {
    const std::string name = "cheap" + std::to_string(i);
    SetNodeAttr(Add(name, "TestCheapThread"), "log", "cheap_roots");
    fetches.push_back(name);
  }
  auto e = Build({}, fetches, {}, &pool);
  std::vector<Tensor> out;
  ASSERT_TRUE(Run(e.get(), &out).ok());
  const std::vector<std::string> threads = testing_kernels::TestLog("cheap_roots");
  ASSERT_EQ(threads.size(), 8u);
  for (const std::string& thread : threads) EXPECT_EQ(thread, testing_kernels::ThreadName());
  EXPECT_EQ(pool.NumThreads(), 0);  // Nothing was handed to the pool.
}

// An async kernel (a _Recv from another task) holds no thread while it waits: the
// thread that completes it runs the cheap nodes it makes ready and hands the rest to
// the pool.
TEST_F(ExecutorTest, AnAsyncKernelHoldsNoThreadWhileItWaits) {
  ThreadPool pool(1, 64);
  Const("c", 1);
  SetNodeAttr(Add("a", "TestAsyncAddOne", {"c"}), "log", "async_wait");
  Add("b", "TestAddOne", {"a"});
  SetNodeAttr(Add("cheap", "TestCheapThread", {"^a"}), "log", "async_wait_cheap");
  SetNodeAttr(Add("costly", "TestExpensiveThread", {"^a"}), "log", "async_wait_costly");
  auto e = Build({}, {"b", "cheap", "costly"}, {}, &pool);
  std::vector<Tensor> out;
  absl::Status s;
  std::string step_thread;
  std::thread step([&] {
    step_thread = testing_kernels::ThreadName();
    s = Run(e.get(), &out, kAsyncStepTimeoutMs);
  });
  const bool completed = testing_kernels::CompleteAsync("async_wait");  // Once `a` waits.
  step.join();
  ASSERT_TRUE(completed) << "`a` never started";
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Int(out[0]), 3);
  // The cheap node ran where `a` ended: here, or on the step's thread if `a` ended
  // before its ComputeAsync returned there. The costly one never runs here.
  ASSERT_EQ(TestLog("async_wait_cheap").size(), 1u);
  EXPECT_THAT(TestLog("async_wait_cheap")[0],
              ::testing::AnyOf(testing_kernels::ThreadName(), step_thread));
  ASSERT_EQ(TestLog("async_wait_costly").size(), 1u);
  EXPECT_NE(TestLog("async_wait_costly")[0], testing_kernels::ThreadName());
}

// Async kernels start on the thread that made them ready, however many, and none holds
// it: with no pool thread free, two async nodes wait at once (else the second would
// start only once the pool's thread is released).
TEST_F(ExecutorTest, AsyncKernelsStartOnTheThreadThatMadeThemReady) {
  absl::Notification release;  // Outlives the pool, which joins the thread waiting on it.
  ThreadPool pool(1, 1);
  pool.Schedule([&] { release.WaitForNotification(); });  // Occupies the only thread.
  Const("c", 1);
  SetNodeAttr(Add("a1", "TestAsyncAddOne", {"c"}), "log", "async_both");
  SetNodeAttr(Add("a2", "TestAsyncAddOne", {"c"}), "log", "async_both");
  Add("sum", "TestAddOne", {"a1", "^a2"});
  auto e = Build({}, {"sum"}, {}, &pool);
  std::vector<Tensor> out;
  absl::Status s;
  std::thread step([&] { s = Run(e.get(), &out, kAsyncStepTimeoutMs); });
  EXPECT_TRUE(testing_kernels::CompleteAsync("async_both"));
  const bool both_waited = testing_kernels::CompleteAsync("async_both");
  release.Notify();
  if (!both_waited) {  // Let the step end, to fail cleanly.
    EXPECT_TRUE(testing_kernels::CompleteAsync("async_both"));
  }
  step.join();
  EXPECT_TRUE(both_waited) << "the second async node waited for the pool's thread";
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Int(out[0]), 3);
}

TEST_F(ExecutorTest, AnAsyncKernelThatEndsAtOnceGoesOnOnItsThread) {
  ThreadPool pool(1, 64);
  Const("c", 1);
  SetNodeAttr(Add("a", "TestAsyncAddOne", {"c"}), "log", "inline");
  Add("b", "TestAddOne", {"a"});
  SetNodeAttr(Add("cheap", "TestCheapThread", {"^b"}), "log", "async_inline_cheap");
  auto e = Build({}, {"b", "cheap"}, {}, &pool);
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> out;
    ASSERT_TRUE(Run(e.get(), &out).ok());
    EXPECT_EQ(Int(out[0]), 3);
  }
  EXPECT_THAT(TestLog("async_inline_cheap"),
              ElementsAre(testing_kernels::ThreadName(), testing_kernels::ThreadName(),
                          testing_kernels::ThreadName()));
  EXPECT_EQ(pool.NumThreads(), 0);
}

TEST_F(ExecutorTest, AnAsyncKernelsErrorFailsTheStepAndStopsDownstreamNodes) {
  Const("c", 1);
  SetNodeAttr(Add("recv", "TestAsyncAddOne", {"c"}), "log", "async_error");
  SetNodeAttr(Add("after", "TestRecord", {"^recv"}), "log", "after_async_error");
  auto e = Build({}, {}, {"after"});
  absl::Status s;
  std::thread step([&] { s = Run(e.get(), nullptr, kAsyncStepTimeoutMs); });
  const bool completed =
      testing_kernels::CompleteAsync("async_error", absl::UnavailableError("the peer went away"));
  step.join();
  ASSERT_TRUE(completed) << "`recv` never started";
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "node 'recv' (op 'TestAsyncAddOne'): the peer went away");
  EXPECT_TRUE(TestLog("after_async_error").empty());
}

TEST_F(ExecutorTest, TheTimeoutEndsAWaitingAsyncKernel) {
  Const("c", 1);
  SetNodeAttr(Add("a", "TestAsyncAddOne", {"c"}), "log", "async_timeout");
  auto e = Build({}, {"a"}, {});
  std::vector<Tensor> out;
  absl::Status s = Run(e.get(), &out, 50);  // Nothing completes `a` but its step.
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.message(), "step exceeded timeout of 50 ms");
}

TEST_F(ExecutorTest, RunAsyncEndsAStepOfInlineNodesBeforeItReturns) {
  SetNodeAttr(Add("src", "TestCheapThread"), "log", "run_async_inline");
  SetNodeAttr(Add("next", "TestCheapThread", {"^src"}), "log", "run_async_inline");
  auto e = Build({}, {"next"}, {});
  for (int step = 0; step < 3; ++step) {
    AsyncRun run;
    StartAsync(e.get(), &run);
    ASSERT_TRUE(run.done.HasBeenNotified());
    ASSERT_TRUE(run.status.ok()) << run.status;
    EXPECT_EQ(run.out.size(), 1u);
    EXPECT_EQ(run.thread, testing_kernels::ThreadName());
  }
  EXPECT_THAT(TestLog("run_async_inline"),
              ::testing::Each(::testing::Eq(testing_kernels::ThreadName())));
}

// RunAsync's thread does not wait for the async kernel: the thread that completes it
// ends the step (the node after it runs inline).
TEST_F(ExecutorTest, RunAsyncReturnsWhileAnAsyncKernelWaits) {
  SetNodeAttr(Add("src", "TestCheapThread"), "log", "run_async_wait_src");
  SetNodeAttr(Add("a", "TestAsyncAddOne", {"src"}), "log", "run_async_wait");
  SetNodeAttr(Add("b", "TestCheapThread", {"^a"}), "log", "run_async_wait_b");
  auto e = Build({}, {"a", "b"}, {});
  AsyncRun run;
  StartAsync(e.get(), &run);
  EXPECT_FALSE(run.done.HasBeenNotified());
  std::string completer;
  std::thread complete([&] {
    completer = testing_kernels::ThreadName();
    EXPECT_TRUE(testing_kernels::CompleteAsync("run_async_wait"));
  });
  ASSERT_TRUE(run.Wait());
  complete.join();
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(Int(run.out[0]), 1);  // TestCheapThread gives 0.
  EXPECT_THAT(TestLog("run_async_wait_src"), ElementsAre(testing_kernels::ThreadName()));
  EXPECT_THAT(TestLog("run_async_wait_b"), ElementsAre(completer));
  EXPECT_EQ(run.thread, completer);
}

TEST_F(ExecutorTest, RunAsyncRunsOnlyInlineNodesOnItsThread) {
  Const("c", 1);
  SetNodeAttr(Add("costly", "TestExpensiveThread", {"^c"}), "log", "run_async_costly");
  Add("after", "TestAddOne", {"costly"});
  auto e = Build({}, {"after"}, {});
  AsyncRun run;
  StartAsync(e.get(), &run);
  ASSERT_TRUE(run.Wait());
  ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(TestLog("run_async_costly").size(), 1u);
  EXPECT_NE(TestLog("run_async_costly")[0], testing_kernels::ThreadName());
  // The node after it ran where it did, and the step ended there.
  EXPECT_EQ(run.thread, TestLog("run_async_costly")[0]);
}

// A kernel whose cost follows its elements runs where it became ready when it touches
// few of them, and on the pool otherwise.
TEST_F(ExecutorTest, AKernelThatTouchesFewElementsRunsInline) {
  SetNodeAttr(Add("src", "TestCheapThread"), "log", "elements_src");
  NodeDef* small = Add("small", "TestElementsThread", {"src"});
  SetNodeAttr(small, "log", "elements_small");
  SetNodeAttr(small, "elements", Executor::kInlineElements);
  NodeDef* big = Add("big", "TestElementsThread", {"src"});
  SetNodeAttr(big, "log", "elements_big");
  SetNodeAttr(big, "elements", Executor::kInlineElements + 1);
  auto e = Build({}, {"small", "big"}, {});
  AsyncRun run;  // Its thread runs only the nodes that run inline.
  StartAsync(e.get(), &run);
  ASSERT_TRUE(run.Wait());
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_THAT(TestLog("elements_small"), ElementsAre(testing_kernels::ThreadName()));
  ASSERT_EQ(TestLog("elements_big").size(), 1u);
  EXPECT_NE(TestLog("elements_big")[0], testing_kernels::ThreadName());
}

// The thread that fails a step may be running the step's cancellation callbacks, which
// ending the step waits for: a failed step ends on a pool thread.
TEST_F(ExecutorTest, ARunAsyncThatFailsEndsOnAPoolThread) {
  SetNodeAttr(Add("src", "TestCheapThread"), "log", "run_async_error_src");
  SetNodeAttr(Add("recv", "TestAsyncAddOne", {"src"}), "log", "run_async_error");
  SetNodeAttr(Add("after", "TestRecord", {"^recv"}), "log", "after_run_async_error");
  auto e = Build({}, {}, {"after"});
  AsyncRun run;
  StartAsync(e.get(), &run);
  ASSERT_TRUE(testing_kernels::CompleteAsync("run_async_error",
                                             absl::UnavailableError("the peer went away")));
  ASSERT_TRUE(run.Wait());
  EXPECT_EQ(run.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(run.status.message(), "node 'recv' (op 'TestAsyncAddOne'): the peer went away");
  EXPECT_NE(run.thread, testing_kernels::ThreadName());
  EXPECT_TRUE(TestLog("after_run_async_error").empty());
}

TEST_F(ExecutorTest, TheTimeoutEndsARunAsync) {
  Const("c", 1);
  SetNodeAttr(Add("a", "TestAsyncAddOne", {"c"}), "log", "run_async_timeout");
  auto e = Build({}, {"a"}, {});
  AsyncRun run;
  StartAsync(e.get(), &run, 50);  // Nothing completes `a` but its step.
  ASSERT_TRUE(run.Wait());
  EXPECT_EQ(run.status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(run.status.message(), "step exceeded timeout of 50 ms");
}

TEST_F(ExecutorTest, TheCallersCancellationEndsARunAsync) {
  Const("c", 1);
  SetNodeAttr(Add("a", "TestAsyncAddOne", {"c"}), "log", "run_async_cancelled");
  auto e = Build({}, {"a"}, {});
  CancellationManager caller;
  AsyncRun run;
  StartAsync(e.get(), &run, kAsyncStepTimeoutMs, &caller);
  caller.StartCancel(absl::CancelledError("step 4 was cleaned up"));
  ASSERT_TRUE(run.Wait());
  EXPECT_EQ(run.status, absl::CancelledError("step 4 was cleaned up"));
  // Already cancelled: done at once, and no node runs.
  AsyncRun again;
  StartAsync(e.get(), &again, kAsyncStepTimeoutMs, &caller);
  ASSERT_TRUE(again.done.HasBeenNotified());
  EXPECT_EQ(again.status, absl::CancelledError("step 4 was cleaned up"));
}

TEST_F(ExecutorTest, ErrorsNameTheNodeAndOpAndStopDownstreamNodes) {
  SetNodeAttr(Add("loss", "TestFail"), "message", "logits and labels differ");
  SetNodeAttr(Add("after", "TestRecord", {"^loss"}), "log", "after_error");
  auto e = Build({}, {}, {"after"});
  std::vector<Tensor> out;
  absl::Status s = Run(e.get(), &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "node 'loss' (op 'TestFail'): logits and labels differ");
  EXPECT_TRUE(TestLog("after_error").empty());
}

TEST_F(ExecutorTest, FirstErrorCancelsBlockedNodes) {
  Add("blocked", "TestBlockUntilCancelled");
  SetNodeAttr(Add("bad", "TestFail"), "message", "boom");
  auto e = Build({}, {"blocked", "bad"}, {});
  std::vector<Tensor> out;
  absl::Status s = Run(e.get(), &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("node 'bad' (op 'TestFail'): boom"));
}

TEST_F(ExecutorTest, TimeoutCancelsTheStep) {
  Add("blocked", "TestBlockUntilCancelled");
  Const("c", 1);
  auto e = Build({}, {"blocked", "c"}, {});
  std::vector<Tensor> out;
  absl::Status s = Run(e.get(), &out, 50);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.message(), "step exceeded timeout of 50 ms");
  // The executor is usable again afterwards.
  auto e2 = Build({}, {"c"}, {});
  ASSERT_TRUE(Run(e2.get(), &out, 50).ok());
}

TEST_F(ExecutorTest, TheTimeoutRunsOnTheInjectedClock) {
  // The clock jumps to the timer's deadline at once: an hour-long timeout fires now.
  test::FakeClock clock(test::FakeClock::Mode::kAutoAdvance);
  StepTimer timer(&clock);
  Add("blocked", "TestBlockUntilCancelled");
  auto e = Build({}, {"blocked"}, {});
  std::vector<Tensor> out;
  const absl::Time start = clock.Now();
  absl::Status s;
  {
    ExecutorRunArgs args;
    args.resource_mgr = &resources_;
    args.clock = &clock;
    args.timer = &timer;
    args.timeout_ms = 3600 * 1000;
    s = e->Run(args, &out);
  }
  EXPECT_EQ(s, absl::DeadlineExceededError("step exceeded timeout of 3600000 ms"));
  EXPECT_GE(clock.Now() - start, absl::Hours(1));
}

TEST_F(ExecutorTest, ATimeoutNeedsAClockAndATimer) {
  Const("c", 1);
  auto e = Build({}, {"c"}, {});
  std::vector<Tensor> out;
  ExecutorRunArgs args;
  args.resource_mgr = &resources_;
  EXPECT_EQ(e->Run(args, &out).code(), absl::StatusCode::kInvalidArgument);  // No clock.
  args.clock = Clock::Real();
  args.timeout_ms = 50;
  EXPECT_EQ(e->Run(args, &out).code(), absl::StatusCode::kInvalidArgument);  // No timer.
  args.timeout_ms = 0;
  EXPECT_TRUE(e->Run(args, &out).ok());
}

TEST_F(ExecutorTest, TheCallersCancellationEndsTheStepWithItsReason) {
  Add("blocked", "TestBlockUntilCancelled");
  Const("c", 1);
  auto e = Build({}, {"blocked"}, {});
  ExecutorRunArgs args;
  args.resource_mgr = &resources_;
  args.clock = clock_;
  CancellationManager caller;
  args.cancellation = &caller;
  std::vector<Tensor> out;
  absl::Status s;
  std::thread run([&] { s = e->Run(args, &out); });
  absl::SleepFor(absl::Milliseconds(20));  // Usually blocked by now; either way it ends.
  caller.StartCancel(absl::CancelledError("step 4 was cleaned up"));
  run.join();
  EXPECT_EQ(s, absl::CancelledError("step 4 was cleaned up"));
  // Already cancelled: no node runs.
  s = e->Run(args, &out);
  EXPECT_EQ(s, absl::CancelledError("step 4 was cleaned up"));
  // The executor is usable again with another caller.
  CancellationManager fresh;
  args.cancellation = &fresh;
  auto e2 = Build({}, {"c"}, {});
  ASSERT_TRUE(e2->Run(args, &out).ok());
  EXPECT_EQ(Int(out[0]), 1);
}

TEST_F(ExecutorTest, PassesReferencesAndFetchesTheirValues) {
  Add("v", "TestVar");
  Const("c", 7);
  Add("assign", "TestAssign", {"v", "c"});
  Add("read", "TestAddOne", {"v", "^assign"});
  auto read_before = Build({}, {"v"}, {});
  std::vector<Tensor> out;
  absl::Status s = Run(read_before.get(), &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("uninitialized value v"));

  auto e = Build({}, {"read", "assign"}, {});
  ASSERT_TRUE(Run(e.get(), &out).ok());
  EXPECT_EQ(Int(out[0]), 8);
  EXPECT_EQ(Int(out[1]), 7);
  ASSERT_TRUE(Run(read_before.get(), &out).ok());
  EXPECT_EQ(Int(out[0]), 7);
}

TEST_F(ExecutorTest, SharesKernelsAcrossExecutors) {
  Add("counter", "TestCounter");
  auto e1 = Build({}, {"counter"}, {});
  auto e2 = Build({}, {"counter", "counter"}, {});
  std::vector<Tensor> out;
  ASSERT_TRUE(Run(e1.get(), &out).ok());
  EXPECT_EQ(Int(out[0]), 0);
  ASSERT_TRUE(Run(e2.get(), &out).ok());
  EXPECT_EQ(Int(out[0]), 1);
  EXPECT_EQ(Int(out[1]), 1);
  ASSERT_TRUE(Run(e1.get(), &out).ok());
  EXPECT_EQ(Int(out[0]), 2);
}

TEST_F(ExecutorTest, ConcurrentStepsOnOneExecutor) {
  Const("c", 0);
  std::string prev = "c";
  for (int i = 0; i < 10; ++i) {
    std::string name = "add" + std::to_string(i);
    Add(name, "TestAddOne", {prev});
    prev = name;
  }
  Add("side1", "TestAddOne", {"c"});
  Add("side2", "TestAddOne", {"c"});
  auto e = Build({}, {prev, "side1", "side2"}, {});
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        std::vector<Tensor> out;
        if (!Run(e.get(), &out).ok() || Int(out[0]) != 10 || Int(out[1]) != 1 || Int(out[2]) != 1) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ExecutorTest, RecordsStepStats) {
  Const("c", 1);
  Add("a1", "TestAddOne", {"c"});
  auto e = Build({}, {"a1"}, {});
  std::vector<Tensor> out;
  StepStats stats;
  ASSERT_TRUE(Run(e.get(), &out, 0, {}, &stats).ok());
  ASSERT_EQ(stats.dev_stats_size(), 1);
  std::vector<std::string> names;
  for (const auto& ns : stats.dev_stats(0).node_stats()) names.push_back(ns.node_name());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("c", "a1"));
}

TEST(ThreadPoolTest, GrowsWhenEveryThreadIsBlocked) {
  // The notifications outlive the pool: its destructor joins the thread still
  // returning from release.WaitForNotification().
  absl::Notification first_running, release, second_ran;
  ThreadPool pool(1, 8);
  pool.Schedule([&] {
    first_running.Notify();
    release.WaitForNotification();
  });
  first_running.WaitForNotification();
  pool.Schedule([&] { second_ran.Notify(); });
  second_ran.WaitForNotification();  // Would hang if the pool did not grow.
  release.Notify();
  EXPECT_GE(pool.NumThreads(), 2);
}

}  // namespace
}  // namespace overseer

#include "master/step_runner.h"

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "master/testing/fake_workers.h"

namespace overseer {
namespace {

constexpr char kA[] = "/job:ps/replica:0/task:0";
constexpr char kB[] = "/job:worker/replica:0/task:0";

// The fake tasks, with the step's session.
class TwoTasks : public test::FakeCache {
 public:
  TwoTasks() {
    a()->sessions.insert("s");
    b()->sessions.insert("s");
  }
  test::FakeWorker* a() { return ps(); }
  test::FakeWorker* b() { return worker(); }
};

// A step with a partition on each task, fetching "ka" from a and "kb" from b.
RegisteredStep TwoPartitionStep() {
  RegisteredStep step;
  step.graph_handles = {{kA, "ga"}, {kB, "gb"}};
  step.fetches = {{kA, "ka"}, {kB, "kb"}};
  return step;
}

StepArgs Args(int64_t step_id) {
  StepArgs args;
  args.session_handle = "s";
  args.step_id = step_id;
  return args;
}

// Runs TwoPartitionStep as step `step_id` on `tasks` (with a StepCleaner, no
// cancellation) and returns its status once it is done.
absl::Status RunAndWait(TwoTasks* tasks, int64_t step_id) {
  const RegisteredStep step = TwoPartitionStep();
  std::vector<TensorProto> fetches;
  StepCleaner cleaner(tasks);
  absl::Notification finished;
  absl::Status status;
  RunRegisteredStepAsync(tasks, step, Args(step_id), &fetches, nullptr, &cleaner, nullptr,
                         [&](absl::Status s) {
                           status = std::move(s);
                           finished.Notify();
                         });
  finished.WaitForNotification();
  return status;
}

TEST(StepRunnerTest, TheFirstFailureCancelsTheTasksThatWait) {
  TwoTasks tasks;
  tasks.a()->run_error = absl::InvalidArgumentError("bad feed");
  tasks.b()->run_waits_for_cleanup = true;
  const absl::Status status = RunAndWait(&tasks, 7);
  // a's error, not b's CANCELLED that the cancellation caused.
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), std::string("task ") + kA)) << status;
  absl::MutexLock l(&tasks.b()->mu);
  EXPECT_EQ(tasks.b()->cleaned.count(7), 1u);
}

// A failed step is cleaned up on every task at once: a task that does not answer (here
// a's CleanupGraph, which waits for b's) holds the others' cleanup up no longer than its
// own call. One after another, a's call would wait out its 10 s first.
TEST(StepRunnerTest, AFailedStepIsCleanedUpOnEveryTaskAtOnce) {
  TwoTasks tasks;
  tasks.a()->run_error = absl::InvalidArgumentError("bad feed");
  tasks.b()->run_waits_for_cleanup = true;
  absl::Notification b_cleaned;
  tasks.a()->cleanup_waits_for = &b_cleaned;
  tasks.b()->on_cleanup = &b_cleaned;
  const absl::Status status = RunAndWait(&tasks, 8);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  for (test::FakeWorker* w : {tasks.a(), tasks.b()}) {
    absl::MutexLock l(&w->mu);
    EXPECT_EQ(w->cleaned.count(8), 1u);
    EXPECT_FALSE(w->cleanup_gave_up);
  }
}

// The threads of this process, from /proc/self/status.
int ProcessThreads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "Threads:")) return std::stoi(line.substr(8));
  }
  return -1;
}

// A master keeps a cleaner per session: a thousand of them, each with steps cleaned up,
// hold no thread once their queues are sent (a thread each, before).
TEST(StepRunnerTest, CleanersHoldNoThreadOfTheirOwn) {
  TwoTasks tasks;
  const int before = ProcessThreads();
  ASSERT_GT(before, 0);
  std::vector<std::unique_ptr<StepCleaner>> cleaners;
  for (int i = 0; i < 1000; ++i) cleaners.push_back(std::make_unique<StepCleaner>(&tasks));
  EXPECT_EQ(ProcessThreads(), before);
  for (int i = 0; i < 1000; ++i) cleaners[i]->Enqueue({kA, kB}, 1000 + i);
  cleaners.clear();  // Each destructor waits until its queue is sent.
  for (test::FakeWorker* w : {tasks.a(), tasks.b()}) {
    absl::MutexLock l(&w->mu);
    EXPECT_EQ(w->cleaned.size(), 1000u);
  }
  // The sending ran on the cleaners' pool, which keeps the threads it grew for a while.
  EXPECT_LE(ProcessThreads(), before + kMaxStepCleanerThreads);
}

// Enqueue waits while max_pending steps are queued for CleanupGraph; the destructor
// sends them all.
TEST(StepRunnerTest, ACleanerWithAShortQueueSendsEverything) {
  TwoTasks tasks;
  {
    StepCleaner cleaner(&tasks, /*max_waiting=*/1, /*max_pending=*/2);
    for (int64_t step = 1; step <= 50; ++step) cleaner.Enqueue({kA}, step);
  }
  absl::MutexLock l(&tasks.a()->mu);
  EXPECT_EQ(tasks.a()->cleaned.size(), 50u);
}

// Runs TwoPartitionStep, with a sending to b, as step `step_id` through `cleaner`.
absl::Status RunWithCleaner(TwoTasks* tasks, StepCleaner* cleaner, int64_t step_id) {
  RegisteredStep step = TwoPartitionStep();
  step.peer_senders = {kA};
  std::vector<TensorProto> fetches;
  return RunRegisteredStep(tasks, step, Args(step_id), &fetches, nullptr, cleaner);
}

// A step loop sends no CleanupGraph: each step's cleanup rides in the next RunGraph to
// the task that kept its state; the last one goes when the cleaner is destroyed.
TEST(StepRunnerTest, SuccessfulStepsAreCleanedUpByTheNextRunGraph) {
  TwoTasks tasks;
  {
    StepCleaner cleaner(&tasks);
    for (int64_t step = 1; step <= 5; ++step)
      ASSERT_TRUE(RunWithCleaner(&tasks, &cleaner, step).ok());
    absl::MutexLock l(&tasks.a()->mu);
    EXPECT_EQ(tasks.a()->cleanups, 0);
    EXPECT_EQ(tasks.a()->carried, (std::set<int64_t>{1, 2, 3, 4}));
  }
  {
    absl::MutexLock l(&tasks.a()->mu);
    EXPECT_EQ(tasks.a()->cleaned, std::set<int64_t>{5});
    EXPECT_EQ(tasks.a()->cleanups, 1);
  }
  absl::MutexLock l(&tasks.b()->mu);
  EXPECT_TRUE(tasks.b()->cleaned.empty()) << "b sent nothing to a peer";
  EXPECT_TRUE(tasks.b()->carried.empty());
}

// Cleanups that a failed RunGraph carried are sent again: here a refuses step 2 (and
// so may not have seen step 1's cleanup); step 1 is then cleaned up by step 3's
// RunGraph, and step 2, which failed, by CleanupGraph at once.
TEST(StepRunnerTest, CleanupsAFailedRunGraphCarriedAreSentAgain) {
  TwoTasks tasks;
  StepCleaner cleaner(&tasks, /*max_waiting=*/8);
  ASSERT_TRUE(RunWithCleaner(&tasks, &cleaner, 1).ok());
  {
    absl::MutexLock l(&tasks.a()->mu);
    tasks.a()->run_error = absl::UnavailableError("connection reset");
  }
  EXPECT_EQ(RunWithCleaner(&tasks, &cleaner, 2).code(), absl::StatusCode::kUnavailable);
  {
    absl::MutexLock l(&tasks.a()->mu);
    EXPECT_EQ(tasks.a()->cleaned, std::set<int64_t>{2});
    tasks.a()->run_error = absl::OkStatus();
    tasks.a()->carried.clear();
  }
  ASSERT_TRUE(RunWithCleaner(&tasks, &cleaner, 3).ok());
  absl::MutexLock l(&tasks.a()->mu);
  EXPECT_EQ(tasks.a()->carried, std::set<int64_t>{1});
}

// A task that no step runs on any more gets its cleanups by CleanupGraph once
// max_waiting of them wait.
TEST(StepRunnerTest, CleanupsThatWaitTooLongGoByCleanupGraph) {
  TwoTasks tasks;
  StepCleaner cleaner(&tasks, /*max_waiting=*/3);
  for (int64_t step = 1; step <= 3; ++step) cleaner.Enqueue({kA}, step);
  test::FakeWorker* a = tasks.a();
  absl::MutexLock l(&a->mu);
  auto sent = [a]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(a->mu) { return a->cleaned.size() == 3; };
  a->mu.Await(absl::Condition(&sent));
  EXPECT_EQ(a->cleaned, (std::set<int64_t>{1, 2, 3}));
  EXPECT_TRUE(a->carried.empty());
}

TEST(StepRunnerTest, ManyConcurrentStepsEachGetTheirFetches) {
  TwoTasks tasks;
  const RegisteredStep step = TwoPartitionStep();
  StepCleaner cleaner(&tasks);
  constexpr int kSteps = 64;
  std::vector<std::vector<TensorProto>> fetches(kSteps);
  std::vector<absl::Status> statuses(kSteps);
  absl::BlockingCounter left(kSteps);
  for (int i = 0; i < kSteps; ++i) {
    RunRegisteredStepAsync(&tasks, step, Args(100 + i), &fetches[i], nullptr, &cleaner, nullptr,
                           [&, i](absl::Status s) {
                             statuses[i] = std::move(s);
                             left.DecrementCount();
                           });
  }
  left.Wait();
  for (int i = 0; i < kSteps; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << i << ": " << statuses[i];
    ASSERT_EQ(fetches[i].size(), 2u);
    for (const TensorProto& t : fetches[i]) {
      EXPECT_EQ(Tensor::FromProto(t)->scalar<float>(), 42.f);
    }
  }
  absl::MutexLock l(&tasks.a()->mu);
  EXPECT_EQ(tasks.a()->runs, kSteps);
}

TEST(StepRunnerTest, CancellingAStepEndsItOnEveryTask) {
  TwoTasks tasks;
  tasks.a()->run_waits_for_cleanup = true;
  tasks.b()->run_waits_for_cleanup = true;
  const RegisteredStep step = TwoPartitionStep();
  std::vector<TensorProto> fetches;
  StepCleaner cleaner(&tasks);
  CancellationManager cancellation;
  absl::Notification finished;
  absl::Status status;
  RunRegisteredStepAsync(&tasks, step, Args(9), &fetches, nullptr, &cleaner, &cancellation,
                         [&](absl::Status s) {
                           status = std::move(s);
                           finished.Notify();
                         });
  for (test::FakeWorker* w : {tasks.a(), tasks.b()}) {
    absl::MutexLock l(&w->mu);
    auto running = [w]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu) { return w->waiting == 1; };
    w->mu.Await(absl::Condition(&running));
  }
  EXPECT_FALSE(finished.HasBeenNotified());
  cancellation.StartCancel(absl::CancelledError("the client gave up"));
  finished.WaitForNotification();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  // Cancelled before it starts: no RunGraph at all.
  absl::Notification again;
  RunRegisteredStepAsync(&tasks, step, Args(10), &fetches, nullptr, &cleaner, &cancellation,
                         [&](absl::Status s) {
                           status = std::move(s);
                           again.Notify();
                         });
  again.WaitForNotification();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  absl::MutexLock l(&tasks.a()->mu);
  EXPECT_EQ(tasks.a()->waiting, 0);
  EXPECT_EQ(tasks.a()->runs, 1);
}

TEST(StepRunnerTest, ATaskOutsideTheClusterIsUnavailable) {
  TwoTasks tasks;
  RegisteredStep step = TwoPartitionStep();
  step.graph_handles["/job:gone/replica:0/task:0"] = "gg";
  std::vector<TensorProto> fetches;
  absl::Status s = RunRegisteredStep(&tasks, step, Args(11), &fetches, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:gone")) << s;
}

}  // namespace
}  // namespace overseer

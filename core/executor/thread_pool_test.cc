#include "core/executor/thread_pool.h"

#include <atomic>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

// Counts the tasks running now and lets them go together.
class Gate {
 public:
  void Enter() {
    {
      absl::MutexLock lock(&mu_);
      ++running_;
    }
    open_.WaitForNotification();
  }
  void AwaitRunning(int n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ >= n; };
    mu_.Await(absl::Condition(&reached));
  }
  int running() {
    absl::MutexLock lock(&mu_);
    return running_;
  }
  void Open() { open_.Notify(); }

 private:
  absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Notification open_;
};

// Tasks that never block (the steps of compute-only graphs) get at most
// compute_threads threads; the rest wait for them.
TEST(ThreadPoolTest, TasksThatNeverBlockShareComputeThreads) {
  Gate gate;
  std::atomic<int> done{0};
  {
    ThreadPool pool(/*min_threads=*/1, /*max_threads=*/4096, /*compute_threads=*/2);
    for (int i = 0; i < 50; ++i) {
      pool.Schedule(
          [&] {
            gate.Enter();
            ++done;
          },
          /*may_block=*/false);
    }
    gate.AwaitRunning(2);
    EXPECT_EQ(pool.NumThreads(), 2);
    EXPECT_EQ(gate.running(), 2);  // The other 48 wait for those two threads.
    gate.Open();
  }  // Runs every task, then joins.
  EXPECT_EQ(done.load(), 50);
}

// Tasks that may block still get a thread each (a dequeue must not hold back the
// enqueue it waits for), and threads blocked in them leave the compute threads free.
TEST(ThreadPoolTest, TasksThatMayBlockGrowThePoolAndDoNotCountAsCompute) {
  Gate gate;
  ThreadPool pool(/*min_threads=*/1, /*max_threads=*/4096, /*compute_threads=*/2);
  for (int i = 0; i < 10; ++i) pool.Schedule([&] { gate.Enter(); });
  gate.AwaitRunning(10);
  EXPECT_GE(pool.NumThreads(), 10);
  absl::Notification computed;
  pool.Schedule([&] { computed.Notify(); }, /*may_block=*/false);
  computed.WaitForNotification();  // While the ten are still blocked.
  EXPECT_EQ(gate.running(), 10);
  gate.Open();
}

TEST(ThreadPoolTest, DefaultComputeThreadsIsTwiceTheCores) {
  EXPECT_EQ(DefaultComputeThreads(1), 2 * DefaultMinThreads());
  EXPECT_EQ(DefaultComputeThreads(1000), 1000);
}

}  // namespace
}  // namespace overseer

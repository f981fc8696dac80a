#ifndef OVERSEER_CORE_EXECUTOR_THREAD_POOL_H_
#define OVERSEER_CORE_EXECUTOR_THREAD_POOL_H_

// The inter-op thread pool that runs graph nodes. Kernels may block for a long time (a
// queue dequeue waits for an enqueue that another node or step will make), so for
// tasks that may block the pool grows instead of making them wait behind blocked ones:
// such a task never waits for a thread while fewer than `max_threads` exist. Tasks
// that never block (the steps of graphs without a kernel that may wait) only compute,
// and more threads than cores only add switches: for them the pool starts a thread
// only while fewer than `compute_threads` run such tasks (threads blocked in tasks that
// may block do not count), and otherwise they wait for one. Threads beyond
// `min_threads` exit after a minute without work. Threads are never created per step.

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace overseer {

// The size of a pool that starts with one thread per core:
// std::thread::hardware_concurrency(), at least 1.
int DefaultMinThreads();
// Threads that run tasks that never block, by default: twice the cores
// (DefaultMinThreads()), and at least `min_threads`.
int DefaultComputeThreads(int min_threads);

// Thread-safe.
class ThreadPool {
 public:
  // Starts no thread until the first task. Precondition: 1 <= min_threads <= max_threads.
  // `compute_threads` <= 0 means DefaultComputeThreads(min_threads).
  explicit ThreadPool(int min_threads, int max_threads = 4096, int compute_threads = 0);
  // Runs every task already scheduled, then joins the threads.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs `task` on a pool thread, starting one if every thread is busy and there is
  // room (see above): `may_block` false promises that the task never waits for another
  // task or step.
  void Schedule(std::function<void()> task, bool may_block = true);

  // Threads alive now.
  int NumThreads() const;

 private:
  struct Task {
    std::function<void()> fn;
    bool may_block = true;
  };
  void WorkerLoop();

  const int min_threads_;
  const int max_threads_;
  const int compute_threads_;
  mutable absl::Mutex mu_;
  absl::CondVar work_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  int alive_ ABSL_GUARDED_BY(mu_) = 0;
  int running_may_block_ ABSL_GUARDED_BY(mu_) = 0;  // Threads in tasks that may block.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Exited threads are joined lazily (by the next spawn or the destructor).
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> exited_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CORE_EXECUTOR_THREAD_POOL_H_

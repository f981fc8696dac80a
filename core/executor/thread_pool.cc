#include "core/executor/thread_pool.h"

#include <algorithm>
#include <utility>

#include "absl/time/time.h"

namespace overseer {
namespace {
constexpr absl::Duration kIdleExit = absl::Minutes(1);
}  // namespace

ThreadPool::ThreadPool(int min_threads, int max_threads, int compute_threads)
    : min_threads_(std::max(1, min_threads)),
      max_threads_(std::max(min_threads_, max_threads)),
      compute_threads_(std::min(max_threads_, compute_threads > 0
                                                  ? std::max(min_threads_, compute_threads)
                                                  : DefaultComputeThreads(min_threads_))) {}

ThreadPool::~ThreadPool() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    work_.SignalAll();
  }
  // Threads may still be spawned by tasks running now; join until none is left.
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      threads.swap(threads_);
    }
    if (threads.empty()) break;
    for (std::thread& t : threads) t.join();
    threads.clear();
  }
}

void ThreadPool::Schedule(std::function<void()> task, bool may_block) {
  std::vector<std::thread> finished;
  {
    absl::MutexLock lock(&mu_);
    tasks_.push_back(Task{std::move(task), may_block});
    const bool room =
        alive_ < max_threads_ && (may_block || alive_ - running_may_block_ < compute_threads_);
    if (static_cast<int>(tasks_.size()) <= idle_ || !room) {
      work_.Signal();
    } else {
      // Reap threads that exited on idleness before starting another.
      for (auto it = threads_.begin(); it != threads_.end();) {
        if (std::find(exited_.begin(), exited_.end(), it->get_id()) != exited_.end()) {
          finished.push_back(std::move(*it));
          it = threads_.erase(it);
        } else {
          ++it;
        }
      }
      exited_.clear();
      ++alive_;
      threads_.emplace_back([this] { WorkerLoop(); });
    }
  }
  for (std::thread& t : finished) t.join();
}

int ThreadPool::NumThreads() const {
  absl::MutexLock lock(&mu_);
  return alive_;
}

void ThreadPool::WorkerLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    while (tasks_.empty() && !stopping_) {
      ++idle_;
      const bool timed_out = work_.WaitWithTimeout(&mu_, kIdleExit);
      --idle_;
      if (timed_out && tasks_.empty() && !stopping_ && alive_ > min_threads_) {
        --alive_;
        exited_.push_back(std::this_thread::get_id());
        return;
      }
    }
    if (tasks_.empty()) break;  // Stopping and drained.
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    if (task.may_block) ++running_may_block_;
    mu_.Unlock();
    task.fn();
    task.fn = nullptr;
    mu_.Lock();
    if (task.may_block) --running_may_block_;
  }
  --alive_;
}

int DefaultMinThreads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int DefaultComputeThreads(int min_threads) {
  return std::max(min_threads, 2 * DefaultMinThreads());
}

}  // namespace overseer

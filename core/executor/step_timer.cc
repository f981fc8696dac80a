#include "core/executor/step_timer.h"

namespace overseer {

StepTimer::StepTimer(Clock* clock) : clock_(clock) {}

StepTimer::~StepTimer() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    ++changes_;
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
}

StepTimer::Id StepTimer::Schedule(absl::Time when, std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  const Id id = next_id_++;
  if (pending_.empty() || when < pending_.begin()->first.first) ++changes_;
  pending_.emplace(std::make_pair(when, id), std::move(callback));
  deadlines_.emplace(id, when);
  return id;
}

void StepTimer::Cancel(Id id) {
  absl::MutexLock lock(&mu_);
  auto it = deadlines_.find(id);
  if (it != deadlines_.end()) {
    pending_.erase({it->second, id});
    deadlines_.erase(it);
    return;
  }
  auto not_running = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ != id; };
  mu_.Await(absl::Condition(&not_running));
}

void StepTimer::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (pending_.empty()) {
      const int64_t seen = changes_;
      auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return changes_ != seen; };
      mu_.Await(absl::Condition(&changed));
      continue;
    }
    auto first = pending_.begin();
    const absl::Time when = first->first.first;
    if (clock_->Now() < when) {
      const int64_t seen = changes_;
      auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return changes_ != seen; };
      clock_->AwaitWithDeadline(&mu_, absl::Condition(&changed), when);
      continue;
    }
    const Id id = first->first.second;
    std::function<void()> callback = std::move(first->second);
    pending_.erase(first);
    deadlines_.erase(id);
    running_ = id;
    mu_.Unlock();
    callback();
    mu_.Lock();
    running_ = -1;
  }
}

}  // namespace overseer

#include "client/training/managed_thread.h"

namespace overseer {

std::shared_ptr<ManagedThread> ManagedThread::Create(std::string name, std::function<void()> body) {
  auto state = std::make_shared<State>();
  state->name = std::move(name);
  state->body = std::move(body);
  return std::shared_ptr<ManagedThread>(new ManagedThread(std::move(state)));
}

std::shared_ptr<ManagedThread> ManagedThread::Start(std::string name, std::function<void()> body) {
  std::shared_ptr<ManagedThread> thread = Create(std::move(name), std::move(body));
  thread->Start();
  return thread;
}

ManagedThread::~ManagedThread() {
  std::thread thread;
  {
    absl::MutexLock lock(&start_mu_);
    thread = std::move(thread_);
  }
  if (!thread.joinable()) return;
  if (thread.get_id() == std::this_thread::get_id()) {
    // The last reference went away inside the body: the thread only touches `state_`
    // (which it co-owns) from here on, so it may run to its end on its own.
    thread.detach();
  } else {
    thread.join();
  }
}

void ManagedThread::Start() {
  absl::MutexLock lock(&start_mu_);
  if (state_->started.load(std::memory_order_acquire)) return;
  state_->started.store(true, std::memory_order_release);
  thread_ = std::thread([state = state_] { Run(state); });
}

void ManagedThread::Run(const std::shared_ptr<State>& state) {
  state->body();
  state->body = nullptr;  // Release what the body captured before anyone is told.
  absl::MutexLock lock(&state->mu);
  state->finished.store(true, std::memory_order_release);
  state->done = true;
  for (auto& observer : state->observers) observer();
  state->observers.clear();
}

bool ManagedThread::WaitUntilFinished(Clock* clock, absl::Time deadline) {
  absl::MutexLock lock(&state_->mu);
  return clock->AwaitWithDeadline(&state_->mu, absl::Condition(&state_->done), deadline);
}

void ManagedThread::AddFinishObserver(std::function<void()> observer) {
  absl::MutexLock lock(&state_->mu);
  if (state_->done) {
    observer();
  } else {
    state_->observers.push_back(std::move(observer));
  }
}

}  // namespace overseer

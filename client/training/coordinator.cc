#include "client/training/coordinator.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"

namespace overseer {
namespace {

bool AllFinished(const std::vector<std::shared_ptr<ManagedThread>>& threads) {
  return std::none_of(threads.begin(), threads.end(),
                      [](const std::shared_ptr<ManagedThread>& t) { return t->IsAlive(); });
}

bool Contains(const std::vector<std::shared_ptr<ManagedThread>>& threads,
              const std::shared_ptr<ManagedThread>& thread) {
  return std::find(threads.begin(), threads.end(), thread) != threads.end();
}

}  // namespace

Coordinator::Coordinator(CoordinatorOptions options)
    : clean_stop_codes_(std::move(options.clean_stop_codes)),
      clock_(options.clock != nullptr ? options.clock : Clock::Real()),
      state_(std::make_shared<State>()) {}

Coordinator::~Coordinator() {
  RequestStop().IgnoreError();
  std::vector<std::shared_ptr<ManagedThread>> held;
  {
    absl::MutexLock lock(&state_->mu);
    held = std::move(state_->registered);
    held.insert(held.end(), state_->lingering.begin(), state_->lingering.end());
    state_->registered.clear();
    state_->lingering.clear();
  }
  for (const std::shared_ptr<ManagedThread>& thread : held) {
    if (!thread->IsAlive()) continue;
    if (!thread->WaitUntilFinished(clock_, clock_->Now() + absl::Seconds(10))) {
      LOG(WARNING) << "Coordinator destroyed: waiting for thread '" << thread->name() << "' to end";
      thread->WaitUntilFinished(clock_, absl::InfiniteFuture());
    }
  }
  // Dropping the references joins the finished OS threads.
}

bool Coordinator::IsCleanStop(const absl::Status& status) const {
  return std::find(clean_stop_codes_.begin(), clean_stop_codes_.end(), status.code()) !=
         clean_stop_codes_.end();
}

absl::Status Coordinator::RequestStop(absl::Status status) {
  if (!status.ok() && IsCleanStop(status)) status = absl::OkStatus();
  {
    absl::MutexLock lock(&state_->mu);
    if (state_->joined && !status.ok()) return status;
    if (state_->stop_requested) return absl::OkStatus();
    state_->stop_requested = true;
    state_->error = status;
  }
  if (!status.ok()) LOG(INFO) << "Error reported to Coordinator: " << status;
  return absl::OkStatus();
}

void Coordinator::ClearStop() {
  absl::MutexLock lock(&state_->mu);
  state_->joined = false;
  state_->error = absl::OkStatus();
  state_->stop_requested = false;
}

bool Coordinator::ShouldStop() const {
  absl::MutexLock lock(&state_->mu);
  return state_->stop_requested;
}

bool Coordinator::WaitForStop(absl::Duration timeout) {
  return WaitForStopUntil(clock_->Now() + timeout);
}

bool Coordinator::WaitForStopUntil(absl::Time deadline) {
  absl::MutexLock lock(&state_->mu);
  return clock_->AwaitWithDeadline(&state_->mu, absl::Condition(&state_->stop_requested), deadline);
}

absl::Status Coordinator::StopOnException(const std::function<absl::Status()>& body) {
  return StopOnError(body());
}

absl::Status Coordinator::StopOnError(absl::Status status) {
  if (!status.ok()) RequestStop(status).IgnoreError();
  return status;
}

void Coordinator::Observe(const std::shared_ptr<ManagedThread>& thread) {
  thread->AddFinishObserver([weak = std::weak_ptr<State>(state_)] {
    if (std::shared_ptr<State> state = weak.lock()) {
      // Releasing the mutex makes pending Await calls re-check their conditions.
      absl::MutexLock lock(&state->mu);
    }
  });
}

void Coordinator::RegisterThread(std::shared_ptr<ManagedThread> thread) {
  if (thread == nullptr) return;
  {
    absl::MutexLock lock(&state_->mu);
    if (Contains(state_->registered, thread)) return;
    state_->registered.push_back(thread);
  }
  Observe(thread);
}

absl::Status Coordinator::Join(const std::vector<std::shared_ptr<ManagedThread>>& threads,
                               absl::Duration stop_grace_period, bool ignore_live_threads) {
  for (const std::shared_ptr<ManagedThread>& thread : threads) {
    if (thread != nullptr) Observe(thread);
  }
  // Threads registered after this point are left for a later Join (or the destructor).
  std::vector<std::shared_ptr<ManagedThread>> all;
  {
    absl::MutexLock lock(&state_->mu);
    all = state_->registered;
  }
  for (const std::shared_ptr<ManagedThread>& thread : threads) {
    if (thread != nullptr && !Contains(all, thread)) all.push_back(thread);
  }

  State* const state = state_.get();
  {
    absl::MutexLock lock(&state->mu);
    auto stopped_or_all_finished = [state, &all]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
      return state->stop_requested || AllFinished(all);
    };
    clock_->AwaitWithDeadline(&state->mu, absl::Condition(&stopped_or_all_finished),
                              absl::InfiniteFuture());
  }
  const absl::Time deadline = clock_->Now() + stop_grace_period;
  {
    absl::MutexLock lock(&state->mu);
    auto all_finished = [&all]() { return AllFinished(all); };
    clock_->AwaitWithDeadline(&state->mu, absl::Condition(&all_finished), deadline);
  }

  std::vector<std::string> stragglers;
  absl::Status error;
  // Released after the lock: dropping the last reference joins the OS thread, which may
  // still have to run its finish observer (which locks state->mu).
  std::vector<std::shared_ptr<ManagedThread>> released;
  {
    absl::MutexLock lock(&state->mu);
    state->joined = true;
    auto& registered = state->registered;
    registered.erase(std::remove_if(registered.begin(), registered.end(),
                                    [&all](const std::shared_ptr<ManagedThread>& t) {
                                      return Contains(all, t);
                                    }),
                     registered.end());
    for (const std::shared_ptr<ManagedThread>& thread : all) {
      if (!thread->IsAlive()) continue;
      stragglers.push_back(thread->name());
      if (!Contains(state->lingering, thread)) state->lingering.push_back(thread);
    }
    auto& lingering = state->lingering;
    auto ended =
        std::stable_partition(lingering.begin(), lingering.end(),
                              [](const std::shared_ptr<ManagedThread>& t) { return t->IsAlive(); });
    released.assign(std::make_move_iterator(ended), std::make_move_iterator(lingering.end()));
    lingering.erase(ended, lingering.end());
    error = state->error;
  }
  if (!error.ok()) return error;
  if (stragglers.empty()) return absl::OkStatus();
  const std::string message =
      absl::StrCat("Coordinator stopped with threads still running after the stop grace period (",
                   absl::FormatDuration(stop_grace_period), "): ", absl::StrJoin(stragglers, ", "));
  if (ignore_live_threads) {
    LOG(INFO) << message;
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(message);
}

bool Coordinator::joined() const {
  absl::MutexLock lock(&state_->mu);
  return state_->joined;
}

absl::Status Coordinator::RequestedError() const {
  absl::MutexLock lock(&state_->mu);
  return state_->error;
}

}  // namespace overseer

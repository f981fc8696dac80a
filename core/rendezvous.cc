#include "core/rendezvous.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace overseer {

absl::StatusOr<RendezvousKey> RendezvousKey::Parse(absl::string_view key) {
  RendezvousKey out;
  ASSIGN_OR_RETURN(out.parsed, ParseRendezvousKey(key));
  out.full = std::string(key);
  return out;
}

absl::Status RendezvousTimedOut(const RendezvousKey& key) {
  return absl::DeadlineExceededError(
      absl::StrCat("timed out waiting for tensor '", key.parsed.tensor_name, "' from ",
                   key.parsed.src_device, " (rendezvous key '", key.full, "')"));
}

std::shared_ptr<LocalRendezvous> LocalRendezvous::Create() {
  return std::shared_ptr<LocalRendezvous>(new LocalRendezvous());
}

absl::Status LocalRendezvous::Send(const RendezvousKey& key, const Tensor& value) {
  Answer answer;
  {
    absl::MutexLock lock(&mu_);
    if (!abort_status_.ok()) return abort_status_;
    Item& item = items_[key.full];
    if (item.has_value) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor sent twice under rendezvous key '", key.full, "'"));
    }
    if (item.done == nullptr) {
      item.value = value;
      item.has_value = true;
      return absl::OkStatus();
    }
    answer = TakeWaiter(&item);
    items_.erase(key.full);
  }
  Run(std::move(answer), value);
  return absl::OkStatus();
}

LocalRendezvous::Answer LocalRendezvous::TakeWaiter(Item* item) {
  Answer answer{std::move(item->done), item->cancellation, item->token};
  item->done = nullptr;
  item->has_waiter = false;
  return answer;
}

void LocalRendezvous::Run(Answer answer, absl::StatusOr<Tensor> value) {
  if (answer.cancellation != nullptr && answer.token != CancellationManager::kInvalidToken) {
    answer.cancellation->DeregisterCallback(answer.token);
  }
  answer.done(std::move(value));
}

void LocalRendezvous::RecvAsync(const RendezvousKey& key, CancellationManager* cancellation,
                                RecvDone done) {
  absl::StatusOr<Tensor> now;
  bool waiting = false;
  {
    absl::MutexLock lock(&mu_);
    if (!abort_status_.ok()) {
      now = abort_status_;
    } else {
      Item& item = items_[key.full];
      if (item.has_value) {
        now = std::move(item.value);
        items_.erase(key.full);
      } else if (item.has_waiter) {
        now = absl::InvalidArgumentError(
            absl::StrCat("two receives wait for rendezvous key '", key.full, "'"));
      } else {
        item.has_waiter = true;
        item.done = std::move(done);
        item.cancellation = cancellation;
        waiting = true;
      }
    }
  }
  if (!waiting) {  // Answered now.
    done(std::move(now));
    return;
  }
  if (cancellation == nullptr) return;
  const CancellationManager::Token token =
      cancellation->RegisterCallback([self = shared_from_this(), key = key.full, cancellation] {
        self->CancelWaiter(key, cancellation);
      });
  if (token == CancellationManager::kInvalidToken) {  // Cancelled already.
    CancelWaiter(key.full, cancellation);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(key.full);
    if (it != items_.end() && it->second.done != nullptr &&
        it->second.cancellation == cancellation) {
      it->second.token = token;
      return;
    }
  }
  // Answered meanwhile, before its token was kept.
  cancellation->DeregisterCallback(token);
}

void LocalRendezvous::CancelWaiter(const std::string& key, CancellationManager* cancellation) {
  Answer answer;
  {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(key);
    if (it == items_.end() || it->second.done == nullptr ||
        it->second.cancellation != cancellation) {
      return;  // Answered already.
    }
    answer = TakeWaiter(&it->second);
    answer.token = CancellationManager::kInvalidToken;  // Its callback is what runs now.
    items_.erase(it);
  }
  Run(std::move(answer), cancellation->status());
}

absl::StatusOr<Tensor> LocalRendezvous::Recv(const RendezvousKey& key, const RendezvousWait& wait) {
  if (wait.clock == nullptr && DeadlineNeedsClock(wait.deadline)) {
    return absl::InvalidArgumentError(
        absl::StrCat("receive of '", key.full, "': RendezvousWait has a deadline but no clock"));
  }
  // Set (under mu_) by the cancellation callback, which may outlive this call.
  auto cancelled = std::make_shared<bool>(false);
  CancellationManager::Token token = CancellationManager::kInvalidToken;
  if (wait.cancellation != nullptr) {
    token = wait.cancellation->RegisterCallback([self = shared_from_this(), cancelled] {
      absl::MutexLock lock(&self->mu_);
      *cancelled = true;
    });
    if (token == CancellationManager::kInvalidToken) {
      return absl::CancelledError(absl::StrCat(
          "receive of '", key.full, "' cancelled: ", wait.cancellation->status().message()));
    }
  }
  absl::StatusOr<Tensor> result;
  {
    absl::MutexLock lock(&mu_);
    Item& item = items_[key.full];
    if (item.has_waiter) {
      result = absl::InvalidArgumentError(
          absl::StrCat("two receives wait for rendezvous key '", key.full, "'"));
    } else {
      item.has_waiter = true;
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return *cancelled || !abort_status_.ok() || items_[key.full].has_value;
      };
      const bool done = AwaitOnClock(wait.clock, &mu_, absl::Condition(&ready), wait.deadline);
      Item& now = items_[key.full];
      if (now.has_value) {
        result = std::move(now.value);
        items_.erase(key.full);
      } else {
        now.has_waiter = false;
        if (!abort_status_.ok()) {
          result = abort_status_;
        } else if (*cancelled) {
          result = absl::CancelledError(absl::StrCat(
              "receive of '", key.full, "' cancelled: ", wait.cancellation->status().message()));
        } else if (!done) {
          result = RendezvousTimedOut(key);
        }
        if (!now.has_value && !now.has_waiter) items_.erase(key.full);
      }
    }
  }
  if (token != CancellationManager::kInvalidToken) wait.cancellation->DeregisterCallback(token);
  return result;
}

void LocalRendezvous::StartAbort(absl::Status status) {
  if (status.ok()) status = absl::CancelledError("rendezvous aborted");
  std::vector<Answer> answers;
  {
    absl::MutexLock lock(&mu_);
    if (!abort_status_.ok()) return;
    abort_status_ = status;
    AbortItemsLocked(&answers);
  }
  for (Answer& answer : answers) Run(std::move(answer), status);
}

void LocalRendezvous::AbortItemsLocked(std::vector<Answer>* answers) {
  for (auto it = items_.begin(); it != items_.end();) {
    if (it->second.done != nullptr) {
      answers->push_back(TakeWaiter(&it->second));
      items_.erase(it++);
    } else if (!it->second.has_waiter) {
      items_.erase(it++);
    } else {
      it->second.value = Tensor();
      it->second.has_value = false;
      ++it;
    }
  }
}

absl::Status LocalRendezvous::status() const {
  absl::MutexLock lock(&mu_);
  return abort_status_;
}

int LocalRendezvous::num_pending_values() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [key, item] : items_) n += item.has_value ? 1 : 0;
  return n;
}

}  // namespace overseer

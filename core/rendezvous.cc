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

std::shared_ptr<LocalRendezvous> LocalRendezvous::Create() {
  return std::shared_ptr<LocalRendezvous>(new LocalRendezvous());
}

absl::Status LocalRendezvous::Send(const RendezvousKey& key, const Tensor& value) {
  absl::MutexLock lock(&mu_);
  if (!abort_status_.ok()) return abort_status_;
  Item& item = items_[key.full];
  if (item.has_value) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor sent twice under rendezvous key '", key.full, "'"));
  }
  item.value = value;
  item.has_value = true;
  return absl::OkStatus();
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
          result = absl::DeadlineExceededError(
              absl::StrCat("timed out waiting for tensor '", key.parsed.tensor_name, "' from ",
                           key.parsed.src_device, " (rendezvous key '", key.full, "')"));
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
  absl::MutexLock lock(&mu_);
  if (!abort_status_.ok()) return;
  abort_status_ = std::move(status);
  for (auto it = items_.begin(); it != items_.end();) {
    if (!it->second.has_waiter) {
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

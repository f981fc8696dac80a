#include "core/cancellation.h"

#include <vector>

namespace overseer {

void CancellationManager::StartCancel(absl::Status reason) {
  std::map<Token, std::function<void()>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    reason_ = reason.ok() ? absl::CancelledError("step cancelled") : std::move(reason);
    callbacks.swap(callbacks_);
  }
  for (auto& [token, callback] : callbacks) callback();
}

bool CancellationManager::IsCancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

absl::Status CancellationManager::status() const {
  absl::MutexLock lock(&mu_);
  return reason_;
}

CancellationManager::Token CancellationManager::RegisterCallback(std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return kInvalidToken;
  const Token token = next_token_++;
  callbacks_[token] = std::move(callback);
  return token;
}

bool CancellationManager::DeregisterCallback(Token token) {
  absl::MutexLock lock(&mu_);
  return callbacks_.erase(token) > 0;
}

}  // namespace overseer

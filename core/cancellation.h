#ifndef OVERSEER_CORE_CANCELLATION_H_
#define OVERSEER_CORE_CANCELLATION_H_

#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace overseer {

// Cancels one step: blocking kernels register a callback that wakes them. Thread-safe.
class CancellationManager {
 public:
  using Token = int64_t;
  static constexpr Token kInvalidToken = -1;

  CancellationManager() = default;
  CancellationManager(const CancellationManager&) = delete;
  CancellationManager& operator=(const CancellationManager&) = delete;

  // Cancels with `reason` (not OK): runs every registered callback once, outside the
  // lock. Later calls are no-ops; the first reason is kept.
  void StartCancel(absl::Status reason);
  bool IsCancelled() const;
  // OK until cancelled; then the first reason.
  absl::Status status() const;

  // Registers `callback` to run on cancellation. Returns kInvalidToken, without
  // registering, if already cancelled (the caller must then stop by itself).
  Token RegisterCallback(std::function<void()> callback);
  // Removes a callback. Returns false if it already ran or is running.
  bool DeregisterCallback(Token token);

 private:
  mutable absl::Mutex mu_;
  absl::Status reason_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  Token next_token_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<Token, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CORE_CANCELLATION_H_

#ifndef OVERSEER_CORE_KERNELS_QUEUE_HANDLE_UTIL_H_
#define OVERSEER_CORE_KERNELS_QUEUE_HANDLE_UTIL_H_

// What the queue and accumulator kernels share: finding the resource a string handle
// ("container/name") names, and the wait of a blocking call.

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/kernels/queue/queue.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {

// The resource of type T named by the handle in input 0; `what` ("queue") names it in
// errors. INVALID_ARGUMENT for a malformed handle, NOT_FOUND if no such resource exists.
template <typename T>
absl::StatusOr<std::shared_ptr<T>> LookupHandle(OpKernelContext* ctx, const char* what) {
  ASSIGN_OR_RETURN(Tensor handle, ctx->input_value(0));
  if (handle.dtype() != DT_STRING || handle.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " handle must be a string scalar, got ",
                                                   DataTypeString(handle.dtype()), " ",
                                                   handle.shape().DebugString()));
  }
  const std::string& text = handle.data<std::string>()[0];
  const size_t slash = text.find('/');
  if (slash == std::string::npos || ctx->resource_mgr() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " handle '", text, "' is not of the form container/name"));
  }
  return ctx->resource_mgr()->Lookup<T>(text.substr(0, slash), text.substr(slash + 1));
}

// The wait of blocking kernel `op`: the step's cancellation and deadline, and
// `timeout_ms` (< 0: none). INVALID_ARGUMENT when there is a timeout but the step has no
// clock.
inline absl::StatusOr<QueueWait> MakeQueueWait(OpKernelContext* ctx, int64_t timeout_ms,
                                               const std::string& op) {
  QueueWait wait;
  wait.cancellation = ctx->cancellation();
  wait.clock = ctx->clock();
  wait.deadline = ctx->deadline();
  if (timeout_ms >= 0) {
    if (wait.clock == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(op, " has timeout_ms but the step no clock"));
    }
    wait.deadline = std::min(wait.deadline, wait.clock->Now() + absl::Milliseconds(timeout_ms));
  }
  return wait;
}

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_QUEUE_HANDLE_UTIL_H_

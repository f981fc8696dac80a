#ifndef OVERSEER_CORE_STATUS_MACROS_H_
#define OVERSEER_CORE_STATUS_MACROS_H_

// RETURN_IF_ERROR and ASSIGN_OR_RETURN, which Abseil 20220623 lacks.

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define OVERSEER_STATUS_CONCAT_INNER_(a, b) a##b
#define OVERSEER_STATUS_CONCAT_(a, b) OVERSEER_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function with the status of `expr` if it is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    const absl::Status _overseer_status = (expr);        \
    if (!_overseer_status.ok()) return _overseer_status; \
  } while (0)

// `lhs` = value of the StatusOr `rexpr`, or returns its error status.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  ASSIGN_OR_RETURN_IMPL_(OVERSEER_STATUS_CONCAT_(_overseer_statusor_, __LINE__), lhs, rexpr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                           \
  if (!statusor.ok()) return statusor.status();      \
  lhs = std::move(statusor).value()

namespace overseer {

// Returns `status` with `prefix` put before its message; OK stays OK.
absl::Status Annotate(const absl::Status& status, absl::string_view prefix);

}  // namespace overseer

#endif  // OVERSEER_CORE_STATUS_MACROS_H_

#ifndef OVERSEER_CORE_IO_RUN_NAME_H_
#define OVERSEER_CORE_IO_RUN_NAME_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace overseer {

// OK if `run` names a directory under a logdir: one or more segments of
// [A-Za-z0-9._-], joined by single '/', none of them "." or "..", no leading or
// trailing '/', at most 512 bytes. INVALID_ARGUMENT saying what is wrong otherwise.
// A valid run never names anything outside the logdir.
absl::Status ValidateRunName(absl::string_view run);

// `logdir` + "/" + `run`. Precondition: ValidateRunName(run) is OK.
std::string RunDirectory(absl::string_view logdir, absl::string_view run);

}  // namespace overseer

#endif  // OVERSEER_CORE_IO_RUN_NAME_H_

// Process-wide Abseil settings, applied before main by a static initialiser.
//
// Debian's Abseil is built with mutex deadlock detection on, which makes every
// absl::Mutex lock record its acquisition order (about 120 ns instead of 40 ns per
// lock/unlock here). That is a debugging aid, not a production setting: Overseer's
// lock order is checked by ABSL_GUARDED_BY annotations and by tests, so detection is
// turned off for every binary that links //core:base.

#include "absl/synchronization/mutex.h"

namespace overseer {
namespace {

const bool kConfigured = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();

}  // namespace
}  // namespace overseer

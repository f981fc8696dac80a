// Abseil's mutex deadlock detection makes every absl::Mutex lock record its
// acquisition order in a process-wide graph, and aborts with both lock stacks the first
// time two mutexes are taken in opposite orders (a potential deadlock, even if the
// run did not deadlock). It costs about 120 ns instead of 40 ns per lock/unlock here,
// which sits on the executor's and the event writer's per-step paths, so it is off in
// binaries. Under `bazel test` (TEST_TARGET is set, and the servers the multi-process
// tests start inherit it) it stays on, so every test checks the lock order of the code
// it runs (not keyed on TEST_TMPDIR: bench/multiprocess sets that for the servers it
// times). The ABSL_GUARDED_BY annotations are checked at compile time by clang's
// -Wthread-safety (`./dev check`).

#include "core/absl_config.h"

#include <cstdlib>

#include "absl/synchronization/mutex.h"

namespace overseer {

void ConfigureMutexDeadlockDetection() {
  const bool under_test = std::getenv("TEST_TARGET") != nullptr;
  absl::SetMutexDeadlockDetectionMode(under_test ? absl::OnDeadlockCycle::kAbort
                                                 : absl::OnDeadlockCycle::kIgnore);
}

}  // namespace overseer

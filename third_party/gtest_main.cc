// The main() of every test (//third_party:gtest_main): gtest's and gmock's, with
// Abseil's mutex deadlock detection set to abort, so every test checks the lock order
// of the code it runs (docs/settings.md). Binaries leave it off (ConfigureMutexDeadlock-
// Detection in core/absl_config.h); tests set it here, explicitly, rather than through
// a static initialiser of a library they link.

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

int main(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
  testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}

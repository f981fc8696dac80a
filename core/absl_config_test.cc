// Tests run with Abseil's mutex deadlock detection on (//third_party:gtest_main), and
// ConfigureMutexDeadlockDetection, which the binaries call, leaves it on under `bazel test`.

#include "core/absl_config.h"

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

void LockInBothOrders() {
  absl::Mutex a;
  absl::Mutex b;
  {
    absl::MutexLock hold_a(&a);
    absl::MutexLock hold_b(&b);
  }
  absl::MutexLock hold_b(&b);
  absl::MutexLock hold_a(&a);  // Never deadlocks here, but the order is reversed.
}

TEST(AbslConfigTest, BinarySettingAbortsUnderTest) {
  ConfigureMutexDeadlockDetection();
  EXPECT_DEATH(LockInBothOrders(), "Potential Mutex deadlock");
}

TEST(AbslConfigTest, LockOrderInversionAbortsUnderTest) {
  absl::Mutex a;
  absl::Mutex b;
  EXPECT_DEATH(
      {
        {
          absl::MutexLock hold_a(&a);
          absl::MutexLock hold_b(&b);
        }
        absl::MutexLock hold_b(&b);
        absl::MutexLock hold_a(&a);  // Never deadlocks here, but the order is reversed.
      },
      "Potential Mutex deadlock");
}

}  // namespace
}  // namespace overseer

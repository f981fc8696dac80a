// absl_config.cc leaves Abseil's mutex deadlock detection on under `bazel test`.

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

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

#include "core/env.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(EnvTest, OnlyOffWordsSwitchOff) {
  constexpr const char* kName = "OVERSEER_ENV_TEST_SWITCH";
  ::unsetenv(kName);
  EXPECT_FALSE(EnvSwitchedOff(kName));
  for (const char* off : {"0", "false", "No", "OFF"}) {
    ::setenv(kName, off, 1);
    EXPECT_TRUE(EnvSwitchedOff(kName)) << off;
  }
  for (const char* on : {"1", "true", "", "of", "00"}) {
    ::setenv(kName, on, 1);
    EXPECT_FALSE(EnvSwitchedOff(kName)) << on;
  }
}

}  // namespace
}  // namespace overseer

#include "core/io/run_name.h"

#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(RunNameTest, AcceptsSegments) {
  for (const char* run : {"train", "eval", "exp-1/lr_0.01/seed.3", "a/b/c", "..a", "a.."}) {
    EXPECT_TRUE(ValidateRunName(run).ok()) << run;
  }
}

TEST(RunNameTest, RejectsEscapesAndOddCharacters) {
  for (const char* run : {"", "/abs", "..", "a/../b", ".", "a/./b", "a//b", "a/", "a b", "a\\b",
                          "r\xc3\xa9sum\xc3\xa9", "x:y", "~"}) {
    const absl::Status s = ValidateRunName(run);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << run;
    EXPECT_NE(s.message().find("invalid run name"), std::string::npos);
  }
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateRunName(std::string(513, 'a'))));
}

TEST(RunNameTest, RunDirectory) { EXPECT_EQ(RunDirectory("/logs", "a/b"), "/logs/a/b"); }

}  // namespace
}  // namespace overseer

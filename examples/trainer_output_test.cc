#include "examples/trainer_output.h"

#include "gtest/gtest.h"

namespace overseer {
namespace examples {
namespace {

TEST(TrainerOutputTest, SessionLineRoundTrips) {
  const std::string line = FormatSessionLine(2, 380, 1, 1712345678.25);
  EXPECT_EQ(line, "session 2 global_step 380 recoveries 1 time 1712345678.250000");
  TrainerLine parsed = ParseTrainerLine(line);
  EXPECT_EQ(parsed.kind, TrainerLine::kSession);
  EXPECT_EQ(parsed.session, 2);
  EXPECT_EQ(parsed.global_step, 380);
  EXPECT_EQ(parsed.recoveries, 1);
  EXPECT_DOUBLE_EQ(parsed.time, 1712345678.25);
}

TEST(TrainerOutputTest, StepLineRoundTrips) {
  const std::string line = FormatStepLine(412, 0.18341, 0, 17.5);
  EXPECT_EQ(line, "step 412 loss 0.1834 recoveries 0 time 17.500000");
  TrainerLine parsed = ParseTrainerLine(line);
  EXPECT_EQ(parsed.kind, TrainerLine::kStep);
  EXPECT_EQ(parsed.global_step, 412);
  EXPECT_NEAR(parsed.loss, 0.1834, 1e-9);
  EXPECT_EQ(parsed.recoveries, 0);
  EXPECT_DOUBLE_EQ(parsed.time, 17.5);
}

TEST(TrainerOutputTest, FinalLineRoundTrips) {
  EXPECT_EQ(FormatFinalLine(0.98123), "final accuracy: 0.9812");
  TrainerLine parsed = ParseTrainerLine("final accuracy: 0.9812");
  EXPECT_EQ(parsed.kind, TrainerLine::kFinal);
  EXPECT_DOUBLE_EQ(parsed.accuracy, 0.9812);
}

TEST(TrainerOutputTest, AnythingElseIsOther) {
  for (const char* line :
       {"", "data: synthetic", "step x loss 1 recoveries 0 time 1", "step 1 loss 1 recoveries 0",
        "final accuracy: high", "session 1 global_step 2 recoveries 0 time 1 extra"}) {
    EXPECT_EQ(ParseTrainerLine(line).kind, TrainerLine::kOther) << line;
  }
}

TEST(TrainerOutputTest, WallSecondsIsAfter2020) { EXPECT_GT(WallSeconds(), 1.5e9); }

}  // namespace
}  // namespace examples
}  // namespace overseer

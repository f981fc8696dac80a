#include "testing/trainer_process.h"

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::ElementsAre;

// /bin/sh as the trainer, printing what a trainer prints.
TrainerProcessOptions Shell() {
  TrainerProcessOptions options;
  options.bin_dir = "/bin";
  return options;
}

TEST(TrainerProcessTest, ReadsWhatItPrintedAndItsExitCode) {
  TrainerProcess trainer("sh", "combined",
                         {"-c",
                          "echo 'global_step: 300'; echo 'Initialized model' >&2;"
                          "echo 'final accuracy: 0.9800'; exit 4"},
                         Shell());
  ASSERT_TRUE(trainer.start_status().ok()) << trainer.start_status();
  EXPECT_EQ(trainer.Wait(), 4) << trainer.Log();
  EXPECT_EQ(trainer.last_exit_code(), 4);
  EXPECT_FALSE(trainer.IsRunning());
  EXPECT_EQ(trainer.Value("global_step"), 300);
  EXPECT_EQ(trainer.Text("final accuracy"), "0.9800");
  EXPECT_EQ(trainer.Value("missing"), -1);
  EXPECT_TRUE(absl::StrContains(trainer.Log(), "Initialized model")) << trainer.Log();
}

TEST(TrainerProcessTest, SeparateStderrKeepsStdoutLinesToFollow) {
  TrainerProcessOptions options = Shell();
  options.separate_stderr = true;
  TrainerProcess trainer("sh", "separate", {"-c", "echo step 1; echo a log line >&2; echo step 2"},
                         options);
  ASSERT_EQ(trainer.Wait(), 0) << trainer.Log();
  EXPECT_THAT(trainer.NewLines(), ElementsAre("step 1", "step 2"));
  EXPECT_EQ(trainer.ErrorLog(), "a log line\n");
  EXPECT_TRUE(absl::StrContains(trainer.Log(), "a log line")) << trainer.Log();
}

TEST(TrainerProcessTest, AMissingBinaryShowsInItsStatusAndLog) {
  TrainerProcess trainer("no_such_trainer", "missing", {}, Shell());
  EXPECT_EQ(trainer.start_status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(trainer.Wait(), -1);
  EXPECT_TRUE(absl::StartsWith(trainer.Log(), "not started: ")) << trainer.Log();
}

}  // namespace
}  // namespace overseer

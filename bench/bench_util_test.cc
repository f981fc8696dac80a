#include "bench/bench_util.h"

#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MedianTest, OddAndEvenCounts) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
}

TEST(RoundsTest, AlternatesTheOrderAndDropsWarmUpRounds) {
  std::string order;
  double a = 0, b = 100;
  Rounds rounds("test");
  rounds.set_log_rounds(false);
  const int ia = rounds.Add("a", [&] {
    order += 'a';
    return ++a;
  });
  const int ib = rounds.Add("b", [&] {
    order += 'b';
    return ++b;
  });
  rounds.Run(/*rounds=*/3, /*warmup_rounds=*/1);
  EXPECT_EQ(order, "abbaabba");
  EXPECT_THAT(rounds.samples(ia), ElementsAre(2, 3, 4));
  EXPECT_THAT(rounds.samples(ib), ElementsAre(102, 103, 104));
}

TEST(RoundsTest, RunsUntilMinSecondsOrMaxRounds) {
  Rounds rounds("test");
  rounds.set_log_rounds(false);
  const int i = rounds.Add("a", [] { return 1.0; });
  rounds.Run(/*rounds=*/2, /*warmup_rounds=*/0, /*min_seconds=*/1e9, /*max_rounds=*/7);
  EXPECT_EQ(rounds.samples(i).size(), 7u);
}

// The window counts every call it made, and lasts at least min_seconds.
TEST(TimeCallsTest, CountsEveryCallMade) {
  int64_t made = 0;
  const CallWindow once = TimeCalls([&] { ++made; }, /*min_seconds=*/0);
  EXPECT_EQ(once.calls, 1);
  EXPECT_EQ(made, 1);
  made = 0;
  const CallWindow window = TimeCalls([&] { ++made; }, /*min_seconds=*/0.01);
  EXPECT_EQ(window.calls, made);
  EXPECT_GE(window.seconds, 0.01);
}

TEST(PrintFigureTest, RatioIsTheMedianOfPerRoundRatios) {
  ::testing::internal::CaptureStdout();
  // Per-round ratios 0.5, 0.5, 4, 0.5, 4: their median is 0.5, where the ratio of the
  // medians (2 / 1) would be 2.
  PrintFigure("x.y", "GB/s", {1, 2, 4, 2, 4}, {2, 4, 1, 4, 1});
  const std::string line = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(line,
            "{\"name\": \"x.y\", \"value\": 2, \"unit\": \"GB/s\", \"baseline\": 2, "
            "\"ratio\": 0.5, \"rounds\": 5, \"min\": 1, \"max\": 4}\n");
}

TEST(PrintFigureDeathTest, FewerThanFiveRoundsAbort) {
  EXPECT_DEATH(PrintFigure("x.y", "s", {1, 2, 3, 4}, {1, 2, 3, 4}), "x.y has 4 values");
  EXPECT_DEATH(PrintFigure("x.y", "s", {1, 2, 3, 4, 5}, {1, 2, 3, 4}), "x.y has 5 values");
  EXPECT_DEATH(PrintFigureWithoutBaseline("x.z", "s", {1}, "note"), "x.z has 1 values");
}

TEST(PrintFigureTest, WithoutBaselinePrintsNullsAndTheNote) {
  ::testing::internal::CaptureStdout();
  PrintFigureWithoutBaseline("x.z", "s", {3, 1, 2, 5, 4}, "no baseline; goal \"<= 2 s\"");
  const std::string line = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(line, HasSubstr("\"value\": 3,"));
  EXPECT_THAT(line, HasSubstr("\"baseline\": null, \"ratio\": null"));
  EXPECT_THAT(line, HasSubstr("\"note\": \"no baseline; goal \\\"<= 2 s\\\"\"}"));
}

TEST(ProcTest, ThreadsAndCpuOfThisProcess) {
  EXPECT_GE(ThreadsOf(::getpid()), 1);
  const double before = CpuSecondsOf(::getpid());
  ASSERT_GE(before, 0);
  // Busy until the process's CPU time has moved by a clock tick or more.
  volatile double sink = 0;
  while (CpuSecondsOf(::getpid()) <= before) {
    for (int i = 0; i < 100000; ++i) sink = sink + i;
  }
  EXPECT_GT(CpuSecondsOf(::getpid()), before);
  EXPECT_EQ(ThreadsOf(-5), -1);
  EXPECT_EQ(CpuSecondsOf(-5), -1);
}

}  // namespace
}  // namespace bench
}  // namespace overseer

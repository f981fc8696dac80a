#include "testing/child_process.h"

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string TmpPath(const std::string& name) {
  return absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
}

void Append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app);
  out << text;
}

TEST(ChildProcessTest, RunsToItsExitCodeWithOutputInTheFile) {
  const std::string out = TmpPath("exit3.out");
  ChildProcess process({"/bin/sh", "-c", "echo one; echo two >&2; exit 3"}, out);
  ASSERT_TRUE(process.Start().ok());
  absl::StatusOr<int> code = process.WaitForExit(absl::Seconds(60));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 3);
  EXPECT_EQ(process.last_exit_code(), 3);
  EXPECT_FALSE(process.IsRunning());
  EXPECT_EQ(ReadWholeFile(out), "one\ntwo\n");
}

TEST(ChildProcessTest, StderrToItsOwnFileAndRestartsAppend) {
  const std::string out = TmpPath("split.out");
  const std::string err = TmpPath("split.err");
  ChildProcess process({"/bin/sh", "-c", "echo out; echo err >&2"}, out, err);
  for (int run = 0; run < 2; ++run) {
    ASSERT_TRUE(process.Start().ok());
    ASSERT_EQ(*process.WaitForExit(absl::Seconds(60)), 0);
  }
  EXPECT_EQ(ReadWholeFile(out), "out\nout\n");
  EXPECT_EQ(ReadWholeFile(err), "err\nerr\n");
}

TEST(ChildProcessTest, StopWithSigkillReportsMinusOne) {
  ChildProcess process({"/bin/sh", "-c", "exec sleep 600"}, TmpPath("sleep.out"));
  ASSERT_TRUE(process.Start().ok());
  EXPECT_TRUE(process.IsRunning());
  EXPECT_EQ(process.Start().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<int> code = process.Stop(SIGKILL, absl::Seconds(60));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, -1);
  EXPECT_FALSE(process.IsRunning());
  EXPECT_EQ(process.Signal(SIGTERM).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(process.WaitForExit(absl::Seconds(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ChildProcessTest, WaitForExitRunsOutAndLeavesItRunning) {
  ChildProcess process({"/bin/sh", "-c", "exec sleep 600"}, TmpPath("wait.out"));
  ASSERT_TRUE(process.Start().ok());
  absl::StatusOr<int> code = process.WaitForExit(absl::Milliseconds(20));
  EXPECT_EQ(code.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(absl::StrContains(code.status().message(), "still runs")) << code.status();
  EXPECT_TRUE(process.IsRunning());
}

TEST(ChildProcessTest, AnExecFailureExits127) {
  ChildProcess process({TmpPath("no_such_program")}, TmpPath("noexec.out"));
  ASSERT_TRUE(process.Start().ok());
  EXPECT_EQ(*process.WaitForExit(absl::Seconds(60)), 127);
}

TEST(ChildProcessTest, TheEnvironmentReachesTheChild) {
  const std::string out = TmpPath("env.out");
  ChildProcess process({"/bin/sh", "-c", "echo \"$OVERSEER_A $OVERSEER_B\""}, out);
  process.set_env({"OVERSEER_A=one", "OVERSEER_B=two"});
  ASSERT_TRUE(process.Start().ok());
  ASSERT_EQ(*process.WaitForExit(absl::Seconds(60)), 0);
  EXPECT_EQ(ReadWholeFile(out), "one two\n");
}

TEST(ChildProcessTest, WaitForPortFileReturnsThePortsWritten) {
  const std::string port_file = TmpPath("server.port");
  ChildProcess process({"/bin/sh", "-c",
                        absl::StrCat("printf '4242\\n-1\\n' > ", port_file, ".tmp; mv ", port_file,
                                     ".tmp ", port_file, "; exec sleep 600")},
                       TmpPath("server.out"));
  ASSERT_TRUE(process.Start().ok());
  absl::StatusOr<std::vector<int>> ports = process.WaitForPortFile(port_file, absl::Seconds(60));
  ASSERT_TRUE(ports.ok()) << ports.status();
  EXPECT_THAT(*ports, ElementsAre(4242, -1));
}

TEST(ChildProcessTest, WaitForPortFileFailsWithTheLogOfAnExitOrRunsOut) {
  ChildProcess exits({"/bin/sh", "-c", "echo cannot bind >&2; exit 3"}, TmpPath("exits.out"));
  ASSERT_TRUE(exits.Start().ok());
  absl::StatusOr<std::vector<int>> ports =
      exits.WaitForPortFile(TmpPath("exits.port"), absl::Seconds(60));
  EXPECT_EQ(ports.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(ports.status().message(), "exited with code 3")) << ports.status();
  EXPECT_TRUE(absl::StrContains(ports.status().message(), "cannot bind")) << ports.status();

  ChildProcess silent({"/bin/sh", "-c", "exec sleep 600"}, TmpPath("silent.out"));
  ASSERT_TRUE(silent.Start().ok());
  EXPECT_EQ(silent.WaitForPortFile(TmpPath("silent.port"), absl::Milliseconds(20)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(silent.IsRunning());
}

TEST(ChildProcessTest, WaitForLineSeesALineOfStderrOrTheExit) {
  ChildProcess process(
      {"/bin/sh", "-c", "echo out; echo first >&2; echo ready now >&2; exec sleep 600"},
      TmpPath("line.out"), TmpPath("line.err"));
  ASSERT_TRUE(process.Start().ok());
  EXPECT_TRUE(process
                  .WaitForLine([](absl::string_view line) { return line == "ready now"; },
                               absl::Seconds(60))
                  .ok());
  EXPECT_EQ(
      process
          .WaitForLine([](absl::string_view line) { return line == "out"; }, absl::Milliseconds(20))
          .code(),
      absl::StatusCode::kDeadlineExceeded);  // stdout is not its log.
  EXPECT_TRUE(process.Stop(SIGKILL, absl::Seconds(60)).ok());
  EXPECT_EQ(process.WaitForLine([](absl::string_view) { return false; }, absl::Seconds(60)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(process.Output(), "out\nfirst\nready now\n");
}

TEST(FindBinaryTest, InBinDirOrNotFoundNamingWhereItLooked) {
  const std::string dir = TmpPath("bin");
  ::mkdir(dir.c_str(), 0755);
  ::mkdir((dir + "/tool").c_str(), 0755);
  Append(dir + "/tool/server", "#!/bin/sh\n");
  ::chmod((dir + "/tool/server").c_str(), 0755);
  absl::StatusOr<std::string> found = FindBinary(dir, "tool/server");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, dir + "/tool/server");

  absl::StatusOr<std::string> missing = FindBinary(dir, "tool/other");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(missing.status().message(), dir + "/tool/other"))
      << missing.status();
}

TEST(FindBinaryTest, FromTheRunfiles) {
  // This test's own runfiles hold the test binary itself.
  absl::StatusOr<std::string> found = FindBinary("", "testing/child_process_test");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(absl::EndsWith(*found, "/overseer/testing/child_process_test")) << *found;
}

TEST(FileTailTest, ReturnsCompleteNewLinesOnly) {
  const std::string path = TmpPath("tail.txt");
  FileTail tail(path);
  EXPECT_THAT(tail.NewLines(), IsEmpty());  // No file yet.
  Append(path, "abc");
  EXPECT_THAT(tail.NewLines(), IsEmpty());
  Append(path, "def\nxy");
  EXPECT_THAT(tail.NewLines(), ElementsAre("abcdef"));
  Append(path, "z\n\nlast\n");
  EXPECT_THAT(tail.NewLines(), ElementsAre("xyz", "", "last"));
  EXPECT_THAT(tail.NewLines(), IsEmpty());
}

TEST(DirectoryWatchTest, WakesOnAWriteAndTimesOutWithoutOne) {
  const std::string dir = TmpPath("watched");
  ::mkdir(dir.c_str(), 0755);
  absl::StatusOr<std::unique_ptr<DirectoryWatch>> watch = DirectoryWatch::Create(dir);
  ASSERT_TRUE(watch.ok()) << watch.status();
  EXPECT_FALSE((*watch)->Wait(absl::ZeroDuration()));
  Append(dir + "/a.txt", "x");
  EXPECT_TRUE((*watch)->Wait(absl::Seconds(60)));
  EXPECT_FALSE((*watch)->Wait(absl::ZeroDuration()));  // The change was consumed.
  EXPECT_EQ(DirectoryWatch::Create(dir + "/missing").status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace overseer

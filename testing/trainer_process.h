#ifndef OVERSEER_TESTING_TRAINER_PROCESS_H_
#define OVERSEER_TESTING_TRAINER_PROCESS_H_

// A trainer program (tests/replicated_trainer, examples/cluster_trainer) run as a
// process, started at construction, and what it prints read back: its output lines as
// they come, and its "<key>: <value>" lines. Built on ChildProcess
// (testing/child_process.h). The destructor SIGKILLs it if it still runs. Not
// thread-safe.
//
//   TrainerProcess chief("tests/replicated_trainer", "trainer_0", {"--is_chief", ...});
//   ASSERT_EQ(chief.Wait(), 0) << chief.Log();
//   EXPECT_GE(chief.Value("final accuracy"), 0.97);

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "testing/child_process.h"

namespace overseer {

struct TrainerProcessOptions {
  // Where the binary is (e.g. bazel-bin); empty: the running program's runfiles (list
  // the trainer as data of its target). See FindBinary.
  std::string bin_dir;
  // The directory of its output files; empty: $TEST_TMPDIR, or /tmp.
  std::string log_dir;
  // false: stdout and stderr both in <log_dir>/<name>.log. true: stdout in
  // <log_dir>/<name>.out, stderr in <log_dir>/<name>.log.
  bool separate_stderr = false;
};

class TrainerProcess {
 public:
  // Starts `binary` (workspace-relative, e.g. "examples/cluster_trainer") with `args`;
  // `name` names its files. A start failure shows in start_status(), Wait() and Log().
  TrainerProcess(const std::string& binary, const std::string& name, std::vector<std::string> args,
                 TrainerProcessOptions options = {});
  ~TrainerProcess() = default;
  TrainerProcess(const TrainerProcess&) = delete;
  TrainerProcess& operator=(const TrainerProcess&) = delete;

  // OK once started; NOT_FOUND for a missing binary, INTERNAL if it could not start.
  const absl::Status& start_status() const { return start_status_; }

  // Whether it runs (started and not exited; reaps it if it exited).
  bool IsRunning();
  // Waits up to `timeout` for its exit; its exit code, -1 if a signal killed it or it
  // did not start, -3 if it did not exit (it is left running).
  int Wait(absl::Duration timeout = absl::Minutes(10));
  // The exit code of its run once it ended (-1: killed by a signal); -2 before.
  int last_exit_code() const { return process_->last_exit_code(); }
  pid_t pid() const { return process_->pid(); }

  // The complete lines it printed on stdout since the previous call.
  std::vector<std::string> NewLines() { return tail_->NewLines(); }
  // Everything it printed so far, stdout and stderr (and why it did not start, if it
  // did not).
  std::string Log() const;
  // Its stderr so far (with stdout when they share a file).
  std::string ErrorLog() const { return ReadWholeFile(process_->stderr_path()); }

  // The value of the first line "<key>: <value>" of the log, or "".
  std::string Text(const std::string& key) const;
  // That value as a number, or -1.
  double Value(const std::string& key) const;

 private:
  std::unique_ptr<ChildProcess> process_;
  std::unique_ptr<FileTail> tail_;
  absl::Status start_status_;
};

}  // namespace overseer

#endif  // OVERSEER_TESTING_TRAINER_PROCESS_H_

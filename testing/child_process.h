#ifndef OVERSEER_TESTING_CHILD_PROCESS_H_
#define OVERSEER_TESTING_CHILD_PROCESS_H_

// Process management for programs that start Overseer's binaries as processes on this
// machine (the multi-process tests, the benchmarks, the cluster demo): finding a
// binary, running it with its output in a file, signalling it, waiting for its exit
// with a deadline, and reading the lines a process appends to its output file.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace overseer {

// The path of binary `relative` (a workspace-relative path such as
// "master/master_server"): `bin_dir`/`relative` when `bin_dir` is not empty (e.g.
// bazel-bin); otherwise the file in the runfiles of the running program, found
// through $RUNFILES_DIR, $TEST_SRCDIR or <this program>.runfiles. NOT_FOUND naming
// every place looked in when none holds an executable file.
absl::StatusOr<std::string> FindBinary(const std::string& bin_dir, const std::string& relative);

// The whole content of the file at `path`; empty if it cannot be read.
std::string ReadWholeFile(const std::string& path);

// One program run as a child process, possibly several times (Start again after it
// exited: a restart). Its stdout and stderr are appended to files. The destructor
// SIGKILLs it if it still runs. Not thread-safe.
class ChildProcess {
 public:
  // `argv[0]` is the program's path. `stderr_path` empty: stderr goes to `stdout_path`.
  ChildProcess(std::vector<std::string> argv, std::string stdout_path,
               std::string stderr_path = "");
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Forks and executes the program. FAILED_PRECONDITION if it is running; INTERNAL if
  // an output file cannot be opened or fork fails (an exec failure shows as exit 127).
  absl::Status Start();

  // Whether the process was started and has not exited (reaps it if it has).
  bool IsRunning();

  // Sends `signal` without waiting. FAILED_PRECONDITION if it is not running.
  absl::Status Signal(int signal);

  // Waits up to `timeout` for the process to exit; its exit code, or -1 if a signal
  // killed it. DEADLINE_EXCEEDED if it still runs (it is left running);
  // FAILED_PRECONDITION if it is not running. Blocks on a pidfd, not on a sleep loop.
  absl::StatusOr<int> WaitForExit(absl::Duration timeout);

  // Sends `signal` and waits up to `timeout` for the exit; then as WaitForExit.
  absl::StatusOr<int> Stop(int signal, absl::Duration timeout);

  // The exit code of the last run that ended (-1: killed by a signal); -2 if none.
  int last_exit_code() const { return last_exit_code_; }
  pid_t pid() const { return pid_; }
  const std::vector<std::string>& argv() const { return argv_; }
  const std::string& stdout_path() const { return stdout_path_; }
  const std::string& stderr_path() const { return stderr_path_; }

 private:
  void Reaped(int wait_status);

  const std::vector<std::string> argv_;
  const std::string stdout_path_;
  const std::string stderr_path_;
  pid_t pid_ = -1;
  int last_exit_code_ = -2;
};

// Reads the complete lines appended to a file since the previous call (a partial last
// line is kept for the next call). A missing file has no lines yet. Not thread-safe.
class FileTail {
 public:
  explicit FileTail(std::string path) : path_(std::move(path)) {}

  std::vector<std::string> NewLines();

 private:
  const std::string path_;
  long long offset_ = 0;
  std::string partial_;
};

// Wakes a waiter when a file directly in a directory is created or written (inotify),
// so that a program following its children's output files blocks instead of polling.
// Not thread-safe.
class DirectoryWatch {
 public:
  // INTERNAL if the directory cannot be watched.
  static absl::StatusOr<std::unique_ptr<DirectoryWatch>> Create(const std::string& dir);
  ~DirectoryWatch();
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  // Blocks until a file of the directory was created or written since the previous
  // call, or `timeout` passed; returns whether there was a change.
  bool Wait(absl::Duration timeout);

 private:
  explicit DirectoryWatch(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace overseer

#endif  // OVERSEER_TESTING_CHILD_PROCESS_H_

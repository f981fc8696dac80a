#ifndef OVERSEER_TESTING_CHILD_PROCESS_H_
#define OVERSEER_TESTING_CHILD_PROCESS_H_

// The one process launcher of the programs that start Overseer's binaries as processes
// on this machine (the multi-process tests, the benchmarks, the cluster demo): finding a
// binary, running it with argv and environment and its output in files, waiting for
// the port file a server writes (--port_file) or for a line of its output, signalling
// it, waiting for its exit with a deadline, and reading the lines a process appends to
// its output file. No wait here is a fixed sleep: each blocks on the process's exit
// (a pidfd) or on a change of the file it waits for (inotify), with a deadline.

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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

// $TEST_TMPDIR, or /tmp outside a test.
std::string TempDir();

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

  // Variables ("NAME=value") set in the environment of the next Start, over the ones
  // this process has.
  void set_env(std::vector<std::string> env) { env_ = std::move(env); }
  // Whether the child is SIGKILLed when the thread that started it ends (a benchmark's
  // helper process that must never outlive it). Off by default.
  void set_die_with_parent(bool die) { die_with_parent_ = die; }

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

  // Blocks until the process wrote its ports to `port_file` (whole, as
  // core/port_file.h writes it: remove a previous run's file before Start) and returns
  // them in the file's order (a server's: its gRPC port, then its metrics port, -1 when
  // it serves none); the first is positive. INTERNAL with the process's output if it
  // exits first; DEADLINE_EXCEEDED with its output if `timeout` passes first (it is left
  // running).
  absl::StatusOr<std::vector<int>> WaitForPortFile(const std::string& port_file,
                                                   absl::Duration timeout);

  // Blocks until a complete line of the process's stderr file (its stdout file when
  // they are one), read from the file's beginning, makes `matches` true. NOT_FOUND with its output
  // if the process exits without such a line; DEADLINE_EXCEEDED if `timeout` passes first.
  absl::Status WaitForLine(const std::function<bool(absl::string_view line)>& matches,
                           absl::Duration timeout);

  // Everything the process wrote so far: its stdout file, then its stderr file when
  // that is another one.
  std::string Output() const;

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
  std::vector<std::string> env_;
  bool die_with_parent_ = false;
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

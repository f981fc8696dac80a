#ifndef OVERSEER_TESTING_SERVER_PROCESS_H_
#define OVERSEER_TESTING_SERVER_PROCESS_H_

// One server binary (a data dependency of the test) in its own process, on ports it
// binds itself: run with --port=0 --metrics_port=0 and --port_file, its stdout and
// stderr in a file under $TEST_TMPDIR. The constructor blocks until the server wrote its
// port file (or exited), so no test sleeps waiting for it. Built on ChildProcess
// (testing/child_process.h). Not thread-safe.

#include <signal.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "testing/child_process.h"

namespace overseer {
namespace test {

class ServerProcess {
 public:
  // Runs `binary` (workspace-relative, e.g. "checkpoint_store/checkpoint_store_server",
  // found in the runfiles) with `args` plus --port=0 --metrics_port=0 --port_file=...
  // and waits up to a minute for its ports. port() is -1 if it never served (log()
  // says why).
  ServerProcess(const std::string& binary, std::vector<std::string> args);
  // SIGKILLs the server if it still runs.
  ~ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // SIGTERM, then the exit code (-1 if it did not exit normally or within minutes).
  int Terminate() { return SignalAndWait(SIGTERM); }
  // SIGKILL (kill -9); returns once the process is gone.
  void Kill() { SignalAndWait(SIGKILL); }
  // Waits for the process to end by itself; its exit code (-1 if it did not exit
  // normally or within minutes).
  int WaitForExit() { return SignalAndWait(0); }

  // Blocks until a line of its log contains `text`; false if the server exits without
  // one or `timeout` passes first.
  bool WaitForLog(absl::string_view text, absl::Duration timeout = absl::Seconds(60));

  pid_t pid() const { return process_ == nullptr ? -1 : process_->pid(); }
  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  // Everything it wrote so far (its stderr holds its log), and why it did not start.
  std::string log() const;
  std::string target() const;

 private:
  int SignalAndWait(int signal);

  std::unique_ptr<ChildProcess> process_;
  std::string start_error_;
  int port_ = -1;
  int metrics_port_ = -1;
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_TESTING_SERVER_PROCESS_H_

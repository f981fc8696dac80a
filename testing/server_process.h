#ifndef OVERSEER_TESTING_SERVER_PROCESS_H_
#define OVERSEER_TESTING_SERVER_PROCESS_H_

// A server binary (a data dependency of the test) run in its own process with --port=0
// and --metrics_port=0 (the server binds free ports itself). The constructor blocks on the server's
// stderr until its ServerRunner start-up line names the bound ports (or the process exits), so no
// test sleeps waiting for it. Not thread-safe.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace overseer {
namespace test {

class ServerProcess {
 public:
  // Runs $TEST_SRCDIR/overseer/`binary` (e.g. "checkpoint_store/checkpoint_store_server")
  // with `args` plus --port=0 --metrics_port=0. port() is -1 if it never started.
  ServerProcess(const std::string& binary, std::vector<std::string> args) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    const std::string path = absl::StrCat(std::getenv("TEST_SRCDIR"), "/overseer/", binary);
    args.insert(args.begin(), path);
    args.push_back("--port=0");
    args.push_back("--metrics_port=0");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execv(path.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    stderr_ = ::fdopen(fds[0], "r");
    const std::regex listening("serving gRPC on [0-9.]+:([0-9]+), metrics on [0-9.]+:([0-9]+)");
    char line[4096];
    while (std::fgets(line, sizeof(line), stderr_) != nullptr) {
      log_ += line;
      std::cmatch match;
      if (std::regex_search(line, match, listening)) {
        port_ = std::stoi(match[1]);
        metrics_port_ = std::stoi(match[2]);
        break;
      }
    }
  }

  ~ServerProcess() {
    if (pid_ > 0 && !waited_) Kill();
    if (stderr_ != nullptr) std::fclose(stderr_);
  }

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // SIGTERM, then the exit code (-1 if it did not exit normally). Drains stderr.
  int Terminate() { return SignalAndWait(SIGTERM); }

  // SIGKILL (kill -9); returns once the process is gone.
  void Kill() { SignalAndWait(SIGKILL); }

  // Waits for the process to end by itself; its exit code (-1 if it did not exit
  // normally). Drains stderr.
  int WaitForExit() { return SignalAndWait(0); }

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  const std::string& log() const { return log_; }
  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int SignalAndWait(int signal) {
    if (pid_ <= 0 || waited_) return -1;
    if (signal != 0) ::kill(pid_, signal);
    char line[4096];
    while (stderr_ != nullptr && std::fgets(line, sizeof(line), stderr_) != nullptr) log_ += line;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  pid_t pid_ = -1;
  FILE* stderr_ = nullptr;
  std::string log_;
  int port_ = -1;
  int metrics_port_ = -1;
  bool waited_ = false;
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_TESTING_SERVER_PROCESS_H_

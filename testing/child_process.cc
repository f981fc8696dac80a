#include "testing/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace overseer {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

int OpenForAppend(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

// This process's environment with `overrides` ("NAME=value") set over it.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> vars;
  auto set = [&](const std::string& entry) {
    const size_t eq = entry.find('=');
    vars[entry.substr(0, eq)] = entry;
  };
  for (char** e = environ; *e != nullptr; ++e) set(*e);
  for (const std::string& entry : overrides) set(entry);
  std::vector<std::string> env;
  for (auto& [name, entry] : vars) env.push_back(std::move(entry));
  return env;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

absl::StatusOr<std::string> FindBinary(const std::string& bin_dir, const std::string& relative) {
  std::vector<std::string> candidates;
  if (!bin_dir.empty()) {
    candidates.push_back(absl::StrCat(bin_dir, "/", relative));
  } else {
    for (const char* env : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
      const char* dir = std::getenv(env);
      if (dir != nullptr && *dir != '\0')
        candidates.push_back(absl::StrCat(dir, "/overseer/", relative));
    }
    const std::string self = SelfPath();
    if (!self.empty()) candidates.push_back(absl::StrCat(self, ".runfiles/overseer/", relative));
  }
  for (const std::string& path : candidates) {
    if (IsExecutableFile(path)) return path;
  }
  return absl::NotFoundError(
      absl::StrCat("no executable ", relative, " (looked at ", absl::StrJoin(candidates, ", "),
                   "); build it, list it as data of this target, or pass its bazel-bin directory"));
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

ChildProcess::ChildProcess(std::vector<std::string> argv, std::string stdout_path,
                           std::string stderr_path)
    : argv_(std::move(argv)),
      stdout_path_(std::move(stdout_path)),
      stderr_path_(stderr_path.empty() ? stdout_path_ : std::move(stderr_path)) {}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

absl::Status ChildProcess::Start() {
  if (IsRunning()) {
    return absl::FailedPreconditionError(absl::StrCat(argv_[0], " is running (pid ", pid_, ")"));
  }
  const int out_fd = OpenForAppend(stdout_path_);
  if (out_fd < 0) return absl::InternalError("cannot open " + stdout_path_);
  const int err_fd = stderr_path_ == stdout_path_ ? out_fd : OpenForAppend(stderr_path_);
  if (err_fd < 0) {
    ::close(out_fd);
    return absl::InternalError("cannot open " + stderr_path_);
  }
  // Everything the child uses is made before the fork: after it, only system calls.
  std::vector<std::string> args = argv_;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = EnvironmentWith(env_);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (die_with_parent_) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // The parent died before the prctl.
    }
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_fd);
  if (err_fd != out_fd) ::close(err_fd);
  if (pid < 0) return absl::InternalError(absl::StrCat("fork failed for ", argv_[0]));
  pid_ = pid;
  return absl::OkStatus();
}

void ChildProcess::Reaped(int wait_status) {
  pid_ = -1;
  last_exit_code_ = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

bool ChildProcess::IsRunning() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    Reaped(status);
    return false;
  }
  return true;
}

absl::Status ChildProcess::Signal(int signal) {
  if (!IsRunning()) return absl::FailedPreconditionError(argv_[0] + " is not running");
  ::kill(pid_, signal);
  return absl::OkStatus();
}

absl::StatusOr<int> ChildProcess::WaitForExit(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError(argv_[0] + " is not running");
  // A pidfd becomes readable when the process exits: wait for that, not for a time.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      if (pidfd >= 0) ::close(pidfd);
      Reaped(status);
      return last_exit_code_;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    const absl::Duration wait = pidfd >= 0 ? left : std::min(left, absl::Milliseconds(10));
    const int wait_ms =
        static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(wait) + 1, INT_MAX));
    if (pidfd >= 0) {
      pollfd fd{pidfd, POLLIN, 0};
      ::poll(&fd, 1, wait_ms);
    } else {
      ::poll(nullptr, 0, wait_ms);  // An old kernel without pidfd_open.
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return absl::DeadlineExceededError(
      absl::StrCat(argv_[0], " (pid ", pid_, ") still runs after ", absl::FormatDuration(timeout)));
}

absl::StatusOr<int> ChildProcess::Stop(int signal, absl::Duration timeout) {
  absl::Status sent = Signal(signal);
  if (!sent.ok()) return sent;
  return WaitForExit(timeout);
}

std::string ChildProcess::Output() const {
  std::string output = ReadWholeFile(stdout_path_);
  if (stderr_path_ != stdout_path_) output += ReadWholeFile(stderr_path_);
  return output;
}

absl::StatusOr<std::vector<int>> ChildProcess::WaitForPortFile(const std::string& port_file,
                                                               absl::Duration timeout) {
  absl::StatusOr<std::unique_ptr<DirectoryWatch>> watch =
      DirectoryWatch::Create(DirectoryOf(port_file));
  if (!watch.ok()) return watch.status();
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    // The server writes its port file whole (renamed into place) once it listens.
    std::istringstream in(ReadWholeFile(port_file));
    std::vector<int> ports;
    for (int port; in >> port;) ports.push_back(port);
    if (!ports.empty() && ports[0] > 0) return ports;
    if (!IsRunning()) {
      return absl::InternalError(absl::StrCat(absl::StrJoin(argv_, " "), " exited with code ",
                                              last_exit_code_, " before serving; its log:\n",
                                              Output()));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(argv_[0], " wrote no port file (", port_file,
                                                      ") within ", absl::FormatDuration(timeout),
                                                      "; its log:\n", Output()));
    }
    // Woken by the port file's creation (or any other file of its directory); the bound
    // only limits how late an exit without output is noticed.
    (*watch)->Wait(std::min(deadline - absl::Now(), absl::Milliseconds(100)));
  }
}

absl::Status ChildProcess::WaitForLine(const std::function<bool(absl::string_view line)>& matches,
                                       absl::Duration timeout) {
  absl::StatusOr<std::unique_ptr<DirectoryWatch>> watch =
      DirectoryWatch::Create(DirectoryOf(stderr_path_));
  if (!watch.ok()) return watch.status();
  FileTail tail(stderr_path_);
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    // Whether it runs is read before its lines, so that an exit's last lines are seen.
    const bool running = IsRunning();
    for (const std::string& line : tail.NewLines()) {
      if (matches(line)) return absl::OkStatus();
    }
    if (!running) {
      return absl::NotFoundError(absl::StrCat(argv_[0], " exited with code ", last_exit_code_,
                                              " without the line awaited; its log:\n", Output()));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(argv_[0], " did not write the line awaited within ",
                       absl::FormatDuration(timeout), "; its log:\n", Output()));
    }
    (*watch)->Wait(std::min(deadline - absl::Now(), absl::Milliseconds(100)));
  }
}

std::vector<std::string> FileTail::NewLines() {
  std::vector<std::string> lines;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return lines;
  in.seekg(0, std::ios::end);
  const long long size = static_cast<long long>(in.tellg());
  if (size <= offset_) return lines;
  in.seekg(offset_);
  std::string chunk(static_cast<size_t>(size - offset_), '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  offset_ += static_cast<long long>(chunk.size());
  partial_ += chunk;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(partial_.substr(start, nl - start));
  }
  partial_.erase(0, start);
  return lines;
}

absl::StatusOr<std::unique_ptr<DirectoryWatch>> DirectoryWatch::Create(const std::string& dir) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return absl::InternalError("inotify_init1 failed");
  if (::inotify_add_watch(fd, dir.c_str(), IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE) < 0) {
    ::close(fd);
    return absl::InternalError("cannot watch directory " + dir);
  }
  return std::unique_ptr<DirectoryWatch>(new DirectoryWatch(fd));
}

DirectoryWatch::~DirectoryWatch() { ::close(fd_); }

bool DirectoryWatch::Wait(absl::Duration timeout) {
  pollfd fd{fd_, POLLIN, 0};
  const int wait_ms =
      static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 0, INT_MAX));
  if (::poll(&fd, 1, wait_ms) <= 0) return false;
  char events[4096];
  while (::read(fd_, events, sizeof(events)) > 0) {
  }
  return true;
}

}  // namespace overseer

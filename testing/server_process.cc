#include "testing/server_process.h"

#include <signal.h>

#include <atomic>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace overseer {
namespace test {
namespace {

// How long a server may take to start or to exit; far beyond any test's.
constexpr absl::Duration kTimeout = absl::Minutes(5);

// The file name of a path.
std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

ServerProcess::ServerProcess(const std::string& binary, std::vector<std::string> args) {
  // Each server of this process has its own files in the test's directory.
  static std::atomic<int> next{0};
  const std::string base = absl::StrCat(TempDir(), "/", BaseName(binary), "_", next++);
  absl::StatusOr<std::string> path = FindBinary("", binary);
  if (!path.ok()) {
    start_error_ = path.status().ToString();
    return;
  }
  const std::string port_file = base + ".port";
  std::remove(port_file.c_str());
  args.insert(args.begin(), *path);
  args.push_back("--port=0");
  args.push_back("--metrics_port=0");
  args.push_back("--port_file=" + port_file);
  process_ = std::make_unique<ChildProcess>(std::move(args), base + ".log");
  if (absl::Status started = process_->Start(); !started.ok()) {
    start_error_ = started.ToString();
    return;
  }
  absl::StatusOr<std::vector<int>> ports = process_->WaitForPortFile(port_file, kTimeout);
  if (!ports.ok()) {
    start_error_ = std::string(ports.status().message().substr(
        0, ports.status().message().find("; its log:")));  // The log follows anyway.
    return;
  }
  port_ = (*ports)[0];
  metrics_port_ = ports->size() > 1 ? (*ports)[1] : -1;
}

bool ServerProcess::WaitForLog(absl::string_view text, absl::Duration timeout) {
  if (process_ == nullptr) return false;
  absl::Status found = process_->WaitForLine(
      [&](absl::string_view line) { return absl::StrContains(line, text); }, timeout);
  return found.ok();
}

std::string ServerProcess::log() const {
  const std::string output = process_ == nullptr ? "" : process_->Output();
  return start_error_.empty() ? output : absl::StrCat("not serving: ", start_error_, "\n", output);
}

std::string ServerProcess::target() const { return absl::StrCat("127.0.0.1:", port_); }

int ServerProcess::SignalAndWait(int signal) {
  if (process_ == nullptr) return -1;
  if (!process_->IsRunning())
    return process_->last_exit_code() == -2 ? -1 : process_->last_exit_code();
  absl::StatusOr<int> code =
      signal == 0 ? process_->WaitForExit(kTimeout) : process_->Stop(signal, kTimeout);
  return code.ok() ? *code : -1;
}

}  // namespace test
}  // namespace overseer

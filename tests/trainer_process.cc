#include "tests/trainer_process.h"

#include <cstdlib>
#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace overseer {
namespace test {

TrainerProcess::TrainerProcess(const std::string& name, std::vector<std::string> args) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string log_path = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name, ".log");
  absl::StatusOr<std::string> path = FindBinary("", "tests/replicated_trainer");
  args.insert(args.begin(), path.ok() ? *path : "tests/replicated_trainer");
  process_ = std::make_unique<ChildProcess>(std::move(args), log_path);
  const absl::Status started = path.ok() ? process_->Start() : path.status();
  if (!started.ok()) start_error_ = started.ToString();
}

int TrainerProcess::Wait() {
  if (!start_error_.empty()) return -1;
  if (!process_->IsRunning()) return process_->last_exit_code();
  absl::StatusOr<int> code = process_->WaitForExit(absl::Minutes(10));
  return code.ok() ? *code : -3;
}

std::string TrainerProcess::Log() const {
  const std::string log = ReadWholeFile(process_->stdout_path());
  return start_error_.empty() ? log : absl::StrCat("not started: ", start_error_, "\n", log);
}

std::string TrainerProcess::Text(const std::string& key) const {
  std::smatch m;
  const std::string log = Log();
  if (!std::regex_search(log, m, std::regex("(?:^|\\n)" + key + ": (\\S+)"))) return "";
  return m[1];
}

double TrainerProcess::Value(const std::string& key) const {
  double value = -1;
  if (!absl::SimpleAtod(Text(key), &value)) return -1;
  return value;
}

}  // namespace test
}  // namespace overseer

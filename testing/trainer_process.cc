#include "testing/trainer_process.h"

#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace overseer {

TrainerProcess::TrainerProcess(const std::string& binary, const std::string& name,
                               std::vector<std::string> args, TrainerProcessOptions options) {
  const std::string base =
      absl::StrCat(options.log_dir.empty() ? TempDir() : options.log_dir, "/", name);
  const std::string stdout_path = options.separate_stderr ? base + ".out" : base + ".log";
  absl::StatusOr<std::string> path = FindBinary(options.bin_dir, binary);
  args.insert(args.begin(), path.ok() ? *path : binary);
  process_ = std::make_unique<ChildProcess>(std::move(args), stdout_path, base + ".log");
  tail_ = std::make_unique<FileTail>(stdout_path);
  start_status_ = path.ok() ? process_->Start() : path.status();
}

bool TrainerProcess::IsRunning() { return process_->IsRunning(); }

int TrainerProcess::Wait(absl::Duration timeout) {
  if (!start_status_.ok()) return -1;
  if (!process_->IsRunning()) return process_->last_exit_code();
  absl::StatusOr<int> code = process_->WaitForExit(timeout);
  return code.ok() ? *code : -3;
}

std::string TrainerProcess::Log() const {
  const std::string log = process_->Output();
  return start_status_.ok() ? log
                            : absl::StrCat("not started: ", start_status_.ToString(), "\n", log);
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

}  // namespace overseer

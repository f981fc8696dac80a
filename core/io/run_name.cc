#include "core/io/run_name.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace overseer {
namespace {

constexpr size_t kMaxRunNameLength = 512;

bool IsRunChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

absl::Status ValidateRunName(absl::string_view run) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid run name '", run, "': ", why, "; use segments of [A-Za-z0-9._-] joined by '/'"));
  };
  if (run.empty()) return bad("it is empty");
  if (run.size() > kMaxRunNameLength) {
    return bad(absl::StrCat("it is longer than ", kMaxRunNameLength, " bytes"));
  }
  if (run.front() == '/') return bad("it is absolute");
  for (absl::string_view segment : absl::StrSplit(run, '/')) {
    if (segment.empty()) return bad("it has an empty segment");
    if (segment == "." || segment == "..") {
      return bad(absl::StrCat("segment '", segment, "' is not allowed"));
    }
    for (char c : segment) {
      if (!IsRunChar(c)) return bad("it contains a character outside [A-Za-z0-9._-/]");
    }
  }
  return absl::OkStatus();
}

std::string RunDirectory(absl::string_view logdir, absl::string_view run) {
  return absl::StrCat(logdir, "/", run);
}

}  // namespace overseer

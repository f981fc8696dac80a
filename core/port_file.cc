#include "core/port_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace overseer {

absl::Status WritePortFile(const std::string& path, const std::vector<int>& ports) {
  std::string content;
  for (int port : ports) absl::StrAppend(&content, port, "\n");
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  FILE* file = std::fopen(tmp.c_str(), "w");
  if (file == nullptr) {
    return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
  }
  const bool written = std::fputs(content.c_str(), file) >= 0;
  if (std::fclose(file) != 0 || !written || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string error = std::strerror(errno);
    std::remove(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace overseer

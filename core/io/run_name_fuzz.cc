// Fuzzes run-name validation, which stands between a client's run name and a path on
// the checkpoint store's and summary writer's disks: any input gets a status, never a
// crash, and a name that passes stays inside the root it is joined to.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/io/run_name.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view run(reinterpret_cast<const char*>(data), size);
  if (!overseer::ValidateRunName(run).ok()) return 0;
  const std::string dir = overseer::RunDirectory("/root", run);
  if (!absl::StartsWith(dir, "/root/")) std::abort();
  for (absl::string_view part : absl::StrSplit(absl::string_view(dir).substr(6), '/')) {
    // No way up or sideways, nothing a shell or a log line would misread.
    if (part.empty() || part == "." || part == "..") std::abort();
    for (char c : part) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
    }
  }
  return 0;
}

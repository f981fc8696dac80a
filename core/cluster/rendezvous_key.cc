#include "core/cluster/rendezvous_key.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace overseer {

std::string MakeRendezvousKey(absl::string_view src_device, uint64_t src_incarnation,
                              absl::string_view dst_device, absl::string_view tensor_name) {
  return absl::StrCat(src_device, ";", absl::Hex(src_incarnation, absl::kZeroPad16), ";",
                      dst_device, ";", tensor_name, ";0:0");
}

absl::StatusOr<ParsedRendezvousKey> ParseRendezvousKey(absl::string_view key) {
  std::vector<absl::string_view> parts = absl::StrSplit(key, ';');
  ParsedRendezvousKey out;
  if (parts.size() != 5 || parts[0].empty() || parts[2].empty() || parts[3].empty() ||
      !absl::SimpleHexAtoi(parts[1], &out.src_incarnation)) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed rendezvous key '", key,
                     "' (expected <src_device>;<incarnation hex>;<dst_device>;<tensor_name>;0:0)"));
  }
  out.src_device = std::string(parts[0]);
  out.dst_device = std::string(parts[2]);
  out.tensor_name = std::string(parts[3]);
  return out;
}

}  // namespace overseer

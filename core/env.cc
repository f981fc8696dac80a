#include "core/env.h"

#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"

namespace overseer {

bool EnvSwitchedOff(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return false;
  const std::string v = absl::AsciiStrToLower(value);
  return v == "0" || v == "false" || v == "no" || v == "off";
}

}  // namespace overseer

#ifndef OVERSEER_CORE_PORT_FILE_H_
#define OVERSEER_CORE_PORT_FILE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace overseer {

// Writes the ports a process bound to `path`, one per line in the order given, through a
// temporary file renamed over it: a launcher polling for the file sees either no file or
// all of it. INTERNAL naming the path when it cannot be written.
absl::Status WritePortFile(const std::string& path, const std::vector<int>& ports);

}  // namespace overseer

#endif  // OVERSEER_CORE_PORT_FILE_H_

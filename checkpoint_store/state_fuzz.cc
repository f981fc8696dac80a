// Fuzzes the files a checkpoint store reads from a run directory it did not write
// (or that a crash left half-written): the "checkpoint" state file, and a tensor
// bundle. The input is one file's bytes after a selector byte: 's' the state file;
// 'b' a bundle, a 4-byte little-endian index length, the index, then the data of its
// single shard. Any bytes get a status, never a crash; every tensor a bundle lists is
// read (CRC-checked) without reading past its shard.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/string_view.h"
#include "checkpoint_store/bundle.h"
#include "checkpoint_store/state_file.h"
#include "core/io/file_system.h"

namespace {

// A directory of this process's own, for the files of one input at a time.
const std::string& Dir() {
  static const std::string* dir = [] {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/state_fuzz.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    return new std::string(pattern);
  }();
  return *dir;
}

// Replaces `path` with `bytes` (no fsync: these files need not survive a crash, and
// the fuzzer writes thousands a second).
void Write(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.good()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const absl::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  overseer::FileSystem* fs = overseer::FileSystem::Posix();
  if (data[0] == 's') {
    Write(Dir() + "/checkpoint", input);
    (void)overseer::ReadStateFile(fs, Dir());
  } else if (data[0] == 'b' && input.size() >= 4) {
    const uint32_t index_size = static_cast<uint8_t>(input[0]) |
                                (static_cast<uint32_t>(static_cast<uint8_t>(input[1])) << 8) |
                                (static_cast<uint32_t>(static_cast<uint8_t>(input[2])) << 16) |
                                (static_cast<uint32_t>(static_cast<uint8_t>(input[3])) << 24);
    const absl::string_view rest = input.substr(4);
    if (index_size > rest.size()) return 0;
    const std::string prefix = Dir() + "/model.ckpt-1";
    Write(prefix + ".index", rest.substr(0, index_size));
    Write(prefix + ".data-00000-of-00001", rest.substr(index_size));
    auto reader = overseer::BundleReader::Open(fs, prefix);
    if (reader.ok()) {
      for (const auto& entry : (*reader)->entries()) (void)(*reader)->ReadTensor(entry.first);
    }
  }
  return 0;
}

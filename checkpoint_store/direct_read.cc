#include "checkpoint_store/direct_read.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint_store/bundle.h"
#include "core/env.h"
#include "core/io/crc32c.h"

namespace overseer {
namespace {

// Each reader thread reads one piece at a time; kReaders pieces are in flight.
constexpr uint64_t kPieceBytes = uint64_t{8} << 20;
constexpr int kReaders = 4;

bool DirectReadsEnabled() {
  static const bool enabled = !EnvSwitchedOff("OVERSEER_CHECKPOINT_DIRECT_READS");
  return enabled;
}

// Whether at least half of the pages of the range are in the page cache. The range is
// mapped (never touched) only to ask mincore; false if that fails.
bool MostlyCached(int fd, uint64_t offset, uint64_t size) {
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (map == MAP_FAILED) return false;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  bool cached = false;
  if (::mincore(map, size, resident.data()) == 0) {
    const auto in_cache = std::count_if(resident.begin(), resident.end(),
                                        [](unsigned char r) { return (r & 1) != 0; });
    cached = 2 * static_cast<uint64_t>(in_cache) >= resident.size();
  }
  ::munmap(map, size);
  return cached;
}

// Sets O_DIRECT on a descriptor for its lifetime, then restores the flags.
class DirectMode {
 public:
  explicit DirectMode(int fd) : fd_(fd), flags_(::fcntl(fd, F_GETFL)) {
    on_ = flags_ >= 0 && ::fcntl(fd, F_SETFL, flags_ | O_DIRECT) == 0;
  }
  ~DirectMode() {
    if (on_) ::fcntl(fd_, F_SETFL, flags_);
  }
  DirectMode(const DirectMode&) = delete;
  DirectMode& operator=(const DirectMode&) = delete;
  bool on() const { return on_; }

 private:
  const int fd_;
  const int flags_;
  bool on_ = false;
};

// What a pread loop over [offset, offset + n) got: the bytes before the file ended or
// an error, and the errno of that error (0 if none).
struct ReadResult {
  uint64_t got = 0;
  int error = 0;
};

ReadResult PreadFully(int fd, char* dst, uint64_t n, uint64_t offset) {
  ReadResult result;
  while (result.got < n) {
    const ssize_t r =
        ::pread(fd, dst + result.got, n - result.got, static_cast<off_t>(offset + result.got));
    if (r < 0 && errno == EINTR) continue;
    // O_DIRECT refuses a read that starts inside the block where the file ends.
    if (r < 0 && errno == EINVAL && result.got > 0) break;
    if (r < 0) {
      result.error = errno;
      break;
    }
    if (r == 0) break;
    result.got += static_cast<uint64_t>(r);
  }
  return result;
}

// One piece of a direct read, filled in by the reader that read it.
struct Piece {
  bool done = false;
  ReadResult result;
};

bool Aligned(uint64_t value) { return value % kDirectReadAlignment == 0; }

}  // namespace

bool ShouldReadDirect(int fd, uint64_t offset, uint64_t size) {
  return DirectReadsEnabled() && size >= kDirectReadMinBytes && Aligned(offset) &&
         !MostlyCached(fd, offset, size);
}

absl::Status ReadVerifiedTensorDirect(int fd, const std::string& path, absl::string_view name,
                                      uint64_t offset, uint64_t size, uint32_t masked_crc32c,
                                      char* dst) {
  if (!Aligned(offset) || !Aligned(reinterpret_cast<uintptr_t>(dst))) {
    return absl::FailedPreconditionError(
        absl::StrCat("tensor ", name, " of ", path, " is not aligned for direct reads"));
  }
  const DirectMode direct(fd);
  if (!direct.on()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", path, " with O_DIRECT: ", std::strerror(errno)));
  }
  // The whole blocks go straight into `dst`, piece by piece; the last partial block
  // (if any) through an aligned bounce buffer.
  const uint64_t bulk = size / kDirectReadAlignment * kDirectReadAlignment;
  const size_t pieces = static_cast<size_t>((bulk + kPieceBytes - 1) / kPieceBytes);
  std::vector<Piece> state(pieces);
  absl::Mutex mu;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto read_pieces = [&] {
    for (size_t i; !stop.load() && (i = next.fetch_add(1)) < pieces;) {
      const uint64_t begin = i * kPieceBytes;
      const ReadResult result =
          PreadFully(fd, dst + begin, std::min(kPieceBytes, bulk - begin), offset + begin);
      absl::MutexLock lock(&mu);
      state[i] = Piece{true, result};
    }
  };
  std::vector<std::thread> readers;
  for (size_t t = 0; t < std::min<size_t>(kReaders, pieces); ++t) readers.emplace_back(read_pieces);

  uint32_t crc = 0;
  absl::Status status;
  for (size_t i = 0; i < pieces && status.ok(); ++i) {
    ReadResult result;
    {
      absl::MutexLock lock(&mu);
      mu.Await(absl::Condition(
          +[](Piece* p) { return p->done; }, &state[i]));
      result = state[i].result;
    }
    const uint64_t begin = i * kPieceBytes;
    const uint64_t n = std::min(kPieceBytes, bulk - begin);
    if (result.error == EINVAL && i == 0 && result.got == 0) {
      status = absl::FailedPreconditionError(
          absl::StrCat("the file system refuses direct reads of ", path));
    } else if (result.error != 0) {
      status = absl::DataLossError(
          absl::StrCat("cannot read data file ", path, ": ", std::strerror(result.error)));
    } else if (result.got < n) {
      status = TruncatedTensorError(path, name, offset, size, begin + result.got);
    } else {
      crc = crc32c::Extend(crc, absl::string_view(dst + begin, n));
    }
  }
  stop.store(true);
  for (std::thread& reader : readers) reader.join();
  if (!status.ok()) return status;

  if (bulk < size) {
    const uint64_t tail = size - bulk;
    std::unique_ptr<char, decltype(&std::free)> block(
        static_cast<char*>(std::aligned_alloc(kDirectReadAlignment, kDirectReadAlignment)),
        &std::free);
    if (block == nullptr) return absl::ResourceExhaustedError("out of memory for a direct read");
    const ReadResult result = PreadFully(fd, block.get(), kDirectReadAlignment, offset + bulk);
    if (result.error != 0) {
      return absl::DataLossError(
          absl::StrCat("cannot read data file ", path, ": ", std::strerror(result.error)));
    }
    if (result.got < tail) return TruncatedTensorError(path, name, offset, size, bulk + result.got);
    std::memcpy(dst + bulk, block.get(), tail);
    crc = crc32c::Extend(crc, absl::string_view(dst + bulk, tail));
  }
  return CheckTensorCrc(path, name, masked_crc32c, crc);
}

}  // namespace overseer

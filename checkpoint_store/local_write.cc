#include "checkpoint_store/local_write.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "checkpoint_store/bundle.h"
#include "core/env.h"
#include "core/io/crc32c.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// O_DIRECT requests start and end at multiples of this, from memory aligned to it.
constexpr size_t kBlock = 4096;
static_assert(kTensorAlignment == kBlock, "aligned tensors start on a block");
// The staging buffer: small tensors, unaligned memory, padding.
constexpr size_t kStageBytes = size_t{4} << 20;

bool Aligned(uintptr_t x) { return x % kBlock == 0; }

}  // namespace

void LocalDataFileWriter::FreeDeleter::operator()(char* p) const { std::free(p); }

LocalDataFileWriter::LocalDataFileWriter(UniqueFd fd, std::string path)
    : fd_(std::move(fd)), path_(std::move(path)) {
  if (EnvSwitchedOff("OVERSEER_CHECKPOINT_DIRECT_WRITES")) return;
  const int flags = ::fcntl(fd_.get(), F_GETFL);
  direct_ = flags >= 0 && ::fcntl(fd_.get(), F_SETFL, flags | O_DIRECT) == 0;
}

LocalDataFileWriter::~LocalDataFileWriter() = default;

absl::Status LocalDataFileWriter::BeginTensor(const TensorHeader& header) {
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(path_, " is finished"));
  RETURN_IF_ERROR(FinishTensor());
  RETURN_IF_ERROR(ValidateTensorHeader(header));
  if (!names_.insert(header.name()).second) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", header.name(), " is written twice to ", path_));
  }
  if (header.size() >= kAlignedTensorBytes) {
    // DataFileWriter's zeros up to the boundary; then the staged bytes end on a block,
    // and the tensor can go out from its own memory.
    if (offset_ % kTensorAlignment != 0) {
      RETURN_IF_ERROR(Put(nullptr, kTensorAlignment - offset_ % kTensorAlignment));
    }
    RETURN_IF_ERROR(Flush());
  }
  LocalWrittenTensor& t = tensors_.emplace_back();
  *t.mutable_tensor() = header;
  t.set_offset(offset_);
  remaining_ = header.size();
  crc_ = 0;
  in_tensor_ = true;
  return remaining_ == 0 ? FinishTensor() : absl::OkStatus();
}

absl::Status LocalDataFileWriter::Append(absl::string_view data) {
  if (data.empty()) return absl::OkStatus();
  if (!in_tensor_ || static_cast<int64_t>(data.size()) > remaining_) {
    return absl::InvalidArgumentError(
        absl::StrCat(data.size(), " bytes written to ", path_, " beyond the declared size of ",
                     in_tensor_ ? absl::StrCat("tensor ", tensors_.back().tensor().name())
                                : std::string("any tensor")));
  }
  crc_ = crc32c::Extend(crc_, data);
  RETURN_IF_ERROR(Put(data.data(), data.size()));
  remaining_ -= static_cast<int64_t>(data.size());
  return absl::OkStatus();
}

absl::Status LocalDataFileWriter::FinishTensor() {
  if (!in_tensor_) return absl::OkStatus();
  if (remaining_ > 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", tensors_.back().tensor().name(),
                                                   " in ", path_, " ended ", remaining_,
                                                   " bytes short of its size"));
  }
  tensors_.back().set_crc32c(crc32c::Mask(crc_));
  in_tensor_ = false;
  return absl::OkStatus();
}

absl::Status LocalDataFileWriter::Finish() {
  if (finished_) return absl::OkStatus();
  RETURN_IF_ERROR(FinishTensor());
  RETURN_IF_ERROR(Flush());
  // The last block was padded with zeros.
  if (::ftruncate(fd_.get(), offset_) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot cut ", path_, " to ", offset_, " bytes: ", std::strerror(errno)));
  }
  finished_ = true;
  return absl::OkStatus();
}

absl::Status LocalDataFileWriter::Put(const char* data, size_t n) {
  while (n > 0) {
    // Nothing staged means offset_ is on a block (see Flush).
    if (staged_ == 0 && data != nullptr && n >= kBlock &&
        Aligned(reinterpret_cast<uintptr_t>(data))) {
      const size_t whole = n - n % kBlock;
      RETURN_IF_ERROR(WriteAt(data, whole, offset_));
      offset_ += static_cast<int64_t>(whole);
      stage_offset_ = offset_;
      data += whole;
      n -= whole;
      continue;
    }
    if (stage_ == nullptr) {
      void* p = nullptr;
      if (::posix_memalign(&p, kBlock, kStageBytes) != 0) {
        return absl::ResourceExhaustedError(
            absl::StrCat("cannot allocate a staging buffer for ", path_));
      }
      stage_.reset(static_cast<char*>(p));
    }
    const size_t m = std::min(n, kStageBytes - staged_);
    if (data != nullptr) {
      std::memcpy(stage_.get() + staged_, data, m);
      data += m;
    } else {
      std::memset(stage_.get() + staged_, 0, m);
    }
    staged_ += m;
    offset_ += static_cast<int64_t>(m);
    n -= m;
    if (staged_ == kStageBytes) RETURN_IF_ERROR(Flush());
  }
  return absl::OkStatus();
}

absl::Status LocalDataFileWriter::Flush() {
  if (staged_ == 0) return absl::OkStatus();
  // Only the file's last block is ever partial: every other flush ends on a block.
  const size_t padded = (staged_ + kBlock - 1) / kBlock * kBlock;
  std::memset(stage_.get() + staged_, 0, padded - staged_);
  RETURN_IF_ERROR(WriteAt(stage_.get(), padded, stage_offset_));
  staged_ = 0;
  stage_offset_ = offset_;
  return absl::OkStatus();
}

absl::Status LocalDataFileWriter::WriteAt(const char* data, size_t n, int64_t offset) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_.get(), data, n, offset);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EINVAL && direct_) {
      // The file system refuses this request's alignment after all: write through the
      // page cache from here on.
      const int flags = ::fcntl(fd_.get(), F_GETFL);
      if (flags >= 0 && ::fcntl(fd_.get(), F_SETFL, flags & ~O_DIRECT) == 0) {
        direct_ = false;
        continue;
      }
    }
    if (w <= 0) {
      return absl::InternalError(absl::StrCat("cannot write ", n, " bytes at offset ", offset,
                                              " of ", path_, ": ",
                                              w < 0 ? std::strerror(errno) : "no progress"));
    }
    data += w;
    n -= static_cast<size_t>(w);
    offset += w;
  }
  return absl::OkStatus();
}

}  // namespace overseer

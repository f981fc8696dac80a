// Direct (O_DIRECT) reads of large tensors: bytes and CRC32C as the page-cache path
// reads them, the same DATA_LOSS errors, nothing left in the page cache, and
// FAILED_PRECONDITION (the caller's cue to read through the page cache) whenever a
// direct read cannot be made.

#include "checkpoint_store/direct_read.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/io/crc32c.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

// A tensor of 20 MiB + 123 bytes (whole pieces, a partial piece and a partial block)
// at offset 4096 of its data file.
constexpr uint64_t kOffset = 4096;
constexpr uint64_t kSize = (uint64_t{20} << 20) + 123;

class DirectReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name(), ".data");
    data_.resize(kSize);
    for (uint64_t i = 0; i < kSize; ++i) data_[i] = static_cast<char>((i * 7919) >> 3);
    WriteFile(kOffset + kSize);
    // aligned_alloc wants a multiple of the alignment (ASan enforces it).
    constexpr uint64_t kDstBytes =
        (kSize + 4096 * 2 + kDirectReadAlignment - 1) / kDirectReadAlignment * kDirectReadAlignment;
    dst_.reset(static_cast<char*>(std::aligned_alloc(kDirectReadAlignment, kDstBytes)));
  }

  // Writes 4096 bytes of 0xAB, then the tensor, cut at `length` bytes; fsyncs the file
  // and drops it from the page cache.
  void WriteFile(uint64_t length) {
    std::string contents(kOffset, '\xAB');
    contents += data_;
    contents.resize(length);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
    ASSERT_EQ(::fsync(fd), 0);
    ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    ::close(fd);
  }

  int Open() {
    fd_ = ::open(path_.c_str(), O_RDONLY);
    EXPECT_GE(fd_, 0);
    return fd_;
  }

  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Read(uint32_t masked_crc, char* dst) {
    if (fd_ < 0) Open();
    return ReadVerifiedTensorDirect(fd_, path_, "layer/weights", kOffset, kSize, masked_crc, dst);
  }

  uint32_t Crc() const { return crc32c::Mask(crc32c::Value(data_)); }

  // Pages of the tensor's range in the page cache.
  uint64_t CachedPages() {
    void* map = ::mmap(nullptr, kSize, PROT_READ, MAP_SHARED, fd_, kOffset);
    EXPECT_NE(map, MAP_FAILED);
    std::vector<unsigned char> resident((kSize + 4095) / 4096);
    EXPECT_EQ(::mincore(map, kSize, resident.data()), 0);
    ::munmap(map, kSize);
    uint64_t n = 0;
    for (unsigned char r : resident) n += r & 1;
    return n;
  }

  std::string path_;
  std::string data_;
  std::unique_ptr<char, decltype(&std::free)> dst_{nullptr, &std::free};
  int fd_ = -1;
};

TEST_F(DirectReadTest, ReadsTheTensorPastThePageCache) {
  const absl::Status read = Read(Crc(), dst_.get());
  if (absl::IsFailedPrecondition(read)) GTEST_SKIP() << "no direct I/O here: " << read;
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(std::memcmp(dst_.get(), data_.data(), kSize), 0);
  // The bytes came from the disk, not through the page cache (only the partial last
  // block may be there), and the descriptor is back to its own flags.
  EXPECT_LE(CachedPages(), 1u);
  EXPECT_EQ(::fcntl(fd_, F_GETFL) & O_DIRECT, 0);
}

TEST_F(DirectReadTest, ShouldReadDirectOnlyLargeAlignedUncachedTensors) {
  const int fd = Open();
  EXPECT_TRUE(ShouldReadDirect(fd, kOffset, kSize));
  EXPECT_FALSE(ShouldReadDirect(fd, kOffset + 1, kSize - 1));               // Unaligned.
  EXPECT_FALSE(ShouldReadDirect(fd, kOffset, kDirectReadMinBytes - 4096));  // Small.
  std::vector<char> buffer(kSize);
  ASSERT_EQ(::pread(fd, buffer.data(), kSize, kOffset), static_cast<ssize_t>(kSize));
  EXPECT_FALSE(ShouldReadDirect(fd, kOffset, kSize));  // Now in the page cache.
}

TEST_F(DirectReadTest, ACorruptByteIsDataLossNamingTensorAndFile) {
  data_[kSize / 2] ^= 0x20;
  const uint32_t crc_of_written = crc32c::Mask(crc32c::Value(data_));
  data_[kSize / 2] ^= 0x20;  // The file holds the original; the entry claims otherwise.
  const absl::Status read = Read(crc_of_written, dst_.get());
  if (absl::IsFailedPrecondition(read)) GTEST_SKIP() << "no direct I/O here: " << read;
  EXPECT_TRUE(absl::IsDataLoss(read)) << read;
  EXPECT_NE(read.message().find("checksum of tensor layer/weights does not match in " + path_),
            std::string::npos)
      << read;
}

TEST_F(DirectReadTest, AFileEndingInsideAPieceIsTruncated) {
  WriteFile(kOffset + (uint64_t{10} << 20) + 5);
  const absl::Status read = Read(Crc(), dst_.get());
  if (absl::IsFailedPrecondition(read)) GTEST_SKIP() << "no direct I/O here: " << read;
  EXPECT_TRUE(absl::IsDataLoss(read)) << read;
  EXPECT_NE(read.message().find(absl::StrCat("data file ", path_,
                                             " is truncated: tensor "
                                             "layer/weights needs bytes [4096, ",
                                             kOffset + kSize, "), got ", (10 << 20) + 5)),
            std::string::npos)
      << read;
}

TEST_F(DirectReadTest, AFileEndingInsideTheLastBlockIsTruncated) {
  WriteFile(kOffset + kSize - 100);
  const absl::Status read = Read(Crc(), dst_.get());
  if (absl::IsFailedPrecondition(read)) GTEST_SKIP() << "no direct I/O here: " << read;
  EXPECT_TRUE(absl::IsDataLoss(read)) << read;
  EXPECT_NE(read.message().find(absl::StrCat("got ", kSize - 100)), std::string::npos) << read;
}

TEST_F(DirectReadTest, UnalignedMemoryOrOffsetIsFailedPrecondition) {
  EXPECT_TRUE(absl::IsFailedPrecondition(Read(Crc(), dst_.get() + 8)));
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadVerifiedTensorDirect(
      fd_, path_, "layer/weights", kOffset + 512, kSize - 512, Crc(), dst_.get())));
  EXPECT_EQ(::fcntl(fd_, F_GETFL) & O_DIRECT, 0);
}

}  // namespace
}  // namespace overseer

#include "core/io/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(Crc32cTest, StandardCheckValue) {
  EXPECT_EQ(crc32c::Value("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c::Value(""), 0u);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  const std::string data = "The quick brown fox jumps over the lazy dog, twice over.";
  for (size_t split = 0; split <= data.size(); ++split) {
    EXPECT_EQ(crc32c::Extend(crc32c::Value(data.substr(0, split)), data.substr(split)),
              crc32c::Value(data))
        << split;
  }
}

TEST(Crc32cTest, UnalignedAndLongInputsMatchBytewise) {
  std::string data(1000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 3);
  uint32_t bytewise = 0;
  for (size_t i = 0; i < data.size(); ++i) bytewise = crc32c::Extend(bytewise, data.substr(i, 1));
  EXPECT_EQ(crc32c::Value(data), bytewise);
  EXPECT_EQ(crc32c::Value(absl::string_view(data).substr(3)),
            crc32c::Extend(0, absl::string_view(data).substr(3)));
}

// Inputs long enough for the interleaved hardware paths (rounds of six 16 KiB stripes,
// then of three 4 KiB ones), at every alignment and with every kind of tail, and
// extended in pieces.
TEST(Crc32cTest, LongInputsAgreeWithPortable) {
  std::string data((320 << 10) + 100, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 2654435761u >> 13);
  constexpr size_t kSix = 6 * 16384;
  for (size_t start : {0, 1, 3, 8}) {
    for (size_t len : {size_t{12287}, size_t{12288}, size_t{12289}, size_t{12288 + 7},
                       size_t{24576}, size_t{40000}, size_t{65536}, kSix - 1, kSix, kSix + 1,
                       kSix + 12288 + 5, 2 * kSix + 3 * 12288 + 7, size_t{320 << 10}}) {
      const absl::string_view piece = absl::string_view(data).substr(start, len);
      EXPECT_EQ(crc32c::Extend(0xdeadbeefu, piece), crc32c::ExtendPortable(0xdeadbeefu, piece))
          << start << " " << len;
    }
  }
  const absl::string_view all(data);
  EXPECT_EQ(crc32c::Extend(crc32c::Extend(0, all.substr(0, 20000)), all.substr(20000)),
            crc32c::ExtendPortable(0, all));
  EXPECT_EQ(crc32c::Extend(crc32c::Extend(0, all.substr(0, kSix + 1)), all.substr(kSix + 1)),
            crc32c::ExtendPortable(0, all));
}

TEST(Crc32cTest, HardwareAndPortableAgree) {
  std::string data(300, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 17);
  for (size_t start = 0; start < 9; ++start) {
    for (size_t len = 0; start + len <= data.size(); len += 7) {
      const absl::string_view piece = absl::string_view(data).substr(start, len);
      EXPECT_EQ(crc32c::Extend(0x12345678u, piece), crc32c::ExtendPortable(0x12345678u, piece))
          << start << " " << len;
      EXPECT_EQ(crc32c::Value(piece), crc32c::ExtendPortable(0, piece)) << start << " " << len;
    }
  }
  EXPECT_EQ(crc32c::ExtendPortable(0, "123456789"), 0xE3069283u);
}

// FORMATS.md 1.3, from TensorBoard's masked_crc.rs.
TEST(Crc32cTest, MaskedTensorBoardVector) {
  const std::string event = std::string("\x1a\x11") + "CRC test, one two";
  EXPECT_EQ(crc32c::Mask(crc32c::Value(event)), 0x5794D08Au);
}

TEST(Crc32cTest, MaskRoundTrips) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) {
    EXPECT_EQ(crc32c::Unmask(crc32c::Mask(crc)), crc);
    EXPECT_NE(crc32c::Mask(crc), crc);
  }
}

}  // namespace
}  // namespace overseer

#ifndef OVERSEER_CORE_IO_CRC32C_H_
#define OVERSEER_CORE_IO_CRC32C_H_

// CRC32C (Castagnoli, reflected polynomial 0x82F63B78) and the mask TensorFlow applies
// to every stored CRC (FORMATS.md 1.2). Pure functions; thread-safe.

#include <cstdint>

#include "absl/strings/string_view.h"

namespace overseer {
namespace crc32c {

// The CRC32C of `data` appended to data whose CRC was `init_crc` (0 for none). Uses
// the SSE4.2 crc32 instruction when the CPU has it, else ExtendPortable.
uint32_t Extend(uint32_t init_crc, absl::string_view data);

// The same computed with tables (slicing-by-8) on any CPU; for tests and fallback.
uint32_t ExtendPortable(uint32_t init_crc, absl::string_view data);

// Whether Extend uses the CPU's crc32 instruction.
bool HasHardwareSupport();

// The CRC32C of `data`. Value("123456789") == 0xE3069283.
inline uint32_t Value(absl::string_view data) { return Extend(0, data); }

inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

// Rotate right by 15 bits, then add kMaskDelta (mod 2^32).
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

// The inverse of Mask.
inline uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace crc32c
}  // namespace overseer

#endif  // OVERSEER_CORE_IO_CRC32C_H_

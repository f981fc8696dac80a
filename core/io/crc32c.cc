#include "core/io/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define OVERSEER_CRC32C_X86 1
#endif

namespace overseer {
namespace crc32c {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;

// Slicing-by-8 tables: kTables[0] is the classic byte table; kTables[k][b] is the CRC
// of byte b followed by k zero bytes.
struct Tables {
  uint32_t t[8][256];
};

constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    tables.t[0][b] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t prev = tables.t[k - 1][b];
      tables.t[k][b] = (prev >> 8) ^ tables.t[0][prev & 0xffu];
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

inline uint32_t LoadLE32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

#ifdef OVERSEER_CRC32C_X86
// Long inputs go through independent crc32 chains over adjacent stripes: the
// instruction's latency is 3 cycles, so one dependent chain uses a fraction of the
// CPU's throughput (a third on a CPU that retires one a cycle; newer ones retire more).
// The chains are joined with the linearity of the CRC register: crc(r, A B) =
// shift(crc(r, A)) ^ crc(0, B), where shift(x) = crc(x, |B| zero bytes) is linear in x
// and so a lookup in four byte tables. Rounds of six chains of 16 KiB, then of three
// of 4 KiB: on the 2-core AMD EPYC (Zen 5) hosts we run on, six chains checksum 29 GB/s
// against 16-17 for three (crc32c_bench), and a shorter input keeps three.
struct ShiftTables {
  uint32_t t[4][256];
};

__attribute__((target("sse4.2"))) uint32_t CrcOfZeros(uint32_t reg, size_t bytes) {
  uint64_t crc = reg;
  for (size_t i = 0; i < bytes; i += 8) crc = _mm_crc32_u64(crc, 0);
  return static_cast<uint32_t>(crc);
}

// Tables of shift() over kStripe zero bytes.
template <size_t kStripe>
const ShiftTables& StripeShift() {
  static const ShiftTables* const tables = [] {
    uint32_t column[32];
    for (int bit = 0; bit < 32; ++bit) column[bit] = CrcOfZeros(1u << bit, kStripe);
    auto* t = new ShiftTables;
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int j = 0; j < 8; ++j) {
          if ((b >> j) & 1u) v ^= column[8 * k + j];
        }
        t->t[k][b] = v;
      }
    }
    return t;
  }();
  return *tables;
}

inline uint32_t Shift(const ShiftTables& s, uint32_t reg) {
  return s.t[0][reg & 0xff] ^ s.t[1][(reg >> 8) & 0xff] ^ s.t[2][(reg >> 16) & 0xff] ^
         s.t[3][reg >> 24];
}

// Consumes rounds of kChains stripes of kStripe bytes from `p` while `n` holds one;
// returns the register after them.
template <int kChains, size_t kStripe>
__attribute__((target("sse4.2"))) uint64_t ExtendStripes(uint64_t crc, const unsigned char*& p,
                                                         size_t& n) {
  if (n < kChains * kStripe) return crc;
  const ShiftTables& shift = StripeShift<kStripe>();
  do {
    uint64_t chain[kChains] = {crc};
    for (size_t i = 0; i < kStripe; i += 8) {
#pragma GCC unroll 8
      for (int c = 0; c < kChains; ++c) {
        uint64_t word;
        std::memcpy(&word, p + c * kStripe + i, 8);  // x86 is little-endian, as the CRC.
        chain[c] = _mm_crc32_u64(chain[c], word);
      }
    }
    uint32_t joined = static_cast<uint32_t>(chain[0]);
    for (int c = 1; c < kChains; ++c)
      joined = Shift(shift, joined) ^ static_cast<uint32_t>(chain[c]);
    crc = joined;
    p += kChains * kStripe;
    n -= kChains * kStripe;
  } while (n >= kChains * kStripe);
  return crc;
}

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t init_crc, absl::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint64_t crc = init_crc ^ 0xFFFFFFFFu;
  crc = ExtendStripes<6, 16384>(crc, p, n);
  crc = ExtendStripes<3, 4096>(crc, p, n);
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = _mm_crc32_u64(crc, word);
    p += 8;
    n -= 8;
  }
  uint32_t crc32 = static_cast<uint32_t>(crc);
  while (n-- > 0) crc32 = _mm_crc32_u8(crc32, *p++);
  return crc32 ^ 0xFFFFFFFFu;
}
#endif

}  // namespace

namespace {

// Read once at start-up instead of on every call (checksumming a summary's two short
// fields made the check a visible share of each event). A CRC computed by another
// static initialiser before this one runs uses the tables: the same value.
bool DetectHardware() {
#ifdef OVERSEER_CRC32C_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

const bool hardware = DetectHardware();

}  // namespace

bool HasHardwareSupport() { return hardware; }

uint32_t Extend(uint32_t init_crc, absl::string_view data) {
#ifdef OVERSEER_CRC32C_X86
  if (hardware) return ExtendSse42(init_crc, data);
#endif
  return ExtendPortable(init_crc, data);
}

uint32_t ExtendPortable(uint32_t init_crc, absl::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint32_t crc = init_crc ^ 0xFFFFFFFFu;
  const auto& t = kTables.t;
  while (n >= 8) {
    const uint32_t lo = LoadLE32(p) ^ crc;
    const uint32_t hi = LoadLE32(p + 4);
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace crc32c
}  // namespace overseer

// Benchmark of the CRC32C every checkpoint tensor, event record and data file carries
// (core/io/crc32c.h), on one thread (./dev bench):
//   crc32c.gbps_64MiB: GB (1e9 bytes) per second of crc32c::Extend over a 64 MiB
//     buffer (a checkpoint's tensors are written in pieces of that size and smaller).
//     Baseline: reading the same bytes, summing them as 64-bit words in four
//     independent sums: what the memory gives one thread, the ceiling for any pass
//     over the bytes. 9 interleaved rounds, each of 8 passes.
// The buffer is 2 MiB-aligned, as tensors are, and written once before the rounds.

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/string_view.h"
#include "bench/bench_util.h"
#include "core/io/crc32c.h"
#include "core/logging.h"

namespace overseer {
namespace {

constexpr size_t kBytes = size_t{64} << 20;
constexpr int kPasses = 8;
constexpr int kRounds = 9;

int Run() {
  void* memory = nullptr;
  CHECK(::posix_memalign(&memory, size_t{2} << 20, kBytes) == 0);
  auto* data = static_cast<unsigned char*>(memory);
  for (size_t i = 0; i < kBytes; ++i) data[i] = static_cast<unsigned char>(i * 131 + (i >> 12));
  const absl::string_view bytes(reinterpret_cast<const char*>(data), kBytes);
  // Results feed a sink, so that neither pass can be left out.
  volatile uint64_t sink = 0;
  auto gbps = [](double seconds) { return kPasses * static_cast<double>(kBytes) / seconds / 1e9; };

  bench::Rounds rounds("crc32c");
  const int crc = rounds.Add("crc32c", [&] {
    return gbps(bench::SecondsOf([&] {
      uint32_t c = 0;
      for (int i = 0; i < kPasses; ++i) c = crc32c::Extend(c, bytes);
      sink = sink + c;
    }));
  });
  const int read = rounds.Add("read", [&] {
    return gbps(bench::SecondsOf([&] {
      const auto* words = reinterpret_cast<const uint64_t*>(data);
      uint64_t a = 0, b = 0, c = 0, d = 0;
      for (int i = 0; i < kPasses; ++i) {
        for (size_t w = 0; w < kBytes / 8; w += 4) {
          a += words[w];
          b += words[w + 1];
          c += words[w + 2];
          d += words[w + 3];
        }
      }
      sink = sink + (a ^ b ^ c ^ d);
    }));
  });
  rounds.Run(kRounds);
  if (!crc32c::HasHardwareSupport()) bench::Progress("no crc32 instruction: CRC32C by tables");
  bench::PrintFigure("crc32c.gbps_64MiB", "GB/s", rounds.samples(crc), rounds.samples(read));
  std::free(memory);
  return 0;
}

}  // namespace
}  // namespace overseer

int main() { return overseer::Run(); }

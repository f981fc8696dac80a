#include "bench/bench_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace overseer {
namespace bench {

double SecondsPerCall(const std::function<void()>& fn, double min_seconds, int warmup,
                      int repeats) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) fn();
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    int64_t calls = 0;
    const auto start = clock::now();
    double elapsed = 0;
    int64_t batch = 1;
    while (elapsed < min_seconds) {
      for (int64_t i = 0; i < batch; ++i) fn();
      calls += batch;
      elapsed = std::chrono::duration<double>(clock::now() - start).count();
      batch = std::min<int64_t>(batch * 2, 1 << 16);
    }
    best = std::min(best, elapsed / static_cast<double>(calls));
  }
  return best;
}

void PrintFigure(const std::string& name, double value, const std::string& unit,
                 double baseline) {
  std::printf(
      "{\"name\": \"%s\", \"value\": %.4g, \"unit\": \"%s\", \"baseline\": %.4g, "
      "\"ratio\": %.3f}\n",
      name.c_str(), value, unit.c_str(), baseline, baseline != 0 ? value / baseline : 0.0);
  std::fflush(stdout);
}

}  // namespace bench
}  // namespace overseer

#ifndef OVERSEER_BENCH_BENCH_UTIL_H_
#define OVERSEER_BENCH_BENCH_UTIL_H_

// Helpers shared by the benchmarks: timing loops and the one-JSON-line-per-figure
// output that ./dev bench prints.

#include <cstdint>
#include <functional>
#include <string>

namespace overseer {
namespace bench {

// Runs `fn` repeatedly for at least `min_seconds` (after `warmup` calls) and returns
// the mean seconds per call. Repeats the measurement `repeats` times and keeps the
// fastest mean, which is the least disturbed by other load on the machine.
double SecondsPerCall(const std::function<void()>& fn, double min_seconds = 0.5,
                      int warmup = 3, int repeats = 3);

// Prints {"name": ..., "value": ..., "unit": ..., "baseline": ..., "ratio": ...}
// on one line of stdout; ratio = value / baseline.
void PrintFigure(const std::string& name, double value, const std::string& unit,
                 double baseline);

}  // namespace bench
}  // namespace overseer

#endif  // OVERSEER_BENCH_BENCH_UTIL_H_

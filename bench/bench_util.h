#ifndef OVERSEER_BENCH_BENCH_UTIL_H_
#define OVERSEER_BENCH_BENCH_UTIL_H_

// The one way the benchmarks measure and print (./dev bench). A figure is measured
// together with its baseline in interleaved rounds: each round runs the measured work
// and the baseline once each, in an order that alternates from round to round, so that
// both see the same load and the same disk on a shared host. The figure's value is the
// median of its rounds, its baseline the median of the baseline's rounds, and its
// ratio the median of the per-round ratios (value / baseline of the same round). One
// JSON line per figure goes to stdout:
//
//   {"name": "recv_tensor.gbps_1GiB", "value": 1.2, "unit": "GB/s", "baseline": 3.1,
//    "ratio": 0.39, "rounds": 5, "min": 1.1, "max": 1.3}
//
// (min and max of the value over the rounds); the min/median/max of the value, the
// baseline and the ratio go to stderr. A figure with nothing measured to compare it
// with prints "baseline": null and "ratio": null, and a "note" that says why and what
// its goal is.
//
//   bench::Rounds rounds("recv_tensor");
//   const int tcp = rounds.Add("tcp", [&] { return GbPerSecond(RawTcp()); });
//   const int step = rounds.Add("step", [&] { return GbPerSecond(Step()); });
//   rounds.Run(5);
//   bench::PrintFigure("recv_tensor.gbps_1GiB", "GB/s", rounds.samples(step),
//                      rounds.samples(tcp));

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace overseer {
namespace bench {

// Seconds `fn` takes, once.
double SecondsOf(const std::function<void()>& fn);

// One window of calls: how many, and the seconds they took.
struct CallWindow {
  int64_t calls = 0;
  double seconds = 0;
};
// Calls `fn` in doubling batches until at least `min_seconds` have passed (at least
// once). For work far shorter than a round.
CallWindow TimeCalls(const std::function<void()>& fn, double min_seconds);
// The mean seconds per call of `fn` over one TimeCalls window.
double MeanSecondsPerCall(const std::function<void()>& fn, double min_seconds);

// The median of `values` (the mean of the middle two for an even count). Precondition:
// not empty.
double Median(std::vector<double> values);

// "<what>" on stderr, prefixed with the program's name and the seconds since it
// started, for long benchmarks to show where they are.
void Progress(const std::string& what);

// Measurements run in interleaved rounds. Not thread-safe.
class Rounds {
 public:
  // `name` prefixes the per-round progress lines on stderr.
  explicit Rounds(std::string name) : name_(std::move(name)) {}

  // Adds a measurement; returns its index. `one_round` does one round of it (any
  // untimed preparation included) and returns the round's figure (a rate, or a time).
  int Add(std::string label, std::function<double()> one_round);

  // Runs `warmup_rounds` rounds whose figures are dropped, then at least `rounds`
  // rounds, and more until `min_seconds` have passed since the first kept round (at
  // most `max_rounds`, when positive). A round runs every measurement once: in the
  // order they were added in even rounds, reversed in odd ones, so that measurements
  // added next to each other run next to each other, each first as often as second.
  // Prints every kept round's figures on stderr when `log_rounds` is on.
  void Run(int rounds, int warmup_rounds = 1, double min_seconds = 0, int max_rounds = 0);
  void set_log_rounds(bool on) { log_rounds_ = on; }

  // The kept figures of measurement `index`, one per round, in round order.
  const std::vector<double>& samples(int index) const { return samples_[index]; }

 private:
  void RunOne(size_t which, bool keep);

  const std::string name_;
  bool log_rounds_ = true;
  std::vector<std::string> labels_;
  std::vector<std::function<double()>> runs_;
  std::vector<std::vector<double>> samples_;
};

// The fewest rounds a figure may have: one sample proves nothing.
constexpr int kMinRounds = 5;

// Prints figure `name` (one JSON line on stdout, its spread on stderr) from the
// per-round figures of the measured work and of its baseline, measured in the same
// rounds: value = median of `values`, baseline = median of `baselines`, ratio = median
// of values[i] / baselines[i]. Aborts, naming the figure, unless both have the same
// size of at least kMinRounds.
// The threads of process `pid` now (/proc/PID/status); -1 if that cannot be read.
double ThreadsOf(int pid);
// The user + system CPU seconds of process `pid` so far, all its threads, ended ones
// included (/proc/PID/stat, in clock ticks of usually 10 ms); -1 if that cannot be read.
double CpuSecondsOf(int pid);

void PrintFigure(const std::string& name, const std::string& unit,
                 const std::vector<double>& values, const std::vector<double>& baselines);

// Prints figure `name` that has no measured baseline: "baseline" and "ratio" are null
// and "note" says why and what the goal is. Aborts, naming the figure, with fewer than
// kMinRounds values.
void PrintFigureWithoutBaseline(const std::string& name, const std::string& unit,
                                const std::vector<double>& values, const std::string& note);

}  // namespace bench
}  // namespace overseer

#endif  // OVERSEER_BENCH_BENCH_UTIL_H_

#include "bench/bench_util.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

namespace overseer {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

const Clock::time_point kProgramStart = Clock::now();

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Spread {
  double min = 0;
  double median = 0;
  double max = 0;
};

Spread SpreadOf(const std::vector<double>& values) {
  return {*std::min_element(values.begin(), values.end()), Median(values),
          *std::max_element(values.begin(), values.end())};
}

std::string SpreadText(const char* what, const std::vector<double>& values) {
  const Spread s = SpreadOf(values);
  char text[160];
  std::snprintf(text, sizeof(text), "%s min %.4g median %.4g max %.4g", what, s.min, s.median,
                s.max);
  return text;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", value);
  return text;
}

void CheckRounds(const std::string& name, size_t values, size_t baselines) {
  if (values == baselines && values >= static_cast<size_t>(kMinRounds)) return;
  std::fprintf(stderr, "figure %s has %zu values and %zu baselines; it needs at least %d of each\n",
               name.c_str(), values, baselines, kMinRounds);
  std::abort();
}

void PrintLine(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

double SecondsOf(const std::function<void()>& fn) {
  const Clock::time_point start = Clock::now();
  fn();
  return Since(start);
}

CallWindow TimeCalls(const std::function<void()>& fn, double min_seconds) {
  const Clock::time_point start = Clock::now();
  CallWindow window;
  int64_t batch = 1;
  while (window.seconds < min_seconds || window.calls == 0) {
    for (int64_t i = 0; i < batch; ++i) fn();
    window.calls += batch;
    window.seconds = Since(start);
    batch = std::min<int64_t>(batch * 2, 1 << 16);
  }
  return window;
}

double MeanSecondsPerCall(const std::function<void()>& fn, double min_seconds) {
  const CallWindow window = TimeCalls(fn, min_seconds);
  return window.seconds / static_cast<double>(window.calls);
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void Progress(const std::string& what) {
  std::fprintf(stderr, "%s [%.1f s]: %s\n", program_invocation_short_name, Since(kProgramStart),
               what.c_str());
}

int Rounds::Add(std::string label, std::function<double()> one_round) {
  labels_.push_back(std::move(label));
  runs_.push_back(std::move(one_round));
  samples_.emplace_back();
  return static_cast<int>(runs_.size()) - 1;
}

void Rounds::RunOne(size_t which, bool keep) {
  const double figure = runs_[which]();
  if (keep) samples_[which].push_back(figure);
}

void Rounds::Run(int rounds, int warmup_rounds, double min_seconds, int max_rounds) {
  const size_t n = runs_.size();
  Clock::time_point start = Clock::now();
  for (int round = 0;; ++round) {
    const int kept = round - warmup_rounds;
    if (kept == 0) start = Clock::now();
    if (kept >= rounds && Since(start) >= min_seconds) break;
    if (max_rounds > 0 && kept >= max_rounds) break;
    for (size_t k = 0; k < n; ++k) RunOne(round % 2 == 0 ? k : n - 1 - k, kept >= 0);
    if (!log_rounds_) continue;
    std::string line = name_ + (kept < 0 ? ": warm-up round" : ": round ") +
                       (kept < 0 ? "" : std::to_string(kept + 1)) + ":";
    if (kept >= 0) {
      for (size_t k = 0; k < n; ++k) line += " " + labels_[k] + " " + Number(samples_[k].back());
    }
    Progress(line);
  }
}

void PrintFigure(const std::string& name, const std::string& unit,
                 const std::vector<double>& values, const std::vector<double>& baselines) {
  CheckRounds(name, values.size(), baselines.size());
  std::vector<double> ratios;
  for (size_t i = 0; i < values.size(); ++i) ratios.push_back(values[i] / baselines[i]);
  const Spread v = SpreadOf(values);
  PrintLine("{\"name\": " + JsonString(name) + ", \"value\": " + Number(v.median) +
            ", \"unit\": " + JsonString(unit) + ", \"baseline\": " + Number(Median(baselines)) +
            ", \"ratio\": " + Number(Median(ratios)) +
            ", \"rounds\": " + std::to_string(values.size()) + ", \"min\": " + Number(v.min) +
            ", \"max\": " + Number(v.max) + "}");
  Progress(name + " over " + std::to_string(values.size()) +
           " rounds: " + SpreadText("value", values) + "; " + SpreadText("baseline", baselines) +
           "; " + SpreadText("ratio", ratios));
}

void PrintFigureWithoutBaseline(const std::string& name, const std::string& unit,
                                const std::vector<double>& values, const std::string& note) {
  CheckRounds(name, values.size(), values.size());
  const Spread v = SpreadOf(values);
  PrintLine("{\"name\": " + JsonString(name) + ", \"value\": " + Number(v.median) +
            ", \"unit\": " + JsonString(unit) + ", \"baseline\": null, \"ratio\": null" +
            ", \"rounds\": " + std::to_string(values.size()) + ", \"min\": " + Number(v.min) +
            ", \"max\": " + Number(v.max) + ", \"note\": " + JsonString(note) + "}");
  Progress(name + " over " + std::to_string(values.size()) +
           " rounds: " + SpreadText("value", values) + " (no measured baseline)");
}

double ThreadsOf(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stod(line.substr(8));
  }
  return -1;
}

double CpuSecondsOf(int pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // After the command name, which may hold spaces.
  if (close == std::string::npos || close + 2 > stat.size()) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double utime = -1, stime = -1;
  // Fields from the 3rd (state) on; utime and stime are the 14th and 15th.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  if (utime < 0 || stime < 0) return -1;
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace bench
}  // namespace overseer

#include "core/metrics/process_collector.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace overseer {
namespace {

// The whole of a small file (a /proc file), or nullopt.
std::optional<std::string> ReadSmallFile(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string content;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return content;
}

// The fields of /proc/self/stat from field 3 (state) on: the command name before them
// is in parentheses and may hold spaces, so the split starts after the last ')'.
std::vector<absl::string_view> StatFields(absl::string_view stat) {
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos) return {};
  return absl::StrSplit(stat.substr(close + 1), absl::ByAnyChar(" \n"), absl::SkipEmpty());
}

// Field `n` (1-based, as proc(5) numbers them; n >= 3) as a number, or nullopt.
std::optional<double> StatField(const std::vector<absl::string_view>& fields, size_t n) {
  if (n < 3 || n - 3 >= fields.size()) return std::nullopt;
  double value = 0;
  if (!absl::SimpleAtod(fields[n - 3], &value)) return std::nullopt;
  return value;
}

// The boot time, Unix seconds (the "btime" line of /proc/stat), or nullopt.
std::optional<double> BootTimeSeconds() {
  const std::optional<std::string> stat = ReadSmallFile("/proc/stat");
  if (!stat.has_value()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*stat, '\n')) {
    if (absl::ConsumePrefix(&line, "btime ")) {
      double seconds = 0;
      if (absl::SimpleAtod(line, &seconds)) return seconds;
    }
  }
  return std::nullopt;
}

// Open descriptors: the entries of /proc/self/fd, less the one that lists them.
std::optional<double> OpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  double count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;
}

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type,
                                double value) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
  return family;
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> families;
  const std::optional<std::string> stat = ReadSmallFile("/proc/self/stat");
  const std::vector<absl::string_view> fields =
      stat.has_value() ? StatFields(*stat) : std::vector<absl::string_view>();
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const std::optional<double> utime = StatField(fields, 14);
  const std::optional<double> stime = StatField(fields, 15);
  if (utime.has_value() && stime.has_value() && ticks > 0) {
    families.push_back(Family("process_cpu_seconds_total",
                              "Total user and system CPU time spent in seconds.",
                              MetricType::Counter, (*utime + *stime) / ticks));
  }
  if (const std::optional<double> rss = StatField(fields, 24)) {
    families.push_back(Family("process_resident_memory_bytes", "Resident memory size in bytes.",
                              MetricType::Gauge,
                              *rss * static_cast<double>(::sysconf(_SC_PAGESIZE))));
  }
  if (const std::optional<double> vsize = StatField(fields, 23)) {
    families.push_back(Family("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                              MetricType::Gauge, *vsize));
  }
  if (const std::optional<double> fds = OpenFds()) {
    families.push_back(
        Family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, *fds));
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    families.push_back(Family("process_max_fds", "Maximum number of open file descriptors.",
                              MetricType::Gauge, static_cast<double>(limit.rlim_cur)));
  }
  const std::optional<double> start_ticks = StatField(fields, 22);
  const std::optional<double> boot = BootTimeSeconds();
  if (start_ticks.has_value() && boot.has_value() && ticks > 0) {
    families.push_back(Family("process_start_time_seconds",
                              "Start time of the process since unix epoch in seconds.",
                              MetricType::Gauge, *boot + *start_ticks / ticks));
  }
  return families;
}

}  // namespace overseer

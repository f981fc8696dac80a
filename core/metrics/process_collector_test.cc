#include "core/metrics/process_collector.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <map>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

// Family name -> (type, value) of every family collected.
std::map<std::string, std::pair<prometheus::MetricType, double>> Collected() {
  std::map<std::string, std::pair<prometheus::MetricType, double>> out;
  for (const prometheus::MetricFamily& family : ProcessCollector().Collect()) {
    EXPECT_EQ(family.metric.size(), 1u) << family.name;
    EXPECT_FALSE(family.help.empty()) << family.name;
    const prometheus::ClientMetric& m = family.metric.front();
    out[family.name] = {family.type, family.type == prometheus::MetricType::Counter
                                         ? m.counter.value
                                         : m.gauge.value};
  }
  return out;
}

TEST(ProcessCollectorTest, HasTheStandardNamesAndTypes) {
  const auto collected = Collected();
  using prometheus::MetricType;
  const std::map<std::string, MetricType> expected = {
      {"process_cpu_seconds_total", MetricType::Counter},
      {"process_resident_memory_bytes", MetricType::Gauge},
      {"process_virtual_memory_bytes", MetricType::Gauge},
      {"process_open_fds", MetricType::Gauge},
      {"process_max_fds", MetricType::Gauge},
      {"process_start_time_seconds", MetricType::Gauge},
  };
  ASSERT_EQ(collected.size(), expected.size());
  for (const auto& [name, type] : expected) {
    ASSERT_TRUE(collected.count(name)) << name;
    EXPECT_EQ(collected.at(name).first, type) << name;
  }
}

TEST(ProcessCollectorTest, ValuesDescribeThisProcess) {
  const auto collected = Collected();
  EXPECT_GE(collected.at("process_cpu_seconds_total").second, 0);
  const double resident = collected.at("process_resident_memory_bytes").second;
  EXPECT_GT(resident, 0);
  EXPECT_GE(collected.at("process_virtual_memory_bytes").second, resident);
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(collected.at("process_max_fds").second, static_cast<double>(limit.rlim_cur));
  const double start = collected.at("process_start_time_seconds").second;
  EXPECT_GT(start, 1.5e9);  // After 2017: read from the boot time, not from 0.
  EXPECT_LE(start, absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()) + 1);
}

TEST(ProcessCollectorTest, CountsOpenDescriptors) {
  const double before = Collected().at("process_open_fds").second;
  EXPECT_GE(before, 3);  // stdin, stdout, stderr at least.
  int fds[3];
  for (int& fd : fds) {
    fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
  }
  EXPECT_EQ(Collected().at("process_open_fds").second, before + 3);
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(Collected().at("process_open_fds").second, before);
}

}  // namespace
}  // namespace overseer

#ifndef OVERSEER_CORE_METRICS_PROCESS_COLLECTOR_H_
#define OVERSEER_CORE_METRICS_PROCESS_COLLECTOR_H_

// The standard process metrics of Prometheus' client libraries, which prometheus-cpp
// 1.0 lacks, read from /proc/self at each scrape (Linux only):
//   process_cpu_seconds_total        counter  user and system CPU time
//   process_resident_memory_bytes    gauge    resident set size
//   process_virtual_memory_bytes     gauge    virtual memory size
//   process_open_fds                 gauge    open file descriptors
//   process_max_fds                  gauge    the soft limit on open file descriptors
//   process_start_time_seconds       gauge    start time, Unix seconds
// The names, types and units are those of the Go and Python clients, so dashboards and
// alerts written for them work unchanged.

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace overseer {

// Thread-safe (holds no state).
class ProcessCollector final : public prometheus::Collectable {
 public:
  // The families above; a family whose /proc file cannot be read is left out.
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_METRICS_PROCESS_COLLECTOR_H_

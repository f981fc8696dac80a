#ifndef OVERSEER_MASTER_RPC_READINESS_METRICS_H_
#define OVERSEER_MASTER_RPC_READINESS_METRICS_H_

// The master's readiness metrics, fed by its ReadinessTracker:
//   overseer_master_readiness_marks_total        MarkReady calls that recorded a mark
//   overseer_master_readiness_withdrawals_total  records withdrawn (a task restarted or
//                                                died, or WithdrawReady)
//   overseer_master_readiness_waiters            WaitForReady calls blocked right now

#include <string>

#include "master/readiness_tracker.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace overseer {

// Thread-safe.
class ReadinessMetrics : public ReadinessListener {
 public:
  // Registers the metrics in `registry` (not owned; outlives this object).
  explicit ReadinessMetrics(prometheus::Registry* registry);

  void Marked(const std::string& key) override;
  void Withdrawn(const std::string& key, const std::string& reason) override;
  void WaitersChanged(int waiters) override;

 private:
  prometheus::Counter* marks_;
  prometheus::Counter* withdrawals_;
  prometheus::Gauge* waiters_;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_RPC_READINESS_METRICS_H_

#ifndef OVERSEER_MASTER_RPC_SESSION_METRICS_H_
#define OVERSEER_MASTER_RPC_SESSION_METRICS_H_

// The master's session metrics, fed by the Master itself (not by its RPCs, so that
// they stay true when the session GC closes sessions while no call arrives):
//   overseer_master_sessions_open             sessions open now
//   overseer_master_sessions_created_total    sessions created
//   overseer_master_sessions_collected_total  sessions closed by the GC after being idle
//                                             for --session_gc_seconds
//   overseer_master_snapshot_wait_seconds     how long each checkpoint snapshot waited
//                                             for the steps writing its variables
//   overseer_master_snapshot_timeouts_total   snapshots that gave up waiting (30 s)

#include "master/master.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace overseer {

// Thread-safe.
class SessionMetrics : public SessionListener {
 public:
  // Registers the metrics in `registry` (not owned; outlives this object).
  explicit SessionMetrics(prometheus::Registry* registry);

  void SessionCreated() override;
  void SessionsCollected(int collected) override;
  void SessionsOpen(int open) override;
  void SnapshotWaited(absl::Duration waited, bool entered) override;

 private:
  prometheus::Gauge* open_;
  prometheus::Counter* created_;
  prometheus::Counter* collected_;
  prometheus::Histogram* snapshot_wait_;
  prometheus::Counter* snapshot_timeouts_;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_RPC_SESSION_METRICS_H_

#include "master/rpc/session_metrics.h"

namespace overseer {

SessionMetrics::SessionMetrics(prometheus::Registry* registry) {
  open_ = &prometheus::BuildGauge()
               .Name("overseer_master_sessions_open")
               .Help("Sessions open on the master now.")
               .Register(*registry)
               .Add({});
  created_ = &prometheus::BuildCounter()
                  .Name("overseer_master_sessions_created_total")
                  .Help("Sessions created (each recovery of a trainer creates one).")
                  .Register(*registry)
                  .Add({});
  collected_ = &prometheus::BuildCounter()
                    .Name("overseer_master_sessions_collected_total")
                    .Help(
                        "Sessions closed by the session GC after being idle for "
                        "--session_gc_seconds.")
                    .Register(*registry)
                    .Add({});
  snapshot_wait_ = &prometheus::BuildHistogram()
                        .Name("overseer_master_snapshot_wait_seconds")
                        .Help(
                            "How long each checkpoint snapshot waited for the steps writing "
                            "its variables; steps writing them waited as long, plus the "
                            "snapshot step.")
                        .Register(*registry)
                        .Add({}, prometheus::Histogram::BucketBoundaries{
                                     0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30});
  snapshot_timeouts_ = &prometheus::BuildCounter()
                            .Name("overseer_master_snapshot_timeouts_total")
                            .Help(
                                "Checkpoint snapshots that gave up after waiting 30 s for the "
                                "steps writing their variables (nothing was saved).")
                            .Register(*registry)
                            .Add({});
}

void SessionMetrics::SessionCreated() { created_->Increment(); }

void SessionMetrics::SessionsCollected(int collected) { collected_->Increment(collected); }

void SessionMetrics::SessionsOpen(int open) { open_->Set(open); }

void SessionMetrics::SnapshotWaited(absl::Duration waited, bool entered) {
  snapshot_wait_->Observe(absl::ToDoubleSeconds(waited));
  if (!entered) snapshot_timeouts_->Increment();
}

}  // namespace overseer

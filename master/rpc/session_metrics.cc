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
}

void SessionMetrics::SessionCreated() { created_->Increment(); }

void SessionMetrics::SessionsCollected(int collected) { collected_->Increment(collected); }

void SessionMetrics::SessionsOpen(int open) { open_->Set(open); }

}  // namespace overseer

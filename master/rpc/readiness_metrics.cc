#include "master/rpc/readiness_metrics.h"

namespace overseer {

ReadinessMetrics::ReadinessMetrics(prometheus::Registry* registry) {
  marks_ = &prometheus::BuildCounter()
                .Name("overseer_master_readiness_marks_total")
                .Help("MarkReady calls that recorded a model as ready.")
                .Register(*registry)
                .Add({});
  withdrawals_ = &prometheus::BuildCounter()
                      .Name("overseer_master_readiness_withdrawals_total")
                      .Help(
                          "Readiness records withdrawn: a task restarted or died, or "
                          "WithdrawReady was called.")
                      .Register(*registry)
                      .Add({});
  waiters_ = &prometheus::BuildGauge()
                  .Name("overseer_master_readiness_waiters")
                  .Help("WaitForReady calls blocked right now.")
                  .Register(*registry)
                  .Add({});
}

void ReadinessMetrics::Marked(const std::string&) { marks_->Increment(); }

void ReadinessMetrics::Withdrawn(const std::string&, const std::string&) {
  withdrawals_->Increment();
}

void ReadinessMetrics::WaitersChanged(int waiters) { waiters_->Set(waiters); }

}  // namespace overseer

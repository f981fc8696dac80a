#include "client/session/readiness.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/clock.h"
#include "core/resource_mgr.h"

namespace overseer {
namespace {

// The in-process table for target "": a resource of the sessions' ResourceMgr, so that
// it lives exactly as long as the variables whose readiness it records.
constexpr char kTableContainer[] = "_readiness";
constexpr char kTableName[] = "in_process";

struct InProcessTable : public ResourceBase {
  std::string DebugString() const override { return "InProcessReadinessTable"; }

  absl::Mutex mu;
  std::set<std::string> ready ABSL_GUARDED_BY(mu);
};

class InProcessReadinessChannel : public ReadinessChannel {
 public:
  InProcessReadinessChannel(std::shared_ptr<InProcessTable> table, Clock* clock)
      : table_(std::move(table)), clock_(clock) {}

  absl::Status MarkReady(const std::string& key,
                         const std::vector<std::string>& /*device_filters*/) override {
    absl::MutexLock lock(&table_->mu);
    table_->ready.insert(key);
    return absl::OkStatus();
  }

  absl::Status WithdrawReady(const std::string& key) override {
    absl::MutexLock lock(&table_->mu);
    table_->ready.erase(key);
    return absl::OkStatus();
  }

  absl::StatusOr<bool> WaitForReady(const std::string& key, absl::Duration timeout) override {
    InProcessTable* t = table_.get();
    absl::MutexLock lock(&t->mu);
    auto is_ready = [t, &key]()
                        ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu) { return t->ready.count(key) > 0; };
    const absl::Time deadline = clock_->Now() + std::max(timeout, absl::ZeroDuration());
    return clock_->AwaitWithDeadline(&t->mu, absl::Condition(&is_ready), deadline);
  }

 private:
  const std::shared_ptr<InProcessTable> table_;
  Clock* const clock_;
};

struct ChannelRegistry {
  absl::Mutex mu;
  std::map<std::string, ReadinessChannelFactory> factories ABSL_GUARDED_BY(mu);
};

ChannelRegistry* Registry() {
  static ChannelRegistry* registry = new ChannelRegistry();
  return registry;
}

}  // namespace

void RegisterReadinessChannelFactory(const std::string& prefix, ReadinessChannelFactory factory) {
  ChannelRegistry* r = Registry();
  absl::MutexLock lock(&r->mu);
  r->factories[prefix] = std::move(factory);
}

absl::StatusOr<std::unique_ptr<ReadinessChannel>> NewReadinessChannel(const std::string& target) {
  return NewReadinessChannel(target, Clock::Real());
}

absl::StatusOr<std::unique_ptr<ReadinessChannel>> NewReadinessChannel(const std::string& target,
                                                                      Clock* clock,
                                                                      ResourceMgr* resources) {
  if (clock == nullptr) return absl::InvalidArgumentError("NewReadinessChannel needs a clock");
  if (target.empty()) {
    if (resources == nullptr) resources = ResourceMgr::Default();
    absl::StatusOr<std::shared_ptr<InProcessTable>> table =
        resources->LookupOrCreate<InProcessTable>(
            kTableContainer, kTableName, []() -> absl::StatusOr<std::shared_ptr<InProcessTable>> {
              return std::make_shared<InProcessTable>();
            });
    if (!table.ok()) return table.status();
    return std::make_unique<InProcessReadinessChannel>(*std::move(table), clock);
  }
  ReadinessChannelFactory factory;
  std::string known = "\"\" (in-process)";
  {
    ChannelRegistry* r = Registry();
    absl::MutexLock lock(&r->mu);
    size_t best = 0;
    for (const auto& [prefix, f] : r->factories) {
      absl::StrAppend(&known, ", \"", prefix, "\"");
      if (absl::StartsWith(target, prefix) && (factory == nullptr || prefix.size() > best)) {
        factory = f;
        best = prefix.size();
      }
    }
  }
  if (factory == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no readiness channel for target '", target, "'; known targets: ", known,
                     " (link //client/session:grpc_session for grpc://)"));
  }
  return factory(target, clock);
}

}  // namespace overseer

#include "client/session/readiness.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
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
  explicit InProcessReadinessChannel(std::shared_ptr<InProcessTable> table)
      : table_(std::move(table)) {}

  absl::Status MarkReady(const std::string& key) override {
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
    return t->mu.AwaitWithTimeout(absl::Condition(&is_ready), timeout);
  }

 private:
  const std::shared_ptr<InProcessTable> table_;
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

absl::StatusOr<std::unique_ptr<ReadinessChannel>> NewReadinessChannel(const std::string& target,
                                                                      ResourceMgr* resources) {
  if (target.empty()) {
    if (resources == nullptr) resources = ResourceMgr::Default();
    absl::StatusOr<std::shared_ptr<InProcessTable>> table =
        resources->LookupOrCreate<InProcessTable>(
            kTableContainer, kTableName, []() -> absl::StatusOr<std::shared_ptr<InProcessTable>> {
              return std::make_shared<InProcessTable>();
            });
    if (!table.ok()) return table.status();
    return std::make_unique<InProcessReadinessChannel>(*std::move(table));
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
  return factory(target);
}

}  // namespace overseer

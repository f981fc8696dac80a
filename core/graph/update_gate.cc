#include "core/graph/update_gate.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/node_def_util.h"
#include "core/types.h"

namespace overseer {
namespace {

constexpr char kVariableOp[] = "VariableV2";

std::string VariableKey(const GraphNode& var, const std::string& device) {
  std::string name = GetNodeAttrOr<std::string>(*var.def, "shared_name", "");
  if (name.empty()) name = var.name();
  return absl::StrCat(device, "|", GetNodeAttrOr<std::string>(*var.def, "container", ""), "|",
                      name);
}

// The VariableV2 node a ref edge from `from` comes from, following ops that pass a ref
// input on as their ref output (Assign, the Apply ops...); -1 if it comes from
// anything else.
int RefSource(const Graph& g, Endpoint from) {
  for (int hops = 0; hops <= g.num_nodes(); ++hops) {
    const GraphNode& n = g.node(from.node);
    if (n.def->op() == kVariableOp) return n.id;
    if (n.inputs.empty() || n.input_types.empty() || !IsRefType(n.input_types[0])) return -1;
    from = n.inputs[0];
  }
  return -1;
}

bool Intersect(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return true;
    if (*i < *j) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

void SortUnique(std::vector<std::string>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

VariableAccess StepVariableAccess(const Graph& step, const std::vector<std::string>& devices) {
  VariableAccess access;
  auto device = [&](int id) {
    return id < static_cast<int>(devices.size()) ? devices[id] : std::string();
  };
  for (int id = 0; id < step.num_nodes(); ++id) {
    const GraphNode& n = step.node(id);
    if (n.def->op() == kCheckpointSnapshotOp) access.snapshot = true;
    if (n.def->op() == kVariableOp) access.touched.push_back(VariableKey(n, device(id)));
    // A ref input is written, except by the one op that only asks about it.
    if (n.def->op() == "IsVariableInitialized") continue;
    for (size_t i = 0; i < n.inputs.size() && i < n.input_types.size(); ++i) {
      if (!IsRefType(n.input_types[i])) continue;
      const int var = RefSource(step, n.inputs[i]);
      if (var >= 0) access.written.push_back(VariableKey(step.node(var), device(var)));
    }
  }
  SortUnique(&access.written);
  SortUnique(&access.touched);
  return access;
}

GatePass StepGatePass(const Graph& step, const std::vector<std::string>& devices) {
  VariableAccess access = StepVariableAccess(step, devices);
  GatePass pass;
  pass.snapshot = access.snapshot;
  pass.keys = std::make_shared<const std::vector<std::string>>(
      access.snapshot ? std::move(access.touched) : std::move(access.written));
  return pass;
}

UpdateGate::UpdateGate(absl::Duration snapshot_wait, SnapshotObserver observer)
    : snapshot_wait_(snapshot_wait), observer_(std::move(observer)) {}

bool UpdateGate::Blocks(const std::vector<std::string>& keys) const {
  return snapshot_ != nullptr && Intersect(keys, *snapshot_);
}

const std::string* UpdateGate::Written(const std::vector<std::string>& keys) const {
  for (const auto& [written, count] : writing_) {
    for (const std::string& k : keys) {
      if (std::binary_search(written->begin(), written->end(), k)) return &k;
    }
  }
  return nullptr;
}

void UpdateGate::EnterWriter(std::shared_ptr<const std::vector<std::string>> keys,
                             std::function<void()> go) {
  {
    absl::MutexLock lock(&mu_);
    if (Blocks(*keys)) {
      waiters_.push_back({std::move(keys), std::move(go)});
      return;
    }
    ++writing_[keys];
  }
  go();
}

void UpdateGate::EnterWriterBlocking(std::shared_ptr<const std::vector<std::string>> keys) {
  absl::Notification admitted;
  EnterWriter(std::move(keys), [&admitted] { admitted.Notify(); });
  admitted.WaitForNotification();
}

void UpdateGate::ExitWriter(const std::shared_ptr<const std::vector<std::string>>& keys) {
  absl::MutexLock lock(&mu_);
  auto it = writing_.find(keys);
  if (it != writing_.end() && --it->second == 0) writing_.erase(it);
}

std::vector<std::function<void()>> UpdateGate::ReleaseWaiters() {
  std::vector<std::function<void()>> go;
  std::vector<Waiter> still;
  for (Waiter& w : waiters_) {
    if (Blocks(*w.keys)) {
      still.push_back(std::move(w));
      continue;
    }
    ++writing_[w.keys];
    go.push_back(std::move(w.go));
  }
  waiters_ = std::move(still);
  return go;
}

absl::Status UpdateGate::EnterSnapshot(std::shared_ptr<const std::vector<std::string>> keys) {
  const absl::Time start = absl::Now();
  absl::Status entered = WaitForWriters(std::move(keys), start + snapshot_wait_);
  // Outside the lock: the observer may take its own.
  if (observer_) observer_(absl::Now() - start, entered.ok());
  return entered;
}

absl::Status UpdateGate::WaitForWriters(std::shared_ptr<const std::vector<std::string>> keys,
                                        absl::Time deadline) {
  const std::string late = absl::StrCat("no consistent snapshot of the variables within ",
                                        absl::FormatDuration(snapshot_wait_), ": ");
  std::string busy;
  std::vector<std::function<void()>> released;
  {
    absl::MutexLock lock(&mu_);
    auto no_snapshot = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return snapshot_ == nullptr; };
    if (!mu_.AwaitWithDeadline(absl::Condition(&no_snapshot), deadline)) {
      return absl::DeadlineExceededError(absl::StrCat(late, "another snapshot still runs"));
    }
    snapshot_ = keys;
    auto quiet = [this, &keys]()
                     ABSL_SHARED_LOCKS_REQUIRED(mu_) { return Written(*keys) == nullptr; };
    if (mu_.AwaitWithDeadline(absl::Condition(&quiet), deadline)) return absl::OkStatus();
    if (const std::string* k = Written(*keys)) busy = *k;
    snapshot_ = nullptr;
    released = ReleaseWaiters();
  }
  for (auto& go : released) go();
  return absl::DeadlineExceededError(
      absl::StrCat(late, "a step writing variable ", busy,
                   " did not finish (a step that writes variables and also waits, in a queue or an "
                   "accumulator, holds them while it waits)"));
}

void UpdateGate::ExitSnapshot() {
  std::vector<std::function<void()>> released;
  {
    absl::MutexLock lock(&mu_);
    snapshot_ = nullptr;
    released = ReleaseWaiters();
  }
  for (auto& go : released) go();
}

int UpdateGate::waiting_writers() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(waiters_.size());
}

}  // namespace overseer

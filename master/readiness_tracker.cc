#include "master/readiness_tracker.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"

namespace overseer {
namespace {

constexpr char kShuttingDown[] = "the master is shutting down";

std::string Quoted(const std::string& key) { return absl::StrCat("'", key, "'"); }

}  // namespace

ReadinessTracker::ReadinessTracker(MasterWorkerCacheInterface* workers, Clock* clock,
                                   ReadinessListener* listener, ReadinessOptions options)
    : workers_(workers), clock_(clock), listener_(listener), options_(options) {
  if (options_.check_thread) checker_ = std::thread([this] { CheckLoop(); });
}

ReadinessTracker::~ReadinessTracker() { Shutdown(); }

void ReadinessTracker::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (checker_.joinable() && checker_.get_id() != std::this_thread::get_id()) checker_.join();
}

int ReadinessTracker::num_records() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(records_.size());
}

int ReadinessTracker::num_waiters() const {
  absl::MutexLock lock(&mu_);
  return waiters_;
}

std::map<std::string, absl::StatusOr<uint64_t>> ReadinessTracker::Probe(
    const std::vector<std::string>& tasks) {
  std::vector<absl::StatusOr<uint64_t>> results(tasks.size(), uint64_t{0});
  std::vector<std::thread> threads;
  threads.reserve(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    threads.emplace_back([&, i] {
      WorkerInterface* worker = workers_->GetWorker(tasks[i]);
      if (worker == nullptr) {
        results[i] = absl::NotFoundError("not a task of the cluster");
        return;
      }
      GetStatusResponse response;
      const absl::Status status = worker->GetStatus(GetStatusRequest(), &response);
      if (status.ok()) {
        results[i] = response.incarnation();
      } else {
        results[i] = status;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::map<std::string, absl::StatusOr<uint64_t>> out;
  for (size_t i = 0; i < tasks.size(); ++i) out.emplace(tasks[i], std::move(results[i]));
  return out;
}

std::string ReadinessTracker::Violation(
    const Record& record, const std::map<std::string, absl::StatusOr<uint64_t>>& probed) {
  for (const auto& [task, incarnation] : record.incarnations) {
    auto it = probed.find(task);
    if (it == probed.end()) continue;
    if (!it->second.ok()) {
      return absl::StrCat("task ", task, " did not answer GetStatus (",
                          it->second.status().ToString(), ")");
    }
    if (*it->second != incarnation) {
      return absl::StrCat("task ", task, " restarted (incarnation ", absl::Hex(incarnation),
                          ", now ", absl::Hex(*it->second), ") and lost its state");
    }
  }
  return "";
}

void ReadinessTracker::WithdrawLocked(const std::string& key, uint64_t generation,
                                      const std::string& reason) {
  auto it = records_.find(key);
  if (it == records_.end() || it->second.generation != generation) return;
  records_.erase(it);
  withdrawn_[key] = reason;
  LOG(WARNING) << "readiness of " << Quoted(key) << " withdrawn: " << reason;
  if (listener_ != nullptr) listener_->Withdrawn(key, reason);
}

std::string ReadinessTracker::NotReadyReasonLocked(const std::string& key) const {
  if (stopping_) return kShuttingDown;
  auto it = withdrawn_.find(key);
  if (it != withdrawn_.end()) {
    return absl::StrCat("the readiness of ", Quoted(key), " was withdrawn: ", it->second);
  }
  return absl::StrCat(Quoted(key),
                      " has not been marked ready on this master (the chief has not marked "
                      "it yet, or the master restarted since and lost the record)");
}

void ReadinessTracker::SetWaitersLocked(int delta) {
  waiters_ += delta;
  if (listener_ != nullptr) listener_->WaitersChanged(waiters_);
}

absl::Status ReadinessTracker::MarkReady(const std::string& key,
                                         const std::vector<std::string>& only) {
  const std::vector<std::string> tasks = only.empty() ? workers_->ListTasks() : only;
  const auto probed = Probe(tasks);
  std::vector<std::string> failed;
  Record record;
  for (const auto& [task, incarnation] : probed) {
    if (incarnation.ok()) {
      record.incarnations[task] = *incarnation;
    } else {
      failed.push_back(absl::StrCat(task, " (", incarnation.status().ToString(), ")"));
    }
  }
  if (!failed.empty()) {
    return absl::UnavailableError(
        absl::StrCat("MarkReady(", Quoted(key),
                     "): these tasks did not answer GetStatus, so the model "
                     "cannot be recorded as ready: ",
                     absl::StrJoin(failed, "; ")));
  }
  absl::MutexLock lock(&mu_);
  record.checked_at = clock_->Now();
  record.generation = next_generation_++;
  records_[key] = std::move(record);
  withdrawn_.erase(key);
  LOG(INFO) << "readiness of " << Quoted(key) << " marked over " << tasks.size() << " tasks";
  if (listener_ != nullptr) listener_->Marked(key);
  return absl::OkStatus();
}

void ReadinessTracker::WithdrawReady(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return;
  WithdrawLocked(key, it->second.generation, "withdrawn by WithdrawReady (the chief)");
}

absl::Status ReadinessTracker::WaitForReady(const std::string& key, absl::Duration timeout,
                                            WaitForReadyResponse* response,
                                            CancellationManager* cancellation) {
  // Set under mu_ by the cancellation callback, which may run after this call returned
  // (DeregisterCallback does not wait for a running one): hence shared.
  auto cancelled = std::make_shared<bool>(false);
  CancellationManager::Token token = CancellationManager::kInvalidToken;
  if (cancellation != nullptr) {
    token = cancellation->RegisterCallback([this, cancelled] {
      absl::MutexLock lock(&mu_);
      *cancelled = true;
    });
    if (token == CancellationManager::kInvalidToken) *cancelled = true;  // Already.
  }
  absl::Status status = Wait(key, timeout, *cancelled, response);
  if (token != CancellationManager::kInvalidToken) cancellation->DeregisterCallback(token);
  return status;
}

absl::Status ReadinessTracker::Wait(const std::string& key, absl::Duration timeout,
                                    const bool& cancelled, WaitForReadyResponse* response) {
  const absl::Duration wait = std::min(std::max(timeout, absl::ZeroDuration()), options_.max_wait);
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = clock_->Now() + wait;
  if (waiters_ >= options_.max_waiters) {
    return absl::ResourceExhaustedError(
        absl::StrCat("WaitForReady(", Quoted(key), "): ", waiters_,
                     " calls are waiting already (the limit); retry later"));
  }
  SetWaitersLocked(+1);
  auto marked_stopping_or_cancelled = [this, &key,
                                       &cancelled]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || cancelled || records_.count(key) > 0;
  };
  bool ready = false;
  while (!stopping_) {
    clock_->AwaitWithDeadline(&mu_, absl::Condition(&marked_stopping_or_cancelled), deadline);
    if (cancelled) {
      SetWaitersLocked(-1);
      return absl::CancelledError(
          absl::StrCat("WaitForReady(", Quoted(key), ") was cancelled: the caller gave up"));
    }
    auto it = records_.find(key);
    if (stopping_ || it == records_.end()) break;  // Deadline passed, or shutting down.
    if (clock_->Now() - it->second.checked_at <= options_.fresh_for) {
      ready = true;
      break;
    }
    // Check the record before vouching for it; waits on meanwhile hold no lock.
    const Record snapshot = it->second;
    std::vector<std::string> tasks;
    for (const auto& [task, incarnation] : snapshot.incarnations) tasks.push_back(task);
    mu_.Unlock();
    const std::string violation = Violation(snapshot, Probe(tasks));
    mu_.Lock();
    if (violation.empty()) {
      it = records_.find(key);
      if (it != records_.end() && it->second.generation == snapshot.generation) {
        it->second.checked_at = std::max(it->second.checked_at, clock_->Now());
      }
      ready = true;
      break;
    }
    WithdrawLocked(key, snapshot.generation, violation);
    // Wait on: the chief may mark the model again before the deadline.
  }
  SetWaitersLocked(-1);
  response->set_ready(ready);
  if (!ready) response->set_reason(NotReadyReasonLocked(key));
  return absl::OkStatus();
}

int ReadinessTracker::CheckRecords() {
  std::map<std::string, Record> snapshot;
  {
    absl::MutexLock lock(&mu_);
    snapshot = records_;
  }
  if (snapshot.empty()) return 0;
  std::set<std::string> task_set;
  for (const auto& [key, record] : snapshot) {
    for (const auto& [task, incarnation] : record.incarnations) task_set.insert(task);
  }
  const auto probed = Probe(std::vector<std::string>(task_set.begin(), task_set.end()));
  int withdrawn = 0;
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  for (const auto& [key, record] : snapshot) {
    const std::string violation = Violation(record, probed);
    auto it = records_.find(key);
    if (it == records_.end() || it->second.generation != record.generation) continue;
    if (violation.empty()) {
      it->second.checked_at = std::max(it->second.checked_at, now);
    } else {
      WithdrawLocked(key, record.generation, violation);
      ++withdrawn;
    }
  }
  return withdrawn;
}

void ReadinessTracker::CheckLoop() {
  auto records_or_stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !records_.empty();
  };
  absl::MutexLock lock(&mu_);
  while (true) {
    // Idle (no clock involved) until there is something to check.
    mu_.Await(absl::Condition(&records_or_stopping));
    if (stopping_) return;
    if (clock_->AwaitWithDeadline(&mu_, absl::Condition(&stopping_),
                                  clock_->Now() + options_.check_period)) {
      return;
    }
    mu_.Unlock();
    CheckRecords();
    mu_.Lock();
  }
}

}  // namespace overseer

#include "master/step_runner.h"

#include <algorithm>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "core/executor/thread_pool.h"

namespace overseer {

absl::Status TaskError(const std::string& task, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("task ", task, ": ", status.message()));
}

namespace {

// Runs the RunGraph calls of a step's other tasks. Process-wide, like the threads of a
// gRPC server.
ThreadPool* StepThreads() {
  static ThreadPool* pool = new ThreadPool(1);
  return pool;
}

// Collects the first real error and cancels the step on every task once.
class StepErrors {
 public:
  StepErrors(MasterWorkerCacheInterface* workers, const RegisteredStep& step, int64_t step_id)
      : workers_(workers), step_(step), step_id_(step_id) {}

  void Report(const std::string& task, const absl::Status& s) {
    if (s.ok()) return;
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      // A CANCELLED status caused by our own cancellation is not the cause.
      const bool better = first_.ok() || (first_.code() == absl::StatusCode::kCancelled &&
                                          s.code() != absl::StatusCode::kCancelled);
      if (better) first_ = TaskError(task, s);
      cancel = !cancelled_;
      cancelled_ = true;
    }
    if (cancel) CleanupAll();
  }

  void CleanupAll() {
    CleanupGraphRequest req;
    req.set_step_id(step_id_);
    for (const auto& [task, handle] : step_.graph_handles) {
      WorkerInterface* w = workers_->GetWorker(task);
      CleanupGraphResponse resp;
      if (w != nullptr) w->CleanupGraph(req, &resp).IgnoreError();
    }
  }

  absl::Status first() {
    absl::MutexLock lock(&mu_);
    return first_;
  }

 private:
  MasterWorkerCacheInterface* const workers_;
  const RegisteredStep& step_;
  const int64_t step_id_;
  absl::Mutex mu_;
  absl::Status first_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

StepCleaner::StepCleaner(MasterWorkerCacheInterface* workers, int max_pending)
    : workers_(workers), max_pending_(static_cast<size_t>(std::max(1, max_pending))) {
  thread_ = std::thread([this] { Loop(); });
}

StepCleaner::~StepCleaner() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void StepCleaner::Enqueue(std::vector<std::string> tasks, int64_t step_id) {
  absl::MutexLock lock(&mu_);
  auto has_room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return pending_.size() < max_pending_;
  };
  mu_.Await(absl::Condition(&has_room));
  pending_.push_back(Pending{std::move(tasks), step_id});
}

void StepCleaner::Loop() {
  while (true) {
    Pending next;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !pending_.empty();
      };
      mu_.Await(absl::Condition(&has_work));
      if (pending_.empty()) return;  // Stopping, and everything is sent.
      next = std::move(pending_.front());
      pending_.pop_front();
    }
    CleanupGraphRequest req;
    req.set_step_id(next.step_id);
    for (const std::string& task : next.tasks) {
      WorkerInterface* w = workers_->GetWorker(task);
      CleanupGraphResponse resp;
      if (w != nullptr) w->CleanupGraph(req, &resp).IgnoreError();
    }
  }
}

absl::Status RunRegisteredStep(MasterWorkerCacheInterface* workers, const RegisteredStep& step,
                               const StepArgs& args, std::vector<TensorProto>* fetches,
                               StepStats* stats, StepCleaner* cleaner) {
  if (args.feeds.size() != step.feeds.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the step expects ", step.feeds.size(),
                                                   " feeds, got ", args.feeds.size()));
  }
  // Build each task's request.
  std::map<std::string, RunGraphRequest> requests;
  for (const auto& [task, handle] : step.graph_handles) {
    RunGraphRequest& r = requests[task];
    r.set_graph_handle(handle);
    r.set_session_handle(args.session_handle);
    r.set_step_id(args.step_id);
    r.set_timeout_in_ms(args.timeout_in_ms);
    if (args.trace) r.mutable_exec_opts()->set_record_timeline(true);
    if (step.peer_senders.count(task) == 0) r.set_cleanup_on_return(true);
  }
  for (size_t i = 0; i < step.feeds.size(); ++i) {
    NamedTensorProto* send = requests[step.feeds[i].task].add_send();
    send->set_name(step.feeds[i].key);
    *send->mutable_tensor() = *args.feeds[i];
  }
  // Fetch keys per task (a key fetched twice is asked for once).
  std::map<std::string, absl::flat_hash_map<std::string, int>> fetch_slot;
  for (const PartitionEndpoint& f : step.fetches) {
    auto& slots = fetch_slot[f.task];
    if (slots.emplace(f.key, slots.size()).second) requests[f.task].add_recv_key(f.key);
  }

  StepErrors errors(workers, step, args.step_id);
  std::map<std::string, RunGraphResponse> responses;
  for (const auto& [task, r] : requests) responses[task];
  auto run = [&](const std::string& task) {
    WorkerInterface* w = workers->GetWorker(task);
    if (w == nullptr) {
      errors.Report(task, absl::UnavailableError("task is not in the cluster"));
      return;
    }
    errors.Report(task, w->RunGraph(requests.at(task), &responses.at(task)));
  };
  // The first task's RunGraph on this thread, the others' on pool threads (the pool
  // grows rather than make one wait, so partitions waiting on each other never
  // deadlock; no thread is created per step).
  absl::BlockingCounter others(std::max<int>(0, static_cast<int>(requests.size()) - 1));
  auto it = requests.begin();
  if (it != requests.end()) {
    for (auto next = std::next(it); next != requests.end(); ++next) {
      const std::string* task = &next->first;
      StepThreads()->Schedule([&run, &others, task] {
        run(*task);
        others.DecrementCount();
      });
    }
    run(it->first);
  }
  others.Wait();
  absl::Status status = errors.first();
  if (!status.ok() || cleaner == nullptr) {
    errors.CleanupAll();
  } else if (!step.peer_senders.empty()) {
    // The other tasks freed their state as RunGraph returned.
    cleaner->Enqueue(std::vector<std::string>(step.peer_senders.begin(), step.peer_senders.end()),
                     args.step_id);
  }
  if (!status.ok()) return status;
  fetches->clear();
  fetches->reserve(step.fetches.size());
  // Where each (task, slot) went in `fetches`: moved there the first time, copied from
  // there for a key fetched twice.
  std::map<std::pair<std::string, int>, size_t> placed;
  for (const PartitionEndpoint& f : step.fetches) {
    RunGraphResponse& resp = responses.at(f.task);
    const int slot = fetch_slot[f.task].at(f.key);
    if (slot >= resp.recv_size() || resp.recv(slot).name() != f.key) {
      return TaskError(f.task, absl::InternalError(absl::StrCat(
                                   "RunGraph did not return the fetched key ", f.key)));
    }
    auto [where, first] = placed.emplace(std::make_pair(f.task, slot), fetches->size());
    if (first) {
      fetches->emplace_back().Swap(resp.mutable_recv(slot)->mutable_tensor());
    } else {
      fetches->push_back((*fetches)[where->second]);
    }
  }
  if (stats != nullptr) {
    for (auto& [task, resp] : responses) {
      for (const auto& dev : resp.step_stats().dev_stats()) *stats->add_dev_stats() = dev;
    }
  }
  return absl::OkStatus();
}

}  // namespace overseer

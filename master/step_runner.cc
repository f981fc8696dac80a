#include "master/step_runner.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace overseer {

absl::Status TaskError(const std::string& task, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("task ", task, ": ", status.message()));
}

ThreadPool* StepBlockingThreads() {
  static ThreadPool* pool = new ThreadPool(1);
  return pool;
}

namespace {

// Sends CleanupGraph for `step_id` to every task of `step` at once and waits for all of
// them (blocking): a task that does not answer (frozen, cut off) holds the step's end up
// for its own call's deadline once, not once more for every such task.
void CleanupAll(MasterWorkerCacheInterface* workers, const RegisteredStep& step, int64_t step_id) {
  CleanupGraphRequest req;
  req.set_step_id(step_id);
  std::vector<WorkerInterface*> tasks;
  for (const auto& [task, handle] : step.graph_handles) {
    if (WorkerInterface* w = workers->GetWorker(task)) tasks.push_back(w);
  }
  if (tasks.empty()) return;
  auto cleanup = [&req](WorkerInterface* w) {
    CleanupGraphResponse resp;
    w->CleanupGraph(req, &resp).IgnoreError();
  };
  absl::BlockingCounter others(static_cast<int>(tasks.size()) - 1);
  for (size_t i = 1; i < tasks.size(); ++i) {
    // The pool grows: this never waits for a thread.
    StepBlockingThreads()->Schedule([&cleanup, &others, w = tasks[i]] {
      cleanup(w);
      others.DecrementCount();
    });
  }
  cleanup(tasks[0]);
  others.Wait();
}

// One step in flight: its requests and replies, the first real error, and how many
// RunGraph calls are still out. Shared by the calls' completions.
class StepCall : public std::enable_shared_from_this<StepCall> {
 public:
  StepCall(MasterWorkerCacheInterface* workers, const RegisteredStep& step, int64_t step_id,
           std::vector<TensorProto>* fetches, RunMetadata* metadata, StepCleaner* cleaner,
           std::function<void(absl::Status)> done)
      : workers_(workers),
        step_(step),
        step_id_(step_id),
        fetches_(fetches),
        metadata_(metadata),
        cleaner_(cleaner),
        done_(std::move(done)) {}

  // Builds each task's request; INVALID_ARGUMENT for a wrong number of feeds.
  absl::Status Build(const StepArgs& args) {
    if (args.feeds.size() != step_.feeds.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the step expects ", step_.feeds.size(), " feeds, got ", args.feeds.size()));
    }
    timeout_in_ms_ = args.timeout_in_ms;
    std::set<std::string> declined;
    if (!step_.forwarders.empty()) {
      absl::MutexLock lock(&step_.declined->mu);
      declined = step_.declined->tasks;
    }
    for (const auto& [task, handle] : step_.graph_handles) {
      RunGraphRequest& r = requests_[task];
      r.set_graph_handle(handle);
      r.set_session_handle(args.session_handle);
      r.set_step_id(args.step_id);
      r.set_timeout_in_ms(args.timeout_in_ms);
      if (args.trace) r.mutable_exec_opts()->set_record_timeline(true);
      if (args.trace && args.trace_outputs) r.mutable_exec_opts()->set_record_outputs(true);
      if (args.partition_graphs) r.mutable_exec_opts()->set_record_partition_graphs(true);
      auto forwards = step_.forwarders.find(task);
      if (forwards != step_.forwarders.end() && declined.count(task) == 0) {
        for (const auto& [key, to] : forwards->second) r.add_forward_key(key);
        r.set_forward_max_bytes(kMaxForwardBytes);
        // Freed as it returns if it returns every key.
        r.set_cleanup_on_return(true);
      }
      if (step_.peer_senders.count(task) == 0) r.set_cleanup_on_return(true);
      if (cleaner_ != nullptr) cleaner_->TakeFor(task, &r);
    }
    for (size_t i = 0; i < step_.feeds.size(); ++i) {
      NamedTensorProto* send = requests_[step_.feeds[i].task].add_send();
      send->set_name(step_.feeds[i].key);
      *send->mutable_tensor() = *args.feeds[i];
    }
    // Fetch keys per task (a key fetched twice is asked for once).
    for (const PartitionEndpoint& f : step_.fetches) {
      auto& slots = fetch_slot_[f.task];
      if (slots.emplace(f.key, slots.size()).second) requests_[f.task].add_recv_key(f.key);
    }
    for (const auto& [task, r] : requests_) {
      responses_[task];
      stages_[r.forward_key_size() > 0 ? 0 : 1].push_back(&task);
    }
    if (stages_[0].empty()) std::swap(stages_[0], stages_[1]);
    absl::MutexLock lock(&mu_);  // Not shared yet, but pending_ is guarded.
    pending_ = static_cast<int>(stages_[0].size());
    return absl::OkStatus();
  }

  // Starts the step: every task's RunGraph, or with forwarding the forwarders' first
  // and the others' once they all returned. Touches nothing of the caller's after the
  // last one starts (its reply may finish the step at once).
  void Start(CancellationManager* cancellation, CancellationManager* session_cancellation) {
    if (requests_.empty()) {
      Finish();
      return;
    }
    std::shared_ptr<StepCall> self = shared_from_this();
    // The caller gave up, or the session was aborted: the step ends on every task
    // (CleanupGraph; an in-process worker's RunGraph only sees that). The caller's
    // cancellation also ends the RunGraph calls (CANCELLED).
    for (CancellationManager* m : {cancellation, session_cancellation}) {
      if (m == nullptr) continue;
      const CancellationManager::Token token = m->RegisterCallback([self] { self->Cancel(); });
      if (token == CancellationManager::kInvalidToken) {  // Already cancelled.
        {
          absl::MutexLock lock(&mu_);
          first_ = m->status();
          pending_ = 0;
        }
        Finish();
        return;
      }
      registered_.emplace_back(m, token);
    }
    cancellation_ = cancellation;
    StartStage(0);
  }

 private:
  // Cancels the step on every task (once), on a StepBlockingThreads() thread. `done`
  // waits for it (the caller's step must outlive it). A cancellation whose callback was
  // already running as Finish deregistered it may come after `done`: it then does
  // nothing (what `done` released, such as the registered step, may be gone).
  void Cancel() {
    {
      absl::MutexLock lock(&mu_);
      // A result before any cancellation was delivered (Deliver).
      if (cancelling_ != kNotCancelled || result_.has_value()) return;
      cancelling_ = kCancelling;
    }
    std::shared_ptr<StepCall> self = shared_from_this();
    StepBlockingThreads()->Schedule([self] {
      CleanupAll(self->workers_, self->step_, self->step_id_);
      bool deliver = false;
      {
        absl::MutexLock lock(&self->mu_);
        self->cancelling_ = kCancelled;
        deliver = self->result_.has_value();
      }
      if (deliver) self->done_(*self->result_);
    });
  }

  // Calls `done` with the step's result, or leaves that to a cancellation still
  // cleaning up.
  void Deliver(absl::Status status) {
    {
      absl::MutexLock lock(&mu_);
      result_ = std::move(status);
      if (cancelling_ == kCancelling) return;
    }
    done_(*result_);
  }

  // Starts the RunGraph of the tasks of stages_[stage]. The second has what is left of
  // the step's timeout.
  void StartStage(int stage) {
    std::shared_ptr<StepCall> self = shared_from_this();
    if (stage == 0) {
      started_ = absl::Now();
    } else if (timeout_in_ms_ > 0) {
      const int64_t left = timeout_in_ms_ - absl::ToInt64Milliseconds(absl::Now() - started_);
      for (const std::string* name : stages_[stage]) {
        requests_.at(*name).set_timeout_in_ms(std::max<int64_t>(1, left));
      }
    }
    for (const std::string* name : stages_[stage]) {
      WorkerInterface* w = workers_->GetWorker(*name);
      if (w == nullptr) {
        OnReply(*name, absl::UnavailableError("task is not in the cluster"));
        continue;
      }
      w->RunGraphAsync(&requests_.at(*name), &responses_.at(*name), cancellation_,
                       [self, name](absl::Status s) { self->OnReply(*name, s); });
    }
  }

  // Every forwarder returned: moves the tensors they returned into their consumers'
  // requests. A forwarder that returned fewer than its keys kept its step (its
  // consumers pull the others), and is not asked to forward again.
  void Forward() {
    for (const std::string* task : stages_[0]) {
      const std::map<std::string, std::string>& to = step_.forwarders.at(*task);
      RunGraphResponse& resp = responses_.at(*task);
      int carried = 0;
      for (NamedTensorProto& f : *resp.mutable_forwarded()) {
        auto consumer = to.find(f.name());
        if (consumer == to.end()) continue;  // Not asked for.
        auto request = requests_.find(consumer->second);
        if (request == requests_.end()) continue;  // Cannot be: it has the _Recv.
        request->second.add_forwarded()->Swap(&f);
        ++carried;
      }
      resp.clear_forwarded();
      if (carried < requests_.at(*task).forward_key_size()) {
        kept_.insert(*task);
        absl::MutexLock lock(&step_.declined->mu);
        step_.declined->tasks.insert(*task);
      }
    }
  }

  void OnReply(const std::string& task, const absl::Status& s) {
    bool cancel = false;
    bool last = false;
    bool next_stage = false;
    {
      absl::MutexLock lock(&mu_);
      if (!s.ok()) {
        // A CANCELLED status caused by our own cancellation is not the cause.
        const bool better = first_.ok() || (first_.code() == absl::StatusCode::kCancelled &&
                                            s.code() != absl::StatusCode::kCancelled);
        if (better) first_ = TaskError(task, s);
        cancel = true;
      }
      last = --pending_ == 0;
      if (last && stage_ == 0 && !stages_[1].empty() && first_.ok()) {
        stage_ = 1;
        pending_ = static_cast<int>(stages_[1].size());
        next_stage = true;
      }
    }
    if (next_stage) {
      // Nothing else touches the replies or requests until the next stage starts.
      Forward();
      StartStage(1);
    } else if (last) {
      Finish();  // Cleans up every task anyway.
    } else if (cancel) {
      // Partitions waiting for the failed one return now.
      Cancel();
    }
  }

  // Every RunGraph returned.
  void Finish() {
    for (const auto& [m, token] : registered_) m->DeregisterCallback(token);
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      status = first_;
    }
    if (!status.ok() && cleaner_ != nullptr) {
      // A RunGraph that failed may not have reached its task with the earlier steps'
      // cleanups it carried.
      for (const auto& [task, request] : requests_) cleaner_->GiveBack(task, request);
    }
    if (!status.ok() || cleaner_ == nullptr) {
      std::shared_ptr<StepCall> self = shared_from_this();
      StepBlockingThreads()->Schedule([self, status] {
        CleanupAll(self->workers_, self->step_, self->step_id_);
        self->Deliver(status.ok() ? self->Collect() : status);
      });
      return;
    }
    // The other tasks freed their state as RunGraph returned, as did forwarders that
    // returned every tensor they sent.
    std::vector<std::string> kept;
    for (const std::string& task : step_.peer_senders) {
      if (requests_.at(task).forward_key_size() == 0 || kept_.count(task) > 0) {
        kept.push_back(task);
      }
    }
    if (!kept.empty()) cleaner_->Enqueue(kept, step_id_);
    Deliver(Collect());
  }

  // Moves the fetched tensors (and stats) out of the replies.
  absl::Status Collect() {
    fetches_->clear();
    fetches_->reserve(step_.fetches.size());
    // Where each (task, slot) went in `fetches`: moved there the first time, copied from
    // there for a key fetched twice.
    std::map<std::pair<std::string, int>, size_t> placed;
    for (const PartitionEndpoint& f : step_.fetches) {
      RunGraphResponse& resp = responses_.at(f.task);
      const int slot = fetch_slot_[f.task].at(f.key);
      if (slot >= resp.recv_size() || resp.recv(slot).name() != f.key) {
        return TaskError(f.task, absl::InternalError(absl::StrCat(
                                     "RunGraph did not return the fetched key ", f.key)));
      }
      auto [where, first] = placed.emplace(std::make_pair(f.task, slot), fetches_->size());
      if (first) {
        fetches_->emplace_back().Swap(resp.mutable_recv(slot)->mutable_tensor());
      } else {
        fetches_->push_back((*fetches_)[where->second]);
      }
    }
    if (metadata_ != nullptr) {
      for (auto& [task, resp] : responses_) {
        for (auto& dev : *resp.mutable_step_stats()->mutable_dev_stats()) {
          metadata_->mutable_step_stats()->add_dev_stats()->Swap(&dev);
        }
        for (GraphDef& g : *resp.mutable_partition_graph()) {
          metadata_->add_partition_graphs()->Swap(&g);
        }
      }
    }
    return absl::OkStatus();
  }

  MasterWorkerCacheInterface* const workers_;
  const RegisteredStep& step_;
  const int64_t step_id_;
  std::vector<TensorProto>* const fetches_;
  RunMetadata* const metadata_;
  StepCleaner* const cleaner_;
  const std::function<void(absl::Status)> done_;
  std::map<std::string, RunGraphRequest> requests_;
  std::map<std::string, RunGraphResponse> responses_;
  std::map<std::string, absl::flat_hash_map<std::string, int>> fetch_slot_;
  // The tasks of each stage (keys of requests_): with forwarding the forwarders, then
  // the others; else all, then none. Set by Build.
  std::vector<const std::string*> stages_[2];
  // Forwarders that kept their step (set by Forward, read by Finish after it).
  std::set<std::string> kept_;
  int64_t timeout_in_ms_ = 0;
  absl::Time started_;  // Of the first stage.
  // The caller's cancellation, given to RunGraphAsync.
  CancellationManager* cancellation_ = nullptr;
  // Where Start registered Cancel (the caller's and the session's cancellation).
  std::vector<std::pair<CancellationManager*, CancellationManager::Token>> registered_;
  absl::Mutex mu_;
  absl::Status first_ ABSL_GUARDED_BY(mu_);
  enum { kNotCancelled, kCancelling, kCancelled } cancelling_ ABSL_GUARDED_BY(mu_) = kNotCancelled;
  // Set once, by Deliver (under mu_); read after that without the lock.
  std::optional<absl::Status> result_;
  int pending_ ABSL_GUARDED_BY(mu_) = 0;  // Of the stage running.
  int stage_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

ThreadPool* StepCleaner::Pool() {
  static ThreadPool* pool = new ThreadPool(1, kMaxStepCleanerThreads);
  return pool;
}

struct StepCleaner::Queue {
  struct Pending {
    std::string task;
    std::vector<int64_t> step_ids;
  };

  Queue(MasterWorkerCacheInterface* workers, size_t max_waiting, size_t max_pending)
      : workers(workers), max_waiting(max_waiting), max_pending(max_pending) {}

  // Moves the cleanups waiting for `task` to the ones to send; whether a Send task must
  // be started.
  bool Flush(const std::string& task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = waiting.find(task);
    if (it == waiting.end()) return false;
    pending_steps += it->second.size();
    pending.push_back(Pending{task, std::move(it->second)});
    waiting.erase(it);
    const bool start = !sending;
    sending = true;
    return start;
  }

  MasterWorkerCacheInterface* const workers;
  const size_t max_waiting;
  const size_t max_pending;
  absl::Mutex mu;
  // Task -> steps waiting for the next RunGraph there.
  absl::flat_hash_map<std::string, std::vector<int64_t>> waiting ABSL_GUARDED_BY(mu);
  // To send by CleanupGraph, and how many steps that is.
  std::deque<Pending> pending ABSL_GUARDED_BY(mu);
  size_t pending_steps ABSL_GUARDED_BY(mu) = 0;
  // A Send task runs (or is scheduled): true whenever `pending` is not empty.
  bool sending ABSL_GUARDED_BY(mu) = false;
};

StepCleaner::StepCleaner(MasterWorkerCacheInterface* workers, int max_waiting, int max_pending)
    : queue_(std::make_shared<Queue>(workers, static_cast<size_t>(std::max(1, max_waiting)),
                                     static_cast<size_t>(std::max(1, max_pending)))) {}

StepCleaner::~StepCleaner() {
  Queue& q = *queue_;
  bool start = false;
  {
    absl::MutexLock lock(&q.mu);
    std::vector<std::string> tasks;
    for (const auto& [task, ids] : q.waiting) tasks.push_back(task);
    for (const std::string& task : tasks) start |= q.Flush(task);
  }
  if (start) Pool()->Schedule([queue = queue_] { Send(queue); });
  absl::MutexLock lock(&q.mu);
  auto sent = [&q]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(q.mu) { return !q.sending; };
  q.mu.Await(absl::Condition(&sent));
}

void StepCleaner::Enqueue(const std::vector<std::string>& tasks, int64_t step_id) {
  Queue& q = *queue_;
  bool start = false;
  {
    absl::MutexLock lock(&q.mu);
    for (const std::string& task : tasks) {
      std::vector<int64_t>& ids = q.waiting[task];
      ids.push_back(step_id);
      if (ids.size() < q.max_waiting) continue;
      auto has_room = [&q]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(q.mu) {
        return q.pending_steps < q.max_pending;
      };
      q.mu.Await(absl::Condition(&has_room));
      start |= q.Flush(task);
    }
  }
  if (start) Pool()->Schedule([queue = queue_] { Send(queue); });
}

void StepCleaner::TakeFor(const std::string& task, RunGraphRequest* request) {
  Queue& q = *queue_;
  absl::MutexLock lock(&q.mu);
  auto it = q.waiting.find(task);
  if (it == q.waiting.end()) return;
  for (const int64_t id : it->second) request->add_cleanup_step_id(id);
  q.waiting.erase(it);
}

void StepCleaner::GiveBack(const std::string& task, const RunGraphRequest& request) {
  if (request.cleanup_step_id().empty()) return;
  Queue& q = *queue_;
  absl::MutexLock lock(&q.mu);
  std::vector<int64_t>& ids = q.waiting[task];
  ids.insert(ids.end(), request.cleanup_step_id().begin(), request.cleanup_step_id().end());
}

void StepCleaner::Send(std::shared_ptr<Queue> queue) {
  Queue& q = *queue;
  while (true) {
    Queue::Pending next;
    {
      absl::MutexLock lock(&q.mu);
      if (q.pending.empty()) {
        q.sending = false;
        return;
      }
      next = std::move(q.pending.front());
      q.pending.pop_front();
    }
    WorkerInterface* w = q.workers->GetWorker(next.task);
    for (const int64_t step_id : next.step_ids) {
      CleanupGraphRequest req;
      req.set_step_id(step_id);
      CleanupGraphResponse resp;
      if (w != nullptr) w->CleanupGraph(req, &resp).IgnoreError();
    }
    absl::MutexLock lock(&q.mu);
    q.pending_steps -= next.step_ids.size();
  }
}

void RunRegisteredStepAsync(MasterWorkerCacheInterface* workers, const RegisteredStep& step,
                            const StepArgs& args, std::vector<TensorProto>* fetches,
                            RunMetadata* metadata, StepCleaner* cleaner,
                            CancellationManager* cancellation,
                            std::function<void(absl::Status)> done) {
  auto call =
      std::make_shared<StepCall>(workers, step, args.step_id, fetches, metadata, cleaner, done);
  absl::Status built = call->Build(args);
  if (!built.ok()) {
    done(built);
    return;
  }
  call->Start(cancellation, args.session_cancellation);
}

absl::Status RunRegisteredStep(MasterWorkerCacheInterface* workers, const RegisteredStep& step,
                               const StepArgs& args, std::vector<TensorProto>* fetches,
                               RunMetadata* metadata, StepCleaner* cleaner) {
  absl::Notification finished;
  absl::Status status;
  RunRegisteredStepAsync(workers, step, args, fetches, metadata, cleaner, nullptr,
                         [&](absl::Status s) {
                           status = std::move(s);
                           finished.Notify();
                         });
  finished.WaitForNotification();
  return status;
}

}  // namespace overseer

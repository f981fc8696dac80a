#ifndef OVERSEER_MASTER_TESTING_FAKE_WORKERS_H_
#define OVERSEER_MASTER_TESTING_FAKE_WORKERS_H_

// Test doubles for the master: fake workers that answer without running
// graphs, and a worker cache over a ps and a worker task.

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/tensor.h"
#include "master/worker_cache.h"

namespace overseer {
namespace test {

// Answers like a worker without running anything: RunGraph returns a float scalar for
// each recv_key.
class FakeWorker : public WorkerInterface {
 public:
  explicit FakeWorker(std::string task) : task_(std::move(task)) {}

  absl::Status GetStatus(const GetStatusRequest&, GetStatusResponse* r) override {
    absl::MutexLock l(&mu);
    if (dead) return absl::UnavailableError("connection refused");
    r->set_incarnation(incarnation);
    r->set_task_name(task_);
    DeviceAttributes* d = r->add_device_attributes();
    d->set_name(task_ + "/device:CPU:0");
    d->set_device_type("CPU");
    d->set_incarnation(incarnation);
    return absl::OkStatus();
  }
  absl::Status CreateWorkerSession(const CreateWorkerSessionRequest& req,
                                   CreateWorkerSessionResponse*) override {
    absl::MutexLock l(&mu);
    sessions.insert(req.session_handle());
    return absl::OkStatus();
  }
  absl::Status DeleteWorkerSession(const DeleteWorkerSessionRequest& req,
                                   DeleteWorkerSessionResponse*) override {
    absl::MutexLock l(&mu);
    sessions.erase(req.session_handle());
    return absl::OkStatus();
  }
  absl::Status RegisterGraph(const RegisterGraphRequest& req,
                             RegisterGraphResponse* resp) override {
    absl::MutexLock l(&mu);
    if (!sessions.count(req.session_handle())) return absl::AbortedError("unknown session");
    graphs.push_back(req.graph_def());
    resp->set_graph_handle(absl::StrCat("g", graphs.size()));
    return absl::OkStatus();
  }
  absl::Status DeregisterGraph(const DeregisterGraphRequest&, DeregisterGraphResponse*) override {
    return absl::OkStatus();
  }
  absl::Status RunGraph(const RunGraphRequest& req, RunGraphResponse* resp) override {
    absl::MutexLock l(&mu);
    if (dead) return absl::UnavailableError("connection refused");
    if (!sessions.count(req.session_handle())) {
      return absl::AbortedError(absl::StrCat("session ", req.session_handle(), " not found"));
    }
    ++runs;
    carried.insert(req.cleanup_step_id().begin(), req.cleanup_step_id().end());
    if (!run_error.ok()) return run_error;
    if (run_waits_for_cleanup) {
      ++waiting;
      const int64_t step_id = req.step_id();
      auto cleaned_up = [this, step_id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
        return cleaned.count(step_id) > 0 || release_waiting;
      };
      mu.Await(absl::Condition(&cleaned_up));
      --waiting;
      return absl::CancelledError("step cancelled by CleanupGraph");
    }
    sends += req.send_size();
    for (const std::string& key : req.recv_key()) {
      NamedTensorProto* t = resp->add_recv();
      t->set_name(key);
      Tensor::Scalar<float>(42.f).ToProto(t->mutable_tensor());
    }
    return absl::OkStatus();
  }
  absl::Status CleanupGraph(const CleanupGraphRequest& req, CleanupGraphResponse*) override {
    if (cleanup_waits_for != nullptr &&
        !cleanup_waits_for->WaitForNotificationWithTimeout(absl::Seconds(10))) {
      absl::MutexLock l(&mu);
      cleanup_gave_up = true;
    }
    absl::MutexLock l(&mu);
    ++cleanups;
    cleaned.insert(req.step_id());
    if (on_cleanup != nullptr && !on_cleanup->HasBeenNotified()) on_cleanup->Notify();
    return absl::OkStatus();
  }
  absl::Status CleanupAll(const CleanupAllRequest&, CleanupAllResponse*) override {
    absl::MutexLock l(&mu);
    ++cleanup_alls;
    return absl::OkStatus();
  }
  absl::Status RecvTensor(const RecvTensorRequest&, CancellationManager*, Tensor*) override {
    return absl::UnimplementedError("the fake worker does not serve RecvTensor");
  }
  absl::Status JobDone(const JobDoneRequest&, JobDoneResponse*) override {
    absl::MutexLock l(&mu);
    if (dead) return absl::UnavailableError("connection refused");
    ++job_dones;
    return absl::OkStatus();
  }

  // Simulates a restart: new incarnation, state lost.
  void Restart() {
    absl::MutexLock l(&mu);
    incarnation++;
    sessions.clear();
  }

  absl::Mutex mu;
  bool dead = false;
  uint64_t incarnation = 0x1000;
  std::set<std::string> sessions;
  std::vector<GraphDef> graphs;
  int runs = 0, sends = 0, cleanups = 0, cleanup_alls = 0, job_dones = 0;
  // RunGraph fails with this when it is not OK...
  absl::Status run_error;
  // ...or, when set, waits until CleanupGraph ends its step (as a partition waiting for
  // a tensor of a failed one does) and returns CANCELLED.
  bool run_waits_for_cleanup = false;
  int waiting = 0;            // RunGraph calls waiting so.
  std::set<int64_t> cleaned;  // Steps CleanupGraph ended.
  std::set<int64_t> carried;  // Steps a RunGraph carried in cleanup_step_id.
  // When set, CleanupGraph first waits (up to 10 s, then sets cleanup_gave_up) for this
  // to be notified, as a task that does not answer holds its caller...
  absl::Notification* cleanup_waits_for = nullptr;
  // Ends every RunGraph that waits for its cleanup (run_waits_for_cleanup) as cancelled.
  bool release_waiting = false;
  bool cleanup_gave_up = false;
  // ...and notifies this (once) when it ends a step.
  absl::Notification* on_cleanup = nullptr;

 private:
  const std::string task_;
};

class FakeCache : public MasterWorkerCacheInterface {
 public:
  FakeCache() {
    for (const char* t : {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"}) {
      workers_[t] = std::make_unique<FakeWorker>(t);
    }
  }
  std::vector<std::string> ListTasks() const override {
    std::vector<std::string> out;
    for (const auto& [t, w] : workers_) out.push_back(t);
    return out;
  }
  WorkerInterface* GetWorker(const std::string& task) override { return fake(task); }
  ClusterDef cluster_def() const override { return ClusterDef(); }
  FakeWorker* fake(const std::string& task) {
    auto it = workers_.find(task);
    return it == workers_.end() ? nullptr : it->second.get();
  }
  FakeWorker* ps() { return fake("/job:ps/replica:0/task:0"); }
  FakeWorker* worker() { return fake("/job:worker/replica:0/task:0"); }

 private:
  std::map<std::string, std::unique_ptr<FakeWorker>> workers_;
};

}  // namespace test
}  // namespace overseer

#endif  // OVERSEER_MASTER_TESTING_FAKE_WORKERS_H_

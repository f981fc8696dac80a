#include "core/rpc/call_watch.h"

#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace overseer {
namespace {

// The process-wide watcher: one thread, started on first use and never stopped (it
// sleeps while nothing is watched).
class Watcher {
 public:
  static Watcher& Get() {
    static Watcher* watcher = new Watcher();
    return *watcher;
  }

  int64_t Add(grpc::ServerContext* context, std::function<void()> on_cancel) {
    absl::MutexLock lock(&mu_);
    const int64_t id = next_id_++;
    calls_.emplace(id, Call{context, std::move(on_cancel)});
    return id;
  }

  void Remove(int64_t id) {
    absl::MutexLock lock(&mu_);
    // An on_cancel of this call may run right now, outside the lock.
    auto not_running = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ != id; };
    mu_.Await(absl::Condition(&not_running));
    calls_.erase(id);
  }

  int size() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(calls_.size());
  }

 private:
  struct Call {
    grpc::ServerContext* context;
    std::function<void()> on_cancel;
    bool fired = false;
  };

  Watcher() : thread_([this] { Loop(); }) { thread_.detach(); }

  void Loop() {
    mu_.Lock();
    int64_t ids_seen = next_id_;
    for (;;) {
      // Idle only while nothing is watched and nothing was during the last interval;
      // otherwise poll every interval. Calls that come and go faster than that (every
      // step's RunGraph) must not wake this thread each time: waiting on "something is
      // watched" cost a futex wake and a context switch per call.
      if (calls_.empty() && next_id_ == ids_seen) {
        auto watching = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !calls_.empty(); };
        mu_.Await(absl::Condition(&watching));
      }
      ids_seen = next_id_;
      mu_.Unlock();
      absl::SleepFor(CallWatch::kPollInterval);
      mu_.Lock();
      std::vector<int64_t> cancelled;
      for (auto& [id, call] : calls_) {
        if (!call.fired && call.context->IsCancelled()) cancelled.push_back(id);
      }
      for (int64_t id : cancelled) {
        auto it = calls_.find(id);
        if (it == calls_.end()) continue;
        it->second.fired = true;
        std::function<void()> on_cancel = it->second.on_cancel;
        running_ = id;
        mu_.Unlock();
        on_cancel();
        mu_.Lock();
        running_ = -1;
      }
    }
  }

  absl::Mutex mu_;
  std::map<int64_t, Call> calls_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t running_ ABSL_GUARDED_BY(mu_) = -1;
  std::thread thread_;
};

}  // namespace

CallWatch::CallWatch(grpc::ServerContext* context, std::function<void()> on_cancel)
    : id_(Watcher::Get().Add(context, std::move(on_cancel))) {}

CallWatch::~CallWatch() { Watcher::Get().Remove(id_); }

int CallWatch::NumWatched() { return Watcher::Get().size(); }

}  // namespace overseer

#ifndef OVERSEER_MASTER_REQUEST_DEDUP_H_
#define OVERSEER_MASTER_REQUEST_DEDUP_H_

// Makes a retried mutating call apply once: the result of a call with a non-empty
// request id is remembered, and a later call with the same id gets that result without
// running again; a duplicate that arrives while the first is still running waits for
// it (RunAsync: is answered when the first finishes). Results are kept for the last `capacity` ids
// (and up to `max_bytes` of responses; larger responses are not remembered, so such a retry runs
// again). A response is remembered as a copy, or, given to RunAsync as `shared`, as the
// response itself, so that a step's fetches are not copied once more.

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "google/protobuf/message.h"

namespace overseer {

// Thread-safe.
class RequestDedup {
 public:
  explicit RequestDedup(size_t capacity = 4096, size_t max_bytes = 64 << 20)
      : capacity_(capacity), max_bytes_(max_bytes) {}

  using Done = std::function<void(absl::Status)>;

  // Runs `fn` (which fills `response`) unless `request_id` ran before; then copies the
  // remembered response and returns the remembered status. An empty id always runs.
  absl::Status Run(const std::string& request_id, google::protobuf::Message* response,
                   const std::function<absl::Status()>& fn) {
    absl::Notification finished;
    absl::Status status;
    RunAsync(
        request_id, response, [&fn](Done ran) { ran(fn()); },
        [&](absl::Status s) {
          status = std::move(s);
          finished.Notify();
        });
    finished.WaitForNotification();
    return status;
  }

  // Run without blocking: `fn` starts the call and calls its argument once with the
  // call's status (after filling `response`); `done` is called once with the result.
  // A duplicate of a call still running does not wait: its `done` is called (with the
  // remembered response copied into its own `response`) on the thread that finishes
  // the first. `fn`, `response` and what they refer to must live until `done`.
  // `shared`, if given, owns `response` (points to it), which nothing changes after
  // `done`: the response is then remembered by keeping it, not by a copy.
  void RunAsync(const std::string& request_id, google::protobuf::Message* response,
                std::function<void(Done)> fn, Done done,
                std::shared_ptr<const google::protobuf::Message> shared = nullptr) {
    if (request_id.empty()) {
      fn(std::move(done));
      return;
    }
    std::shared_ptr<Entry> entry;
    std::shared_ptr<Entry> remembered;
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(request_id);
      if (it == entries_.end()) {
        entry = std::make_shared<Entry>();
        entries_[request_id] = entry;
        order_.push_back(request_id);
      } else if (!it->second->done) {
        it->second->waiters.push_back(Waiter{response, std::move(fn), std::move(done)});
        return;
      } else {
        remembered = it->second;
      }
    }
    if (remembered != nullptr) {
      // A finished entry's fields are final: read without the lock.
      if (remembered->message == nullptr) {
        fn(std::move(done));  // Not remembered (too large): run again.
        return;
      }
      response->CopyFrom(*remembered->message);
      done(remembered->status);
      return;
    }
    fn([this, entry, response, shared = std::move(shared),
        done = std::move(done)](absl::Status status) mutable {
      const size_t size = response->ByteSizeLong();
      if (size > max_bytes_ / 8) {
        shared = nullptr;
      } else if (shared == nullptr) {
        std::shared_ptr<google::protobuf::Message> copy(response->New());
        copy->CopyFrom(*response);
        shared = std::move(copy);
      }
      std::vector<Waiter> waiters;
      {
        absl::MutexLock lock(&mu_);
        entry->status = status;
        entry->message = std::move(shared);
        entry->size = entry->message != nullptr ? size : 0;
        bytes_ += entry->size;
        entry->done = true;
        waiters.swap(entry->waiters);
        while (order_.size() > capacity_ || bytes_ > max_bytes_) {
          auto old = entries_.find(order_.front());
          if (old != entries_.end() && old->second->done) {
            bytes_ -= old->second->size;
            entries_.erase(old);
          }
          order_.pop_front();
        }
      }
      // Entry's fields are final once done: read without the lock.
      for (Waiter& w : waiters) {
        if (entry->message != nullptr) {
          w.response->CopyFrom(*entry->message);
          w.done(entry->status);
        } else {
          w.fn(std::move(w.done));
        }
      }
      done(status);
    });
  }

 private:
  struct Waiter {
    google::protobuf::Message* response;
    std::function<void(Done)> fn;
    Done done;
  };
  struct Entry {
    std::vector<Waiter> waiters;
    bool done = false;
    absl::Status status;
    // The remembered response, null if it was too large to remember.
    std::shared_ptr<const google::protobuf::Message> message;
    size_t size = 0;  // Its bytes, counted in bytes_.
  };

  const size_t capacity_;
  const size_t max_bytes_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_REQUEST_DEDUP_H_

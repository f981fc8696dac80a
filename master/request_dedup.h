#ifndef OVERSEER_MASTER_REQUEST_DEDUP_H_
#define OVERSEER_MASTER_REQUEST_DEDUP_H_

// Makes a retried mutating call apply once: the result of a call with a non-empty
// request id is remembered, and a later call with the same id gets that result without
// running again; a duplicate that arrives while the first is still running waits for
// it. Results are kept for the last `capacity` ids (and up to `max_bytes` of responses;
// larger responses are not remembered, so such a retry runs again).

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/message.h"

namespace overseer {

// Thread-safe.
class RequestDedup {
 public:
  explicit RequestDedup(size_t capacity = 4096, size_t max_bytes = 64 << 20)
      : capacity_(capacity), max_bytes_(max_bytes) {}

  // Runs `fn` (which fills `response`) unless `request_id` ran before; then copies the
  // remembered response and returns the remembered status. An empty id always runs.
  absl::Status Run(const std::string& request_id, google::protobuf::Message* response,
                   const std::function<absl::Status()>& fn) {
    if (request_id.empty()) return fn();
    std::shared_ptr<Entry> entry;
    bool owner = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(request_id);
      if (it == entries_.end()) {
        entry = std::make_shared<Entry>();
        entries_[request_id] = entry;
        order_.push_back(request_id);
        owner = true;
      } else {
        entry = it->second;
      }
    }
    if (!owner) {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&entry->done));
      if (entry->kept) {
        response->ParseFromString(entry->response);
        return entry->status;
      }
      // Not remembered (too large): run again.
    }
    absl::Status status = fn();
    std::string bytes;
    const bool keep = response->ByteSizeLong() <= max_bytes_ / 8;
    if (keep) response->SerializeToString(&bytes);
    absl::MutexLock lock(&mu_);
    if (owner) {
      entry->status = status;
      entry->kept = keep;
      entry->response = std::move(bytes);
      bytes_ += entry->response.size();
      entry->done = true;
      while (order_.size() > capacity_ || bytes_ > max_bytes_) {
        auto old = entries_.find(order_.front());
        if (old != entries_.end() && old->second->done) {
          bytes_ -= old->second->response.size();
          entries_.erase(old);
        }
        order_.pop_front();
      }
    }
    return status;
  }

 private:
  struct Entry {
    bool done = false;
    bool kept = false;
    absl::Status status;
    std::string response;
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

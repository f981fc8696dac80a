#ifndef OVERSEER_CLIENT_SESSION_READINESS_H_
#define OVERSEER_CLIENT_SESSION_READINESS_H_

// Readiness pushed, not polled (docs/design.md section 5). The chief, once it has
// initialised or restored the model, marks it ready; non-chief trainers block in
// WaitForReady and are released as soon as the mark lands, then confirm with the ready
// op. For a grpc:// target the record lives in the master (which withdraws it when a
// task the model lives on restarts); for the in-process target "" it lives with the
// model's variables, in the sessions' ResourceMgr, so DirectSession-based tests
// exercise the same code paths and each test's ResourceMgr starts with no marks.
//
//   auto channel = NewReadinessChannel(options.target);
//   (*channel)->MarkReady("model");                            // chief
//   auto ready = (*channel)->WaitForReady("model", absl::Seconds(5));  // others

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace overseer {

class Clock;
class ResourceMgr;

class ReadinessChannel {
 public:
  virtual ~ReadinessChannel() = default;

  // Records that the model called `key` is ready. Idempotent. For a master, the record
  // remembers the incarnation of every task of the cluster matching `device_filters`
  // (the session's ConfigProto.device_filters; empty: every task) and is withdrawn when
  // any of them changes.
  virtual absl::Status MarkReady(const std::string& key,
                                 const std::vector<std::string>& device_filters) = 0;
  absl::Status MarkReady(const std::string& key) { return MarkReady(key, {}); }

  // Removes the record (the chief found the model not ready after all). Idempotent.
  virtual absl::Status WithdrawReady(const std::string& key) = 0;

  // Blocks until `key` is marked ready (true) or `timeout` passes (false). A master
  // that restarted has no record: the wait simply times out, and the caller falls back
  // to its ready op. UNAVAILABLE when the master cannot be reached; never blocks much
  // longer than `timeout`.
  virtual absl::StatusOr<bool> WaitForReady(const std::string& key, absl::Duration timeout) = 0;
};

// The channel for a session target: "" is the in-process table kept in `resources`
// (the ResourceMgr the target's sessions use, SessionOptions::resource_mgr; null means
// ResourceMgr::Default(), as for DirectSession), which must outlive the channel; a
// registered scheme ("grpc://", registered by //client/session:grpc_session) its
// implementation, which ignores `resources`. INVALID_ARGUMENT naming the target
// otherwise. `clock` (not owned, not null; outlives the channel) measures
// WaitForReady's timeout and paces its calls.
absl::StatusOr<std::unique_ptr<ReadinessChannel>> NewReadinessChannel(
    const std::string& target, Clock* clock, ResourceMgr* resources = nullptr);
// The same on the real clock with the default resources, for binaries and tools.
absl::StatusOr<std::unique_ptr<ReadinessChannel>> NewReadinessChannel(const std::string& target);

// Registers the implementation for targets starting with `prefix`. Called from a
// static initialiser of the implementing library. Thread-safe.
using ReadinessChannelFactory = std::function<absl::StatusOr<std::unique_ptr<ReadinessChannel>>(
    const std::string& target, Clock* clock)>;
void RegisterReadinessChannelFactory(const std::string& prefix, ReadinessChannelFactory factory);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_READINESS_H_

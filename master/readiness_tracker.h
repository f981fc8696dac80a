#ifndef OVERSEER_MASTER_READINESS_TRACKER_H_
#define OVERSEER_MASTER_READINESS_TRACKER_H_

// ReadinessTracker: the master's readiness records (MasterReadinessInterface's logic).
// A record maps a key to the incarnation of every task of the cluster when it was
// marked. It is withdrawn as soon as a task is seen with another incarnation or not
// answering: when a WaitForReady is about to answer ready (unless the record was
// checked within `fresh_for`), and by a background check every `check_period` while
// records exist. Every withdrawal is logged naming the task.
//
// Waiters block on the tracker's mutex (through the injected Clock), so a mark wakes
// them at once; each wait is bounded by `max_wait`.

#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/clock.h"
#include "master/worker_cache.h"
#include "proto/master.pb.h"

namespace overseer {

struct ReadinessOptions {
  // How often the background check asks every recorded task for its incarnation
  // (only while records exist).
  absl::Duration check_period = absl::Milliseconds(500);
  // A record checked no longer ago than this answers a wait without another check
  // (a mark is a check, so waiters released by a mark answer at once).
  absl::Duration fresh_for = absl::Milliseconds(100);
  // The longest one WaitForReady blocks, whatever timeout it asks for.
  absl::Duration max_wait = absl::Seconds(60);
  // WaitForReady calls blocked at once beyond this fail RESOURCE_EXHAUSTED.
  int max_waiters = 4096;
  // Run the background check on a thread (tests call CheckRecords themselves).
  bool check_thread = true;
};

// Told about readiness events, e.g. to count them in metrics. Called with the
// tracker's lock held: must be quick, thread-safe, and must not call the tracker.
class ReadinessListener {
 public:
  virtual ~ReadinessListener() = default;
  virtual void Marked(const std::string& key) = 0;
  virtual void Withdrawn(const std::string& key, const std::string& reason) = 0;
  // The number of WaitForReady calls blocked right now.
  virtual void WaitersChanged(int waiters) = 0;
};

// Thread-safe.
class ReadinessTracker {
 public:
  // `workers` (asked with GetStatus; its deadlines bound every check) and `clock` are
  // not owned and outlive the tracker; `listener` may be null.
  ReadinessTracker(MasterWorkerCacheInterface* workers, Clock* clock, ReadinessListener* listener,
                   ReadinessOptions options);
  // Shutdown, then joins the background check.
  ~ReadinessTracker();
  ReadinessTracker(const ReadinessTracker&) = delete;
  ReadinessTracker& operator=(const ReadinessTracker&) = delete;

  // See MasterReadinessInterface::MarkReady: the record holds the incarnations of
  // `tasks` (empty: every task of the cluster). UNAVAILABLE naming every task that did
  // not answer GetStatus; nothing is recorded then.
  absl::Status MarkReady(const std::string& key, const std::vector<std::string>& tasks = {});
  // Removes the record (logged). OK without one.
  void WithdrawReady(const std::string& key);
  // Blocks until `key` is ready (and checked) or min(timeout, max_wait) passes on the
  // clock; fills response.ready and, when false, response.reason. RESOURCE_EXHAUSTED
  // with max_waiters calls already blocked. CANCELLED (response untouched) as soon as
  // `cancellation` (not owned; may be null) is cancelled: the caller gave up.
  absl::Status WaitForReady(const std::string& key, absl::Duration timeout,
                            WaitForReadyResponse* response,
                            CancellationManager* cancellation = nullptr);

  // Checks every record once (one GetStatus per task) and withdraws those with a
  // restarted or dead task; returns how many were withdrawn.
  int CheckRecords();

  // Answers every blocked wait (not ready: the master is shutting down), makes later
  // waits answer so at once, and stops the background check. Idempotent.
  void Shutdown();

  int num_records() const;
  int num_waiters() const;

 private:
  // WaitForReady's wait, which also ends when `cancelled` (read under mu_) is true.
  absl::Status Wait(const std::string& key, absl::Duration timeout, const bool& cancelled,
                    WaitForReadyResponse* response);

  struct Record {
    std::map<std::string, uint64_t> incarnations;  // By task name.
    absl::Time checked_at;
    uint64_t generation = 0;  // Changes with every mark, so stale checks are ignored.
  };

  // Each task's incarnation, or why it did not answer. Calls the tasks in parallel.
  std::map<std::string, absl::StatusOr<uint64_t>> Probe(const std::vector<std::string>& tasks);
  // Why `record` no longer holds according to `probed` ("" when it holds).
  static std::string Violation(const Record& record,
                               const std::map<std::string, absl::StatusOr<uint64_t>>& probed);
  // Removes the record of `key` if it is still `generation`, remembering `reason`.
  void WithdrawLocked(const std::string& key, uint64_t generation, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NotReadyReasonLocked(const std::string& key) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetWaitersLocked(int delta) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckLoop();

  MasterWorkerCacheInterface* const workers_;
  Clock* const clock_;
  ReadinessListener* const listener_;
  const ReadinessOptions options_;

  mutable absl::Mutex mu_;
  std::map<std::string, Record> records_ ABSL_GUARDED_BY(mu_);
  // Why each withdrawn key was withdrawn (for the reason of later waits).
  std::map<std::string, std::string> withdrawn_ ABSL_GUARDED_BY(mu_);
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread checker_;
};

}  // namespace overseer

#endif  // OVERSEER_MASTER_READINESS_TRACKER_H_

#ifndef OVERSEER_CORE_RENDEZVOUS_H_
#define OVERSEER_CORE_RENDEZVOUS_H_

// Where _Send kernels leave tensors and _Recv kernels pick them up within one step.
// A key names one edge of one step's partitioned graph in TensorFlow's format:
//
//   "<src_device>;<src_incarnation as 16 hex digits>;<dst_device>;<tensor_name>;0:0"
//
// The producer's incarnation lets a consumer in another process notice that the
// producer restarted (worker/ turns a mismatch into ABORTED). LocalRendezvous serves
// one process; worker/ adds a rendezvous that pulls keys produced by other tasks.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/clock.h"
#include "core/cluster/rendezvous_key.h"
#include "core/tensor.h"

namespace overseer {

// A key string with its parts (core/cluster/rendezvous_key.h).
struct RendezvousKey {
  std::string full;
  ParsedRendezvousKey parsed;

  // INVALID_ARGUMENT naming the key if it is malformed.
  static absl::StatusOr<RendezvousKey> Parse(absl::string_view key);
};

// DEADLINE_EXCEEDED naming the tensor of `key` and its producer: a receive of it that
// timed out.
absl::Status RendezvousTimedOut(const RendezvousKey& key);

// How long and until what a Recv waits. Every field is optional.
struct RendezvousWait {
  // Cancelling it ends the wait with CANCELLED. Not owned.
  CancellationManager* cancellation = nullptr;
  // Measures `deadline`. May be null only when the deadline is absl::InfiniteFuture() or
  // absl::InfinitePast() (else Recv fails INVALID_ARGUMENT).
  Clock* clock = nullptr;
  absl::Time deadline = absl::InfiniteFuture();
};

// Thread-safe.
class Rendezvous {
 public:
  virtual ~Rendezvous() = default;

  // Delivers `value` under `key`; does not block. INVALID_ARGUMENT if the key was
  // already sent in this rendezvous; the abort status after StartAbort.
  virtual absl::Status Send(const RendezvousKey& key, const Tensor& value) = 0;

  // Blocks until a value is sent under `key` and takes it (each key is received once).
  // Errors: CANCELLED when wait.cancellation is cancelled, DEADLINE_EXCEEDED naming
  // the key at wait.deadline, the abort status after StartAbort, INVALID_ARGUMENT if
  // another Recv of the key is already waiting.
  virtual absl::StatusOr<Tensor> Recv(const RendezvousKey& key, const RendezvousWait& wait) = 0;

  // Recv without holding a thread (the executor starts a _Recv on the thread that made
  // it ready, so this never blocks): calls `done` once with what Recv would return, on
  // this thread before returning or later on the thread that ends the wait (`done`
  // must not block then). wait.deadline is not watched: the caller bounds the wait by
  // cancelling wait.cancellation (an executor's step timeout does).
  using RecvDone = std::function<void(absl::StatusOr<Tensor>)>;
  virtual void RecvAsync(const RendezvousKey& key, const RendezvousWait& wait, RecvDone done) = 0;

  // Fails every waiting and later Send and Recv with `status` (not OK). Later calls
  // keep the first status.
  virtual void StartAbort(absl::Status status) = 0;
};

// A rendezvous within one process. Create it with Create (callbacks registered with a
// CancellationManager keep it alive).
class LocalRendezvous : public Rendezvous, public std::enable_shared_from_this<LocalRendezvous> {
 public:
  static std::shared_ptr<LocalRendezvous> Create();

  // Answers a RecvAsync waiting for `key` on this thread.
  absl::Status Send(const RendezvousKey& key, const Tensor& value) override;
  absl::StatusOr<Tensor> Recv(const RendezvousKey& key, const RendezvousWait& wait) override;
  // Answers every RecvAsync waiting, with `status`, on this thread.
  void StartAbort(absl::Status status) override;

  // Recv without a thread: calls `done` once, with the value sent under `key` (on the
  // thread that sends it, or on this one if it already was), or with the abort status,
  // or with `cancellation`'s reason as it is once it is cancelled (before or during
  // the wait; may be null). No deadline: a caller bounds the wait by cancelling. `done`
  // must not block. INVALID_ARGUMENT if another receive of the key is already waiting.
  void RecvAsync(const RendezvousKey& key, CancellationManager* cancellation, RecvDone done);
  void RecvAsync(const RendezvousKey& key, const RendezvousWait& wait, RecvDone done) override {
    RecvAsync(key, wait.cancellation, std::move(done));
  }

  // The abort status, or OK.
  absl::Status status() const;
  // Keys sent and not yet received.
  int num_pending_values() const;

 private:
  LocalRendezvous() = default;

  struct Item {
    Tensor value;
    bool has_value = false;
    bool has_waiter = false;
    // A RecvAsync waiting (has_waiter is true too), its cancellation and the token of
    // its callback there.
    RecvDone done;
    CancellationManager* cancellation = nullptr;
    CancellationManager::Token token = CancellationManager::kInvalidToken;
  };
  // A RecvAsync taken from its item: answer it outside mu_.
  struct Answer {
    RecvDone done;
    CancellationManager* cancellation = nullptr;
    CancellationManager::Token token = CancellationManager::kInvalidToken;
  };
  static Answer TakeWaiter(Item* item);
  // Empties items_ for StartAbort: takes the RecvAsync waiters into `answers`.
  void AbortItemsLocked(std::vector<Answer>* answers) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Run(Answer answer, absl::StatusOr<Tensor> value);
  // The cancellation of the RecvAsync of `key` waiting with `cancellation` came.
  void CancelWaiter(const std::string& key, CancellationManager* cancellation);

  mutable absl::Mutex mu_;
  absl::Status abort_status_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Item> items_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CORE_RENDEZVOUS_H_

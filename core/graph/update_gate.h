#ifndef OVERSEER_CORE_GRAPH_UPDATE_GATE_H_
#define OVERSEER_CORE_GRAPH_UPDATE_GATE_H_

// Consistent snapshots of variables under concurrent training steps.
//
// A step's updates are not atomic: an optimizer writes each variable (and each slot,
// and the global step) on its own, on whichever ps holds it, while other steps run. A
// checkpoint that copies the variables one after another in the middle of that holds a
// state that never existed. The gate makes the copy a cut: steps that write variables
// pass it shared, and a snapshot step (one holding a CheckpointSnapshot node) passes it
// alone for the variables it reads, so that it sees every step's writes either whole or
// not at all. Steps writing other variables are not held. A snapshot only takes
// references to the variables' buffers (they copy on write), so it is short; the slow
// write of the checkpoint runs afterwards, outside the gate.
//
// DirectSession has one gate per process (its variables are the process's); the master
// has one for every session it serves, so trainers that share a master share it.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/graph/graph.h"

namespace overseer {

// The op that marks a step as a snapshot (checkpoint_ops.cc).
inline constexpr char kCheckpointSnapshotOp[] = "CheckpointSnapshot";

// The variables a step touches, each named by its key: "<device>|<container>|<name>"
// (the name is shared_name, or the node's name when that is empty), so that steps of
// different graphs or sessions name a variable alike. Sorted, without duplicates.
struct VariableAccess {
  // Variables a node writes through a ref input (Assign, the Apply ops, restores...).
  std::vector<std::string> written;
  // Every variable of the step (VariableV2 nodes), read or written.
  std::vector<std::string> touched;
  // Whether the step holds a CheckpointSnapshot node.
  bool snapshot = false;
};

// `devices[id]` is the device of node `id` of `step`.
VariableAccess StepVariableAccess(const Graph& step, const std::vector<std::string>& devices);

// How a step passes the gate, worked out once per step signature: a snapshot with the
// variables it touches, a writer with those it writes, or freely (no keys).
struct GatePass {
  std::shared_ptr<const std::vector<std::string>> keys;
  bool snapshot = false;
  bool free() const { return !snapshot && keys->empty(); }
};
GatePass StepGatePass(const Graph& step, const std::vector<std::string>& devices);

// Thread-safe.
class UpdateGate {
 public:
  // Told of each snapshot's entry: how long it waited for the steps writing its
  // variables (they and new writers of them waited as long, plus the snapshot step),
  // and whether it got in (false: it gave up after snapshot_wait).
  using SnapshotObserver = std::function<void(absl::Duration waited, bool entered)>;

  // A snapshot waits at most `snapshot_wait` for the steps writing its variables.
  explicit UpdateGate(absl::Duration snapshot_wait = absl::Seconds(30),
                      SnapshotObserver observer = nullptr);
  UpdateGate(const UpdateGate&) = delete;
  UpdateGate& operator=(const UpdateGate&) = delete;

  // A step writing `keys` (sorted) enters: `go` runs now on this thread, or, while a
  // snapshot reading one of them waits or runs, on the thread that ends that snapshot.
  // Never blocks. Each entry is paired with one ExitWriter(keys), the same pointer,
  // after the step.
  void EnterWriter(std::shared_ptr<const std::vector<std::string>> keys, std::function<void()> go);
  // As EnterWriter, blocking the caller until the step may run.
  void EnterWriterBlocking(std::shared_ptr<const std::vector<std::string>> keys);
  void ExitWriter(const std::shared_ptr<const std::vector<std::string>>& keys);

  // A snapshot of `keys` (sorted) enters: blocks until no step writing one of them runs
  // (steps that would start writing them meanwhile wait) and until any other snapshot
  // has ended. DEADLINE_EXCEEDED after snapshot_wait, naming a variable still being
  // written; the waiting writers then go on. On OK, pair with ExitSnapshot().
  absl::Status EnterSnapshot(std::shared_ptr<const std::vector<std::string>> keys);
  void ExitSnapshot();

  // For tests: how many steps wait for a snapshot.
  int waiting_writers() const;

 private:
  struct Waiter {
    std::shared_ptr<const std::vector<std::string>> keys;
    std::function<void()> go;
  };
  bool Blocks(const std::vector<std::string>& keys) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A key of `keys` that a running writer writes, or nullptr.
  const std::string* Written(const std::vector<std::string>& keys) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // EnterSnapshot but for the observer.
  absl::Status WaitForWriters(std::shared_ptr<const std::vector<std::string>> keys,
                              absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // Admits the waiting writers the snapshot (now gone) held; returns their `go`s.
  std::vector<std::function<void()>> ReleaseWaiters() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration snapshot_wait_;
  const SnapshotObserver observer_;
  mutable absl::Mutex mu_;
  // The key sets of the writers running, each with how many run: one count per step
  // (steps of one signature share their set), not per variable.
  absl::flat_hash_map<std::shared_ptr<const std::vector<std::string>>, int> writing_
      ABSL_GUARDED_BY(mu_);
  // The snapshot waiting or running, if any.
  std::shared_ptr<const std::vector<std::string>> snapshot_ ABSL_GUARDED_BY(mu_);
  std::vector<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace overseer

#endif  // OVERSEER_CORE_GRAPH_UPDATE_GATE_H_

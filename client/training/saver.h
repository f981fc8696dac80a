#ifndef OVERSEER_CLIENT_TRAINING_SAVER_H_
#define OVERSEER_CLIENT_TRAINING_SAVER_H_

// Saver: TensorFlow 1.x's tf.train.Saver over a checkpoint store. A checkpoint prefix
// is "<location>/<name>", where the location is a local directory (embedded mode, no
// server) or grpc://host:port/<run>. The store applies max_to_keep and
// keep_checkpoint_every_n_hours.
//
// A save is a consistent cut: every variable of every task as of one moment between
// training steps, never half of a step's updates (TensorFlow's Saver copies variables
// while steps update them). It takes two steps. The first, the snapshot, takes a
// reference to every variable on its task (CheckpointSnapshot; variables copy on
// write, so nothing is copied and later updates do not show) while no step that writes
// them runs: the session's update gate (core/graph/update_gate.h) holds new writing steps
// back and waits for those in flight, for the milliseconds the snapshot takes. The
// second writes each task's snapshot to the store (CheckpointWriteSnapshot) while
// training goes on. Given the global step's tensor, the snapshot reads it too and the
// checkpoint is named by that value, so "model.ckpt-N" holds the state after exactly N
// steps. The cut covers the steps of one master (or one process, embedded): trainers
// with a master each are not held by each other's snapshots.
//
//   auto saver = Saver::Create(root, {});            // every global variable
//   auto path = (*saver)->Save(session, "/ckpt/model.ckpt", global_step);  // "...-<step>"
//   (*saver)->Restore(session, *LatestCheckpoint("/ckpt"));

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"
#include "client/session/session.h"
#include "proto/meta_graph.pb.h"

namespace overseer {

struct SaverOptions {
  // Variables to save and restore (empty: every global variable when Create runs).
  std::vector<Variable> var_list;
  int max_to_keep = 5;
  double keep_checkpoint_every_n_hours = 10000.0;
  // Whose list retention trims (docs/training.md, "Checkpoint retention"):
  // kSaver, TensorFlow's Saver: each Saver has its own list, empty when it is created
  //   (RecoverLastCheckpoints or SetLastCheckpoints fill it), to which each save
  //   appends; the oldest beyond max_to_keep are deleted and the state file lists what
  //   remains. With max_to_keep <= 0 it keeps no list and deletes nothing.
  // kStore: the store's list of the location, whoever saved to it; after each save
  //   last_checkpoints() is that list. With max_to_keep <= 0 every checkpoint is kept.
  enum class RetentionList { kSaver, kStore };
  RetentionList retention_list = RetentionList::kSaver;
  // One shard per device of the variables (each device writes its own), instead of one.
  bool sharded = false;
  // Name scope of the saver's nodes.
  std::string name = "save";
  // As TensorFlow's allow_empty: with no variables, Create makes an empty saver (no
  // nodes; Save and Restore do nothing) instead of failing.
  bool allow_empty = false;
};

// Not thread-safe: one Save or Restore at a time.
class Saver {
 public:
  // Adds the save and restore nodes to the scope's graph (create the session, or
  // extend it, afterwards). INVALID_ARGUMENT if there are no variables (unless
  // allow_empty) or one has a dtype that checkpoints do not hold (DT_STRING).
  static absl::StatusOr<std::unique_ptr<Saver>> Create(const Scope& scope, SaverOptions options);

  // Saves the variables as "<prefix>-<global_step>" (or "<prefix>" when global_step < 0)
  // and returns that path. Errors of the store or of running the graph; on failure the
  // checkpoint is aborted and nothing becomes visible. An empty saver writes nothing
  // and returns "" (TensorFlow's None). With `write_meta_graph` (TensorFlow's default)
  // the graph's meta graph (meta_graph.h) is committed beside it as "<path>.meta" and
  // retired with it; one over 32 MiB is left out with a warning.
  absl::StatusOr<std::string> Save(Session* session, const std::string& prefix,
                                   int64_t global_step = -1, bool write_meta_graph = true);
  // As Save, named "<prefix>-<N>" where N is the value of `global_step` (an int32 or
  // int64 scalar) read in the snapshot itself; N goes to `saved_step` if given.
  // DEADLINE_EXCEEDED if steps writing the variables did not pause within the gate's
  // wait (30 s): nothing is written then. FAILED_PRECONDITION for a Saver of a graph
  // made before consistent saves (consistent() is false).
  absl::StatusOr<std::string> Save(Session* session, const std::string& prefix,
                                   const Output& global_step, bool write_meta_graph = true,
                                   int64_t* saved_step = nullptr);
  // Whether saves are consistent cuts (its graph has the snapshot step).
  bool consistent() const { return !snapshot_target_.empty(); }
  // Assigns every variable of the saver from checkpoint `path` ("<location>/<name>").
  // NOT_FOUND naming a missing checkpoint or variable; DATA_LOSS for damaged files.
  // An empty saver does nothing.
  absl::Status Restore(Session* session, const std::string& path);

  // Whether it has no variables (allow_empty).
  bool empty() const { return empty_; }

  // Its definition (TensorFlow's saver_def), for a meta graph (meta_graph.h).
  // Precondition: !empty().
  SaverDef ToSaverDef() const;
  // The Saver `def` defines over the nodes of the scope's graph (an imported meta
  // graph's). INVALID_ARGUMENT naming what is missing or malformed: a node the
  // definition names that the graph lacks, or a shard count below 1.
  static absl::StatusOr<std::unique_ptr<Saver>> FromSaverDef(const Scope& scope,
                                                             const SaverDef& def);

  // The checkpoints in this saver's list, oldest first (see RetentionList).
  const std::vector<std::string>& last_checkpoints() const { return last_checkpoints_; }
  // Sets last_checkpoints from the store's list for `location` (after a restart; the
  // SessionManager does so when it restores or keeps a model), with their commit times.
  absl::Status RecoverLastCheckpoints(const std::string& location);
  // TensorFlow's set_last_checkpoints: the list as given, each taken as saved now (for
  // keep_checkpoint_every_n_hours).
  void SetLastCheckpoints(std::vector<std::string> paths);

 private:
  Saver() = default;
  // Both Saves: `step_tensor` names the global step's tensor, or is empty to name the
  // checkpoint by `global_step`.
  absl::StatusOr<std::string> SaveAt(Session* session, const std::string& prefix,
                                     int64_t global_step, const std::string& step_tensor,
                                     bool write_meta_graph, int64_t* saved_step);
  // Runs the snapshot step (a snapshot id is fed) and returns the step read in it, or
  // `global_step` without `step_tensor`.
  absl::StatusOr<int64_t> Snapshot(Session* session, const std::string& snapshot_id,
                                   int64_t global_step, const std::string& step_tensor);

  SaverOptions options_;
  // For the meta graph of each save. Weak: a graph keeps its default Saver as an
  // attachment, and a strong pointer back would keep both alive forever.
  std::weak_ptr<ClientGraph> graph_;
  bool empty_ = false;
  int num_shards_ = 1;
  std::string location_feed_;     // "save/location:0"
  std::string id_feed_;           // "save/checkpoint_id:0"
  std::string checkpoint_feed_;   // "save/checkpoint:0"
  std::string snapshot_id_feed_;  // "save/snapshot_id:0"; empty in graphs made before it.
  std::string snapshot_target_;
  std::string write_target_;
  std::string save_target_;
  std::string restore_target_;
  std::vector<std::string> last_checkpoints_;
  std::vector<double> last_timestamps_;  // Unix seconds, one per last_checkpoints_ entry.
  absl::BitGen bitgen_;                  // Snapshot ids.
};

// The newest complete checkpoint's path under `location`, or nullopt if there is none.
absl::StatusOr<std::optional<std::string>> LatestCheckpoint(const std::string& location);

// Whether checkpoint `path` ("<location>/<name>") exists (its index does).
bool CheckpointExists(const std::string& path);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_SAVER_H_

#ifndef OVERSEER_CLIENT_TRAINING_SCAFFOLD_H_
#define OVERSEER_CLIENT_TRAINING_SCAFFOLD_H_

// Scaffold: TensorFlow's tf.train.Scaffold. It gathers the pieces a monitored session
// needs to initialise, check, checkpoint and summarise a model: the ops given to it,
// and for the others the graph's defaults, made once per graph and cached in the
// graph (collections "init_op", "ready_op", "ready_for_local_init_op",
// "local_init_op", "summary_op"; the default Saver as a graph attachment), so that
// every scaffold of a graph uses the same ones. Finalize resolves them and finalizes
// the graph.
//
//   Scaffold scaffold(root);                       // every piece by default
//   RETURN_IF_ERROR(scaffold.Finalize());
//   ... scaffold.init_op(), scaffold.ready_op(), scaffold.saver() ...

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "client/session/client_session.h"
#include "client/training/saver.h"

namespace overseer {

class Scaffold;

// Extra initialisation run after init_op (e.g. loading pre-trained values), called
// with the scaffold, as TensorFlow's init_fn(scaffold, session).
using ScaffoldInitFn =
    std::function<absl::Status(const Scaffold& scaffold, ClientSession& session)>;

// The collection of variables that are local to a trainer (TensorFlow's
// LOCAL_VARIABLES): initialised by the default local_init_op instead of init_op, not
// saved by the default Saver. MakeVariable with VariableOptions::collections =
// {kLocalVariables} makes one. (GraphKeys::kLocalVariables.)
inline constexpr const char* kLocalVariables = GraphKeys::kLocalVariables;

// Pieces given by the caller; a null op (or saver) is resolved by Finalize.
struct ScaffoldOptions {
  Operation init_op;
  std::vector<FeedPair> init_feed_dict;
  ScaffoldInitFn init_fn;
  Output ready_op;
  Output ready_for_local_init_op;
  Operation local_init_op;
  std::vector<FeedPair> local_init_feed_dict;
  Output summary_op;
  Saver* saver = nullptr;  // Not owned.
  // Pieces not given above are taken from this scaffold (as it is when this one is
  // constructed; its init_fn is called with this scaffold). Not owned; may be null.
  const Scaffold* copy_from_scaffold = nullptr;
};

// Not thread-safe: build, Finalize, then read from any thread.
class Scaffold {
 public:
  // A scaffold for `scope`'s graph. Nothing is created until Finalize.
  explicit Scaffold(const Scope& scope, ScaffoldOptions options = {});

  Scaffold(const Scaffold&) = delete;
  Scaffold& operator=(const Scaffold&) = delete;

  // Resolves every piece not given, as TensorFlow does: each from its collection in
  // the graph if there is one, else made and added to the collection:
  //   init_op: initialiser of the global variables (those not in kLocalVariables);
  //   ready_op: ReportUninitializedVariables of every variable;
  //   ready_for_local_init_op: ReportUninitializedVariables of the global variables;
  //   local_init_op: initialiser of the kLocalVariables variables (a NoOp if none);
  //   summary_op: MergeAllSummaries, or none if the graph has no summaries;
  //   saver: the graph's default Saver (sharded, every global variable), or none if
  //   there are no global variables.
  // Then finalizes the graph. A second call only finalizes the graph again. Errors:
  // INVALID_ARGUMENT for a given op of another graph; FAILED_PRECONDITION "More than
  // one item in the collection ..." when a collection (or the default savers) holds
  // several; errors of building the ops (the graph's recorded error).
  absl::Status Finalize();
  bool finalized() const { return finalized_; }

  // Resolve one piece now, as Finalize would (the same cached one), for hooks that need
  // it in Begin, before the graph is finalized. Null when there is none.
  absl::StatusOr<Saver*> ResolveSaver();
  absl::StatusOr<Output> ResolveSummaryOp();

  // The pieces: those given, or after Finalize the resolved ones (null before).
  const Operation& init_op() const { return init_op_; }
  const std::vector<FeedPair>& init_feed_dict() const { return init_feed_dict_; }
  // init_fn bound to this scaffold; empty if none was given.
  std::function<absl::Status(ClientSession&)> init_fn() const;
  const Output& ready_op() const { return ready_op_; }
  const Output& ready_for_local_init_op() const { return ready_for_local_init_op_; }
  const Operation& local_init_op() const { return local_init_op_; }
  const std::vector<FeedPair>& local_init_feed_dict() const { return local_init_feed_dict_; }
  const Output& summary_op() const { return summary_op_; }
  Saver* saver() const { return saver_; }

  const Scope& scope() const { return scope_; }
  ClientGraph* graph() const { return scope_.graph(); }

 private:
  absl::Status CheckGraph() const;

  const Scope scope_;
  Operation init_op_;
  std::vector<FeedPair> init_feed_dict_;
  ScaffoldInitFn user_init_fn_;
  Output ready_op_;
  Output ready_for_local_init_op_;
  Operation local_init_op_;
  std::vector<FeedPair> local_init_feed_dict_;
  Output summary_op_;
  Saver* saver_ = nullptr;
  // The graph's default Saver while this scaffold uses it (the graph holds it too).
  std::shared_ptr<Saver> default_saver_;
  bool summary_op_resolved_ = false;
  bool finalized_ = false;
};

// TensorFlow's SAVERS collection: Savers kept with `graph` (a Scaffold's default
// Saver is added here). GraphSavers lists them in order.
void AddSaverToGraph(ClientGraph* graph, std::shared_ptr<Saver> saver);
std::vector<std::shared_ptr<Saver>> GraphSavers(const ClientGraph& graph);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_SCAFFOLD_H_

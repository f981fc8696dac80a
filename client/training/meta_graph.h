#ifndef OVERSEER_CLIENT_TRAINING_META_GRAPH_H_
#define OVERSEER_CLIENT_TRAINING_META_GRAPH_H_

// TensorFlow's meta graphs (tf.train.export_meta_graph, tf.train.import_meta_graph): a
// graph with its collections and its Saver, enough for a trainer to restore and run a
// model without the code that built it.
//
//   // Where the model is built:
//   ASSIGN_OR_RETURN(MetaGraphDef meta, ExportMetaGraph(root, saver.get()));
//   RETURN_IF_ERROR(WriteMetaGraph(meta, "/ckpt/model.meta"));
//   // Elsewhere, from the file alone:
//   Scope root = Scope::NewRootScope();
//   ASSIGN_OR_RETURN(MetaGraphDef meta, ReadMetaGraph("/ckpt/model.meta"));
//   ASSIGN_OR_RETURN(std::unique_ptr<Saver> saver, ImportMetaGraph(root, meta));
//   ... create the session, saver->Restore(session, checkpoint), run "train_op" (a
//   collection names it) ...
//
// Collections keep their values: names as node lists; the variable collections
// ("variables", "trainable_variables", "local_variables", "global_step") as
// TensorFlow's VariableDef protos, from which the import rebuilds the graph's variable
// records (GlobalVariables() and the rest work on an imported graph); any other
// collection holding values that are not names (queue runners' QueueRunnerDef) as bytes.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/scope.h"
#include "client/training/saver.h"
#include "proto/meta_graph.pb.h"

namespace overseer {

// The scope's graph, every collection, and `saver`'s definition (none when null or
// empty), tagged with `tags`. The graph's recorded error, if any.
absl::StatusOr<MetaGraphDef> ExportMetaGraph(const Scope& scope, const Saver* saver = nullptr,
                                             const std::vector<std::string>& tags = {});

// Adds the meta graph's nodes to the scope's graph (in an order that puts inputs
// first) and its collections, and returns the Saver it defines (null if it has none).
// With `import_scope` (TensorFlow's), every name (nodes, their inputs and colocation,
// the collections' names, the saver's) is prefixed "<import_scope>/", so that a graph
// can hold two copies. INVALID_ARGUMENT naming the node for a node the graph refuses
// (a name already in it, an unknown op, an input no node gives) or a malformed
// collection; the graph may then hold the nodes added before it. FAILED_PRECONDITION
// for a finalized graph.
absl::StatusOr<std::unique_ptr<Saver>> ImportMetaGraph(const Scope& scope, const MetaGraphDef& meta,
                                                       const std::string& import_scope = "");

// TensorFlow's import_meta_graph keyword arguments.
struct ImportMetaGraphOptions {
  std::string import_scope;  // As above.
  // Drops every node's device, so that a model saved on one cluster runs on another
  // (or in-process) placed by the importer's scope and the master.
  bool clear_devices = false;
};
absl::StatusOr<std::unique_ptr<Saver>> ImportMetaGraph(const Scope& scope, const MetaGraphDef& meta,
                                                       const ImportMetaGraphOptions& options);

// Writes `meta` to `path` in binary, whole: a temporary file, synced, renamed over it.
absl::Status WriteMetaGraph(const MetaGraphDef& meta, const std::string& path);
// NOT_FOUND for a missing file; DATA_LOSS naming it when it does not parse.
absl::StatusOr<MetaGraphDef> ReadMetaGraph(const std::string& path);

// TensorFlow's tf.train.write_graph: `graph` as "<dir>/<name>" (dir created if
// missing), in protobuf text format or binary, whole as WriteMetaGraph writes.
absl::Status WriteGraph(const GraphDef& graph, const std::string& dir, const std::string& name,
                        bool as_text = true);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_TRAINING_META_GRAPH_H_

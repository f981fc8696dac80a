#ifndef OVERSEER_CLIENT_GRAPH_EMBEDDING_H_
#define OVERSEER_CLIENT_GRAPH_EMBEDDING_H_

// Embedding lookups in a table whose rows are split across several variables (one per
// ps task), as TensorFlow 1.x's tf.nn.embedding_lookup with a partition_strategy:
//
//   std::vector<Output> shards = ...;  // [rows_i, dim] variables on /job:ps/task:i
//   ASSIGN_OR_RETURN(Output vectors, EmbeddingLookup(root, shards, ids));
//
// Each shard's rows are gathered where the shard lives (the Gather is colocated with
// it), and the results are stitched back in the order of the ids. The gradient reaches
// each shard as the rows it gave (dense, summed where an id repeats).

#include <vector>

#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"

namespace overseer {

// How ids map to shards (n shards, a table of V rows in all):
// kMod: id i is row i / n of shard i % n (the shards all hold about V / n rows).
// kDiv: contiguous ranges, the first V % n shards one row longer (TensorFlow's
// fixed-size partitioner splits a variable that way).
enum class PartitionStrategy { kMod, kDiv };

// The rows of `params` at `ids` (int32 or int64, any shape): shape ids.shape +
// params[0].shape[1:]. `params` are one or more tensors of one dtype whose shapes agree
// beyond the first dimension; kDiv needs their first dimensions known. INVALID_ARGUMENT
// otherwise. An id outside the table fails the step naming the Gather.
absl::StatusOr<Output> EmbeddingLookup(const Scope& scope, const std::vector<Output>& params,
                                       const Output& ids,
                                       PartitionStrategy strategy = PartitionStrategy::kMod);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_EMBEDDING_H_

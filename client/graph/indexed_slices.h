#ifndef OVERSEER_CLIENT_GRAPH_INDEXED_SLICES_H_
#define OVERSEER_CLIENT_GRAPH_INDEXED_SLICES_H_

// Sparse gradients, as TensorFlow's IndexedSlices: a tensor of `dense_shape` that is
// zero except at the rows `indices`, which hold `values` (one slice per index; slices of
// a repeated index add). The gradient of GatherV2 along axis 0 is one: the rows an
// embedding lookup read get the lookup's gradient, and nothing else.
//
// Gradients here are always tensors (AddSymbolicGradients returns Outputs), so a sparse
// gradient is the pair of a dense tensor and, recorded with the graph, its sparse form.
// The dense tensor is only computed if something runs it; optimizers look the sparse form
// up and update only those rows where the variable lives (SparseApply*, ScatterSub), so
// a step sends the ps the rows it read, not the table:
//
//   ASSIGN_OR_RETURN(auto grads, adagrad.ComputeGradients(root, loss));
//   std::optional<IndexedSlices> s = AsIndexedSlices(grads[0].grad);  // The table's.

#include <optional>

#include "client/graph/graph.h"
#include "client/graph/scope.h"

namespace overseer {

struct IndexedSlices {
  Output values;       // [N] + dense_shape[1:].
  Output indices;      // [N], int32 or int64.
  Output dense_shape;  // The dense tensor's shape (an integer vector).
};

// Records that `dense` equals `slices` scattered into zeros of their dense shape.
// Gradient functions call it for the dense tensor they return.
void RecordIndexedSlices(const Output& dense, const IndexedSlices& slices);

// The sparse form recorded for `grad`, if any (none for a null Output).
std::optional<IndexedSlices> AsIndexedSlices(const Output& grad);

// The same slices with each index once, their values summed (in order of first
// appearance), as TensorFlow's optimizers do before a sparse update that is not a plain
// sum (Adagrad's accumulator would otherwise see a repeated row twice).
IndexedSlices DeduplicateIndexedSlices(const Scope& scope, const IndexedSlices& slices);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_INDEXED_SLICES_H_

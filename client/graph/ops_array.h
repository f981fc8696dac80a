#ifndef OVERSEER_CLIENT_GRAPH_OPS_ARRAY_H_
#define OVERSEER_CLIENT_GRAPH_OPS_ARRAY_H_

// Array ops: feeds, identities, shapes and rearrangements. Each function adds one node
// (plus Const nodes for value inputs) through `scope` and returns its output; errors
// are recorded in the scope (see scope.h) and give a null Output. Op names, inputs and
// attrs are TensorFlow's.

#include <vector>

#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"
#include "core/tensor_shape.h"

namespace overseer {
namespace ops {

// A tensor that must be fed; `shape` constrains the fed value (unknown by default).
Output Placeholder(const Scope& scope, DataType dtype,
                   const PartialShape& shape = PartialShape::Unknown());
// `input` unless fed; `shape` constrains the fed value (default: input's shape).
Output PlaceholderWithDefault(const Scope& scope, Input input,
                              const PartialShape& shape = PartialShape::Unknown());
Output Identity(const Scope& scope, Input input);
// Identity that blocks gradients.
Output StopGradient(const Scope& scope, Input input);
// Does nothing; a target to group control dependencies.
Operation NoOp(const Scope& scope);
// Groups `deps` under one NoOp (TensorFlow's tf.group).
Operation Group(const Scope& scope, const std::vector<Operation>& deps);

Output Reshape(const Scope& scope, Input tensor, Input shape);
Output Shape(const Scope& scope, Input input, DataType out_type = DT_INT32);
Output Size(const Scope& scope, Input input, DataType out_type = DT_INT32);
// A tensor of shape `dims` filled with the scalar `value`.
Output Fill(const Scope& scope, Input dims, Input value);
Output ZerosLike(const Scope& scope, Input x);
Output OnesLike(const Scope& scope, Input x);
Output Cast(const Scope& scope, Input x, DataType dst_type);
// Elements of `t` where `condition`, else of `e`.
Output Select(const Scope& scope, Input condition, Input t, Input e);
Output Pack(const Scope& scope, const InputList& values, int64_t axis = 0);
// `num` tensors along `axis` of `value`.
std::vector<Output> Unpack(const Scope& scope, Input value, int64_t num, int64_t axis = 0);
Output ConcatV2(const Scope& scope, const InputList& values, Input axis);
// Slices of `params` along `axis` at `indices` (int32 or int64): shape params.shape[:axis]
// + indices.shape + params.shape[axis + 1:] (tf.gather).
Output GatherV2(const Scope& scope, Input params, Input indices, Input axis = 0);
// output[segment_ids[i...], ...] = the sum of data[i..., ...] over [num_segments] rows;
// negative ids are dropped (tf.unsorted_segment_sum).
Output UnsortedSegmentSum(const Scope& scope, Input data, Input segment_ids, Input num_segments);
// tf.unique: y, the distinct elements of the vector x in order of first appearance;
// idx (int32), where each element of x is in y.
struct UniqueOutput {
  Output y;
  Output idx;
};
UniqueOutput Unique(const Scope& scope, Input x);
// tf.dynamic_partition: output i holds the slices data[j...] whose int32 partitions[j...]
// is i, in order (partitions.shape a prefix of data.shape).
std::vector<Output> DynamicPartition(const Scope& scope, Input data, Input partitions,
                                     int64_t num_partitions);
// tf.dynamic_stitch: merged[indices[m][i...], ...] = data[m][i..., ...] (int32 indices).
Output DynamicStitch(const Scope& scope, const InputList& indices, const InputList& data);
// tf.range(start, limit, delta): scalars of one numeric dtype.
Output Range(const Scope& scope, Input start, Input limit, Input delta = 1);
Output ExpandDims(const Scope& scope, Input input, Input dim);
// Removes the size-1 dimensions `squeeze_dims` (all size-1 dimensions when empty).
Output Squeeze(const Scope& scope, Input input, const std::vector<int64_t>& squeeze_dims = {});
Output Slice(const Scope& scope, Input input, Input begin, Input size);
Output BroadcastTo(const Scope& scope, Input input, Input shape);
Output Transpose(const Scope& scope, Input x, Input perm);

// Gradient helpers.
// The reduction axes for the gradients of a broadcasting binary op with input shapes
// s0 and s1.
struct BroadcastGradientArgsOutput {
  Output r0, r1;
};
BroadcastGradientArgsOutput BroadcastGradientArgs(const Scope& scope, Input s0, Input s1);
// The offsets of each concatenated input's slice along `concat_dim`.
std::vector<Output> ConcatOffset(const Scope& scope, Input concat_dim, const InputList& shape);
// `input_shape` with the dimensions of `axes` set to 1.
Output ReducedShape(const Scope& scope, Input input_shape, Input axes);

}  // namespace ops
}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPS_ARRAY_H_

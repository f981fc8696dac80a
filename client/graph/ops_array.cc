#include "client/graph/ops_array.h"

#include "client/graph/graph_builder.h"

namespace overseer {
namespace ops {

Output Placeholder(const Scope& scope, DataType dtype, const PartialShape& shape) {
  return FirstOutput(
      NodeBuilder(scope, "Placeholder").Attr("dtype", dtype).Attr("shape", shape).Finalize());
}

Output PlaceholderWithDefault(const Scope& scope, Input input, const PartialShape& shape) {
  Output in = input.ToOutput(scope);
  if (!in.valid()) return Output();
  const PartialShape& s = shape.known_rank() ? shape : in.shape();
  return FirstOutput(NodeBuilder(scope, "PlaceholderWithDefault")
                         .Input(in)
                         .Attr("dtype", RemoveRefType(in.dtype()))
                         .Attr("shape", s)
                         .Finalize());
}

Output Identity(const Scope& scope, Input input) {
  return FirstOutput(NodeBuilder(scope, "Identity").Input(input).Finalize());
}

Output StopGradient(const Scope& scope, Input input) {
  return FirstOutput(NodeBuilder(scope, "StopGradient").Input(input).Finalize());
}

Operation NoOp(const Scope& scope) { return NodeBuilder(scope, "NoOp").Finalize(); }

Operation Group(const Scope& scope, const std::vector<Operation>& deps) {
  NodeBuilder b(scope, "NoOp", "group_deps");
  for (const Operation& d : deps) b.ControlInput(d);
  return b.Finalize();
}

Output Reshape(const Scope& scope, Input tensor, Input shape) {
  return FirstOutput(NodeBuilder(scope, "Reshape").Input(tensor).Input(shape).Finalize());
}

Output Shape(const Scope& scope, Input input, DataType out_type) {
  return FirstOutput(
      NodeBuilder(scope, "Shape").Input(input).Attr("out_type", out_type).Finalize());
}

Output Size(const Scope& scope, Input input, DataType out_type) {
  return FirstOutput(NodeBuilder(scope, "Size").Input(input).Attr("out_type", out_type).Finalize());
}

Output Fill(const Scope& scope, Input dims, Input value) {
  return FirstOutput(NodeBuilder(scope, "Fill").Input(dims).Input(value).Finalize());
}

Output ZerosLike(const Scope& scope, Input x) {
  return FirstOutput(NodeBuilder(scope, "ZerosLike").Input(x).Finalize());
}

Output OnesLike(const Scope& scope, Input x) {
  return FirstOutput(NodeBuilder(scope, "OnesLike").Input(x).Finalize());
}

Output Cast(const Scope& scope, Input x, DataType dst_type) {
  return FirstOutput(NodeBuilder(scope, "Cast").Input(x).Attr("DstT", dst_type).Finalize());
}

Output Select(const Scope& scope, Input condition, Input t, Input e) {
  return FirstOutput(NodeBuilder(scope, "Select").Input(condition).Input(t).Input(e).Finalize());
}

Output Pack(const Scope& scope, const InputList& values, int64_t axis) {
  return FirstOutput(NodeBuilder(scope, "Pack").Input(values).Attr("axis", axis).Finalize());
}

std::vector<Output> Unpack(const Scope& scope, Input value, int64_t num, int64_t axis) {
  return AllOutputs(
      NodeBuilder(scope, "Unpack").Input(value).Attr("num", num).Attr("axis", axis).Finalize());
}

Output ConcatV2(const Scope& scope, const InputList& values, Input axis) {
  return FirstOutput(NodeBuilder(scope, "ConcatV2").Input(values).Input(axis).Finalize());
}

Output GatherV2(const Scope& scope, Input params, Input indices, Input axis) {
  return FirstOutput(
      NodeBuilder(scope, "GatherV2").Input(params).Input(indices).Input(axis).Finalize());
}

Output UnsortedSegmentSum(const Scope& scope, Input data, Input segment_ids, Input num_segments) {
  return FirstOutput(NodeBuilder(scope, "UnsortedSegmentSum")
                         .Input(data)
                         .Input(segment_ids)
                         .Input(num_segments)
                         .Finalize());
}

UniqueOutput Unique(const Scope& scope, Input x) {
  Operation op = NodeBuilder(scope, "Unique").Input(x).Finalize();
  if (!op.valid()) return UniqueOutput();
  return UniqueOutput{op.output(0), op.output(1)};
}

std::vector<Output> DynamicPartition(const Scope& scope, Input data, Input partitions,
                                     int64_t num_partitions) {
  return AllOutputs(NodeBuilder(scope, "DynamicPartition")
                        .Input(data)
                        .Input(partitions)
                        .Attr("num_partitions", num_partitions)
                        .Finalize());
}

Output DynamicStitch(const Scope& scope, const InputList& indices, const InputList& data) {
  return FirstOutput(NodeBuilder(scope, "DynamicStitch").Input(indices).Input(data).Finalize());
}

Output Range(const Scope& scope, Input start, Input limit, Input delta) {
  return FirstOutput(NodeBuilder(scope, "Range").Input(start).Input(limit).Input(delta).Finalize());
}

Output ExpandDims(const Scope& scope, Input input, Input dim) {
  return FirstOutput(NodeBuilder(scope, "ExpandDims").Input(input).Input(dim).Finalize());
}

Output Squeeze(const Scope& scope, Input input, const std::vector<int64_t>& squeeze_dims) {
  return FirstOutput(
      NodeBuilder(scope, "Squeeze").Input(input).Attr("squeeze_dims", squeeze_dims).Finalize());
}

Output Slice(const Scope& scope, Input input, Input begin, Input size) {
  return FirstOutput(NodeBuilder(scope, "Slice").Input(input).Input(begin).Input(size).Finalize());
}

Output BroadcastTo(const Scope& scope, Input input, Input shape) {
  return FirstOutput(NodeBuilder(scope, "BroadcastTo").Input(input).Input(shape).Finalize());
}

Output Transpose(const Scope& scope, Input x, Input perm) {
  return FirstOutput(NodeBuilder(scope, "Transpose").Input(x).Input(perm).Finalize());
}

BroadcastGradientArgsOutput BroadcastGradientArgs(const Scope& scope, Input s0, Input s1) {
  Operation op = NodeBuilder(scope, "BroadcastGradientArgs").Input(s0).Input(s1).Finalize();
  if (!op.valid()) return {};
  return {op.output(0), op.output(1)};
}

std::vector<Output> ConcatOffset(const Scope& scope, Input concat_dim, const InputList& shape) {
  return AllOutputs(NodeBuilder(scope, "ConcatOffset").Input(concat_dim).Input(shape).Finalize());
}

Output ReducedShape(const Scope& scope, Input input_shape, Input axes) {
  return FirstOutput(NodeBuilder(scope, "ReducedShape").Input(input_shape).Input(axes).Finalize());
}

}  // namespace ops
}  // namespace overseer

// Gradients of the array ops (ops_array.h), and the ops that have none.

#include <vector>

#include "absl/strings/str_cat.h"
#include "client/graph/gradients.h"
#include "client/graph/gradients_util.h"
#include "client/graph/indexed_slices.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_input.h"
#include "client/graph/ops_math.h"
#include "core/node_def_util.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"

namespace overseer {
namespace {

using grad_util::GradOrZeros;
using grad_util::ToInt32;

absl::Status IdentityGrad(const Scope& scope, const Operation& /*op*/,
                          const std::vector<Output>& grads, std::vector<Output>* out) {
  out->push_back(grads[0]);
  return scope.status();
}
REGISTER_GRADIENT("Identity", IdentityGrad);
REGISTER_GRADIENT("PlaceholderWithDefault", IdentityGrad);

// Reshape and ExpandDims: the gradient takes the input's shape back.
absl::Status ReshapeGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                         std::vector<Output>* out) {
  out->push_back(ops::Reshape(scope, grads[0], ops::Shape(scope, op.input(0))));
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("Reshape", ReshapeGrad);
REGISTER_GRADIENT("ExpandDims", ReshapeGrad);

absl::Status SqueezeGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                         std::vector<Output>* out) {
  out->push_back(ops::Reshape(scope, grads[0], ops::Shape(scope, op.input(0))));
  return scope.status();
}
REGISTER_GRADIENT("Squeeze", SqueezeGrad);

absl::Status CastGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                      std::vector<Output>* out) {
  const DataType src = RemoveRefType(op.input(0).dtype());
  const DataType dst = op.output(0).dtype();
  if (IsFloatingType(src) && IsFloatingType(dst)) {
    out->push_back(ops::Cast(scope, grads[0], src));
  } else {
    out->push_back(Output());
  }
  return scope.status();
}
REGISTER_GRADIENT("Cast", CastGrad);

absl::Status SelectGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                        std::vector<Output>* out) {
  Output c = op.input(0);
  Output zeros = ops::ZerosLike(scope, grads[0]);
  out->push_back(Output());
  out->push_back(ops::Select(scope, c, grads[0], zeros));
  out->push_back(ops::Select(scope, c, zeros, grads[0]));
  return scope.status();
}
REGISTER_GRADIENT("Select", SelectGrad);

absl::Status PackGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                      std::vector<Output>* out) {
  int64_t axis = 0;
  RETURN_IF_ERROR(GetNodeAttr(op.node()->def(), "axis", &axis));
  *out = ops::Unpack(scope, grads[0], op.num_inputs(), axis);
  return scope.status();
}
REGISTER_GRADIENT("Pack", PackGrad);

absl::Status UnpackGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                        std::vector<Output>* out) {
  int64_t axis = 0;
  RETURN_IF_ERROR(GetNodeAttr(op.node()->def(), "axis", &axis));
  InputList parts;
  for (int i = 0; i < op.num_outputs(); ++i) parts.push_back(GradOrZeros(scope, op, grads, i));
  out->push_back(ops::Pack(scope, parts, axis));
  return scope.status();
}
REGISTER_GRADIENT("Unpack", UnpackGrad);

// The concat axis as a non-negative int32 scalar, from the (usually constant) axis.
Output NonNegativeConcatDim(const Scope& scope, const Output& axis, const Output& first) {
  const Tensor* value = axis.index() == 0 ? axis.node()->constant_value() : nullptr;
  if (value == nullptr || value->NumElements() != 1) return ToInt32(scope, axis);
  int64_t a = value->dtype() == DT_INT64 ? value->flat<int64_t>()(0)
                                         : static_cast<int64_t>(value->flat<int32_t>()(0));
  if (a >= 0) return ops::ConstOfType(scope, DT_INT32, static_cast<double>(a));
  if (first.shape().known_rank()) {
    return ops::ConstOfType(scope, DT_INT32, static_cast<double>(a + first.shape().rank()));
  }
  Output rank = ops::Size(scope, ops::Shape(scope, first));
  return ops::Add(scope, ops::ConstOfType(scope, DT_INT32, static_cast<double>(a)), rank);
}

absl::Status ConcatV2Grad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                          std::vector<Output>* out) {
  const int n = op.num_inputs() - 1;
  Output concat_dim = NonNegativeConcatDim(scope, op.input(n), op.input(0));
  InputList shapes;
  std::vector<Output> shape_outputs;
  for (int i = 0; i < n; ++i) {
    shape_outputs.push_back(ops::Shape(scope, op.input(i)));
    shapes.push_back(shape_outputs.back());
  }
  std::vector<Output> offsets = ops::ConcatOffset(scope, concat_dim, shapes);
  RETURN_IF_ERROR(scope.status());
  for (int i = 0; i < n; ++i) {
    out->push_back(ops::Slice(scope, grads[0], offsets[i], shape_outputs[i]));
  }
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("ConcatV2", ConcatV2Grad);

absl::Status TransposeGrad(const Scope& scope, const Operation& op,
                           const std::vector<Output>& grads, std::vector<Output>* out) {
  Output perm = op.input(1);
  const Tensor* value = perm.index() == 0 ? perm.node()->constant_value() : nullptr;
  if (value == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", op.name(), "': the gradient of Transpose needs a constant perm"));
  }
  std::vector<int64_t> p(value->NumElements());
  for (int64_t i = 0; i < value->NumElements(); ++i) {
    p[i] = value->dtype() == DT_INT64 ? value->flat<int64_t>()(i) : value->flat<int32_t>()(i);
  }
  std::vector<int32_t> inverse(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] < 0 || p[i] >= static_cast<int64_t>(p.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", op.name(), "': perm is not a permutation"));
    }
    inverse[p[i]] = static_cast<int32_t>(i);
  }
  out->push_back(ops::Transpose(scope, grads[0], Tensor::FromVector(inverse)));
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("Transpose", TransposeGrad);

absl::Status BroadcastToGrad(const Scope& scope, const Operation& op,
                             const std::vector<Output>& grads, std::vector<Output>* out) {
  Output shape_x = ops::Shape(scope, op.input(0));
  ops::BroadcastGradientArgsOutput r =
      ops::BroadcastGradientArgs(scope, shape_x, ToInt32(scope, op.input(1)));
  out->push_back(ops::Reshape(scope, ops::Sum(scope, grads[0], r.r0), shape_x));
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("BroadcastTo", BroadcastToGrad);

absl::Status FillGrad(const Scope& scope, const Operation& /*op*/, const std::vector<Output>& grads,
                      std::vector<Output>* out) {
  // Every element came from the one value.
  out->push_back(Output());
  out->push_back(ops::Sum(scope, ops::Reshape(scope, grads[0], {-1}), 0));
  return scope.status();
}
REGISTER_GRADIENT("Fill", FillGrad);

// GatherV2 along axis 0: the rows gathered receive their gradients, summed where an
// index repeats; its sparse form (TensorFlow's IndexedSlices) is recorded with it.
absl::Status GatherGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grads,
                        std::vector<Output>* out) {
  const Tensor* axis = op.input(2).node()->constant_value();
  const bool axis_zero =
      axis != nullptr && axis->NumElements() == 1 &&
      (axis->dtype() == DT_INT64 ? axis->data<int64_t>()[0] : axis->data<int32_t>()[0]) == 0;
  if (!axis_zero) {
    return absl::UnimplementedError(absl::StrCat("the gradient of GatherV2 '", op.name(),
                                                 "' is implemented for a constant axis 0 only"));
  }
  // The shape is read where params live (as TensorFlow colocates it): only the shape
  // crosses to the gradient's device, never the table.
  Output params_shape = ops::Shape(scope.ColocateWith(op.input(0)), op.input(0));
  Output count = ops::ExpandDims(scope, ops::Size(scope, op.input(1)), 0);
  Output row_shape = ops::Slice(scope, params_shape, {1}, {-1});
  Output values = ops::Reshape(scope, grads[0], ops::ConcatV2(scope, {count, row_shape}, 0));
  Output indices = ops::Reshape(scope, op.input(1), {-1});
  Output rows = ops::GatherV2(scope, params_shape, 0, 0);
  Output dense = ops::UnsortedSegmentSum(scope, values, indices, rows);
  RecordIndexedSlices(dense, IndexedSlices{values, indices, params_shape});
  out->push_back(dense);
  out->push_back(Output());
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("GatherV2", GatherGrad);

// Each slice of data went to one output: stitch the outputs' gradients back in the
// order the slices came (TensorFlow's _DynamicPartitionGrads).
absl::Status DynamicPartitionGrad(const Scope& scope, const Operation& op,
                                  const std::vector<Output>& grads, std::vector<Output>* out) {
  Output data = op.input(0), partitions = op.input(1);
  const int64_t num = op.num_outputs();
  Output positions = ops::Reshape(scope, ops::Range(scope, 0, ops::Size(scope, partitions), 1),
                                  ops::Shape(scope, partitions));
  std::vector<Output> where = ops::DynamicPartition(scope, positions, partitions, num);
  std::vector<Output> pieces;
  for (int64_t i = 0; i < num; ++i) {
    pieces.push_back(grads[i].valid() ? grads[i] : ops::ZerosLike(scope, op.output(i)));
  }
  Output stitched = ops::DynamicStitch(scope, InputList(where.begin(), where.end()),
                                       InputList(pieces.begin(), pieces.end()));
  out->push_back(ops::Reshape(scope, stitched, ops::Shape(scope, data)));
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("DynamicPartition", DynamicPartitionGrad);

// data[m] gave the rows at indices[m]: it receives their gradient.
absl::Status DynamicStitchGrad(const Scope& scope, const Operation& op,
                               const std::vector<Output>& grads, std::vector<Output>* out) {
  const int n = op.num_inputs() / 2;
  for (int m = 0; m < n; ++m) out->push_back(Output());
  for (int m = 0; m < n; ++m) out->push_back(ops::GatherV2(scope, grads[0], op.input(m), 0));
  return scope.status();
}
REGISTER_GRADIENT("DynamicStitch", DynamicStitchGrad);
REGISTER_NO_GRADIENT("Range");
REGISTER_NO_GRADIENT("Unique");

// Each element of data went to its segment: it receives that segment's gradient.
// Segment ids must be non-negative here (a negative one fails the gather, naming it).
absl::Status UnsortedSegmentSumGrad(const Scope& scope, const Operation& op,
                                    const std::vector<Output>& grads, std::vector<Output>* out) {
  out->push_back(ops::GatherV2(scope, grads[0], op.input(1), 0));
  out->push_back(Output());
  out->push_back(Output());
  return scope.status();
}
REGISTER_GRADIENT("UnsortedSegmentSum", UnsortedSegmentSumGrad);

REGISTER_NO_GRADIENT("StopGradient");
REGISTER_NO_GRADIENT("Shape");
REGISTER_NO_GRADIENT("Size");
REGISTER_NO_GRADIENT("ZerosLike");
REGISTER_NO_GRADIENT("OnesLike");
REGISTER_NO_GRADIENT("Const");
REGISTER_NO_GRADIENT("Placeholder");
REGISTER_NO_GRADIENT("ConcatOffset");
REGISTER_NO_GRADIENT("ReducedShape");
REGISTER_NO_GRADIENT("RandomUniform");
REGISTER_NO_GRADIENT("RandomNormal");
REGISTER_NO_GRADIENT("TruncatedNormal");
REGISTER_NO_GRADIENT("IsVariableInitialized");

}  // namespace
}  // namespace overseer

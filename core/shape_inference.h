#ifndef OVERSEER_CORE_SHAPE_INFERENCE_H_
#define OVERSEER_CORE_SHAPE_INFERENCE_H_

// What an op's shape function sees: the node, its input shapes (partial), the values of
// inputs that are constants, and where it writes the output shapes.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/node_def_util.h"
#include "core/op_registry.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"
#include "proto/node_def.pb.h"

namespace overseer {

// Not thread-safe; one per inference.
class ShapeContext {
 public:
  // `input_tensors[i]` is the value of input i when it is known at graph-build time
  // (a Const), else nullptr; it may be shorter than `input_shapes`. Outputs start at
  // unknown rank.
  ShapeContext(const NodeDef& node, const OpDef& op, std::vector<PartialShape> input_shapes,
               std::vector<const Tensor*> input_tensors, int num_outputs);

  const NodeDef& node() const { return node_; }
  const OpDef& op() const { return op_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const PartialShape& input(int i) const { return inputs_[i]; }
  // The constant value of input i, or nullptr.
  const Tensor* input_tensor(int i) const;
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  void set_output(int i, PartialShape shape) { outputs_[i] = std::move(shape); }
  const PartialShape& output(int i) const { return outputs_[i]; }
  const std::vector<PartialShape>& outputs() const { return outputs_; }

  template <typename T>
  absl::Status GetAttr(absl::string_view name, T* value) const {
    return GetNodeAttr(node_, name, value);
  }

  // INVALID_ARGUMENT with the node and op named before `message`.
  absl::Status Error(absl::string_view message) const;
  // INVALID_ARGUMENT unless input i has unknown rank or rank `rank`.
  absl::Status WithRank(int i, int rank) const;

 private:
  const NodeDef& node_;
  const OpDef& op_;
  std::vector<PartialShape> inputs_;
  std::vector<const Tensor*> input_tensors_;
  std::vector<PartialShape> outputs_;
};

// Common shape functions.
namespace shape_fn {
absl::Status Unknown(ShapeContext* c);          // Every output of unknown shape.
absl::Status NoOutputs(ShapeContext* c);        // No outputs to set.
absl::Status Scalar(ShapeContext* c);           // Every output a scalar.
absl::Status Unchanged(ShapeContext* c);        // Output 0 = input 0.
absl::Status BroadcastBinary(ShapeContext* c);  // Output 0 = broadcast(input 0, input 1).
// Output 0 = input 0 merged with every other input (all must be compatible).
absl::Status MergeAllInputs(ShapeContext* c);
}  // namespace shape_fn

// Runs `op.shape_fn` (Unknown when unset) for `node`.
absl::StatusOr<std::vector<PartialShape>> InferShapes(
    const NodeDef& node, const OpDef& op, const std::vector<PartialShape>& input_shapes,
    const std::vector<const Tensor*>& input_tensors);

}  // namespace overseer

#endif  // OVERSEER_CORE_SHAPE_INFERENCE_H_

#include "core/shape_inference.h"

#include "absl/strings/str_cat.h"

namespace overseer {

ShapeContext::ShapeContext(const NodeDef& node, const OpDef& op,
                           std::vector<PartialShape> input_shapes,
                           std::vector<const Tensor*> input_tensors, int num_outputs)
    : node_(node),
      op_(op),
      inputs_(std::move(input_shapes)),
      input_tensors_(std::move(input_tensors)),
      outputs_(num_outputs) {}

const Tensor* ShapeContext::input_tensor(int i) const {
  if (i < 0 || i >= static_cast<int>(input_tensors_.size())) return nullptr;
  return input_tensors_[i];
}

absl::Status ShapeContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node_.name(), "' (op '", node_.op(), "'): ", message));
}

absl::Status ShapeContext::WithRank(int i, int rank) const {
  const PartialShape& s = inputs_[i];
  if (s.known_rank() && s.rank() != rank) {
    return Error(
        absl::StrCat("input ", i, " must have rank ", rank, " but has shape ", s.DebugString()));
  }
  return absl::OkStatus();
}

namespace shape_fn {

absl::Status Unknown(ShapeContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialShape::Unknown());
  return absl::OkStatus();
}

absl::Status NoOutputs(ShapeContext* /*c*/) { return absl::OkStatus(); }

absl::Status Scalar(ShapeContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialShape::Scalar());
  return absl::OkStatus();
}

absl::Status Unchanged(ShapeContext* c) {
  c->set_output(0, c->num_inputs() > 0 ? c->input(0) : PartialShape::Unknown());
  return absl::OkStatus();
}

absl::Status BroadcastBinary(ShapeContext* c) {
  auto out = BroadcastShapes(c->input(0), c->input(1));
  if (!out.ok()) return c->Error(out.status().message());
  c->set_output(0, *std::move(out));
  return absl::OkStatus();
}

absl::Status MergeAllInputs(ShapeContext* c) {
  PartialShape merged = c->num_inputs() > 0 ? c->input(0) : PartialShape::Unknown();
  for (int i = 1; i < c->num_inputs(); ++i) {
    auto m = merged.Merge(c->input(i));
    if (!m.ok()) {
      return c->Error(absl::StrCat("input ", i, " has shape ", c->input(i).DebugString(),
                                   " but input 0 has shape ", c->input(0).DebugString()));
    }
    merged = *std::move(m);
  }
  c->set_output(0, std::move(merged));
  return absl::OkStatus();
}

}  // namespace shape_fn

absl::StatusOr<std::vector<PartialShape>> InferShapes(
    const NodeDef& node, const OpDef& op, const std::vector<PartialShape>& input_shapes,
    const std::vector<const Tensor*>& input_tensors) {
  std::vector<DataType> in_types, out_types;
  if (auto s = InOutTypesForNode(node, op, &in_types, &out_types); !s.ok()) return s;
  ShapeContext c(node, op, input_shapes, input_tensors, static_cast<int>(out_types.size()));
  const ShapeFn& fn = op.shape_fn ? op.shape_fn : ShapeFn(shape_fn::Unknown);
  if (auto s = fn(&c); !s.ok()) {
    if (s.code() == absl::StatusCode::kInvalidArgument &&
        absl::string_view(s.message()).find(node.name()) == absl::string_view::npos) {
      return c.Error(s.message());
    }
    return s;
  }
  // Any later use may multiply the dimensions (num_elements of ToTensorShape): a
  // shape of more than 2^62 elements (a Placeholder's attr, a Fill of [2^62, 8]) stops
  // here, as a TensorShape of that size would (found by //core/graph:graph_def_fuzz).
  for (int i = 0; i < static_cast<int>(c.outputs().size()); ++i) {
    if (!c.outputs()[i].KnownElementsFit()) {
      return c.Error(absl::StrCat("output ", i, " would have shape ", c.outputs()[i].DebugString(),
                                  ", more than 2^62 elements"));
    }
  }
  return c.outputs();
}

}  // namespace overseer

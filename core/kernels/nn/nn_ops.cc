// Op definitions of the nn group: bias, activations and their gradients, softmax and
// the cross-entropy losses. Names, arguments and attrs follow TensorFlow's.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

constexpr char kNumeric[] = "T: {float, double, int32, int64}";
constexpr char kFloating[] = "T: {float, double}";

absl::Status CheckNhwc(ShapeContext* c) {
  std::string format;
  RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  if (format != "NHWC") {
    return c->Error(absl::StrCat("data_format '", format, "' is not supported; use NHWC"));
  }
  return absl::OkStatus();
}

absl::Status RankAtLeast(ShapeContext* c, int i, int rank) {
  const PartialShape& s = c->input(i);
  if (s.known_rank() && s.rank() < rank) {
    return c->Error(
        absl::StrCat("input ", i, " must have rank >= ", rank, ", got shape ", s.DebugString()));
  }
  return absl::OkStatus();
}

absl::Status BiasAddShape(ShapeContext* c) {
  RETURN_IF_ERROR(CheckNhwc(c));
  RETURN_IF_ERROR(RankAtLeast(c, 0, 2));
  RETURN_IF_ERROR(c->WithRank(1, 1));
  const PartialShape& value = c->input(0);
  if (!value.known_rank()) return absl::OkStatus();
  std::vector<int64_t> dims(value.rank(), -1);
  const PartialShape& bias = c->input(1);
  dims.back() = bias.known_rank() ? bias.dim(0) : -1;
  absl::StatusOr<PartialShape> out = value.Merge(PartialShape(std::move(dims)));
  if (!out.ok()) {
    return c->Error(
        absl::StrCat("Must provide as many biases as the last dimension of the "
                     "input tensor: ",
                     bias.DebugString(), " vs. ", value.DebugString()));
  }
  c->set_output(0, *out);
  return absl::OkStatus();
}

absl::Status BiasAddGradShape(ShapeContext* c) {
  RETURN_IF_ERROR(CheckNhwc(c));
  RETURN_IF_ERROR(RankAtLeast(c, 0, 2));
  const PartialShape& in = c->input(0);
  c->set_output(0, PartialShape({in.known_rank() ? in.dim(in.rank() - 1) : -1}));
  return absl::OkStatus();
}

absl::Status SoftmaxShape(ShapeContext* c) {
  RETURN_IF_ERROR(RankAtLeast(c, 0, 1));
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

// Outputs loss [batch] and backprop [batch, classes] from features [batch, classes].
absl::Status XentShape(ShapeContext* c, const PartialShape& features) {
  if (!features.known_rank()) {
    c->set_output(0, PartialShape({-1}));
    c->set_output(1, PartialShape({-1, -1}));
    return absl::OkStatus();
  }
  c->set_output(0, PartialShape({features.dim(0)}));
  c->set_output(1, features);
  return absl::OkStatus();
}

absl::Status SoftmaxXentShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(0, 2));
  RETURN_IF_ERROR(c->WithRank(1, 2));
  absl::StatusOr<PartialShape> features = c->input(0).Merge(c->input(1));
  if (!features.ok()) {
    return c->Error(absl::StrCat(
        "logits and labels must be the same size: logits_size=", c->input(0).DebugString(),
        " labels_size=", c->input(1).DebugString()));
  }
  return XentShape(c, *features);
}

absl::Status SparseSoftmaxXentShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(0, 2));
  RETURN_IF_ERROR(c->WithRank(1, 1));
  PartialShape features = c->input(0);
  const PartialShape& labels = c->input(1);
  if (features.known_rank() && labels.known_rank()) {
    absl::StatusOr<PartialShape> merged = features.Merge(PartialShape({labels.dim(0), -1}));
    if (!merged.ok()) {
      return c->Error(
          absl::StrCat("logits and labels must have the same first dimension, "
                       "got logits shape ",
                       features.DebugString(), " and labels shape ", labels.DebugString()));
    }
    features = *merged;
  } else if (labels.known_rank()) {
    features = PartialShape({labels.dim(0), -1});
  }
  return XentShape(c, features);
}

}  // namespace

REGISTER_OP("BiasAdd")
    .Input("value: T")
    .Input("bias: T")
    .Output("output: T")
    .Attr(kNumeric)
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(BiasAddShape);

REGISTER_OP("BiasAddGrad")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr(kNumeric)
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(BiasAddGradShape);

REGISTER_OP("Relu")
    .Input("features: T")
    .Output("activations: T")
    .Attr(kNumeric)
    .SetShapeFn(shape_fn::Unchanged);

REGISTER_OP("ReluGrad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr(kNumeric)
    .SetShapeFn(shape_fn::MergeAllInputs);

// min(max(features, 0), 6).
REGISTER_OP("Relu6")
    .Input("features: T")
    .Output("activations: T")
    .Attr(kNumeric)
    .SetShapeFn(shape_fn::Unchanged);

// gradients where 0 < features < 6, else 0.
REGISTER_OP("Relu6Grad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr(kNumeric)
    .SetShapeFn(shape_fn::MergeAllInputs);

// features where positive, else exp(features) - 1.
REGISTER_OP("Elu")
    .Input("features: T")
    .Output("activations: T")
    .Attr(kFloating)
    .SetShapeFn(shape_fn::Unchanged);

// gradients * (outputs + 1) where outputs < 0, else gradients.
REGISTER_OP("EluGrad")
    .Input("gradients: T")
    .Input("outputs: T")
    .Output("backprops: T")
    .Attr(kFloating)
    .SetShapeFn(shape_fn::MergeAllInputs);

// sum(t^2) / 2, a scalar.
REGISTER_OP("L2Loss")
    .Input("t: T")
    .Output("output: T")
    .Attr(kFloating)
    .SetShapeFn(shape_fn::Scalar);

// Whether targets[i] is among the k classes of highest predictions[i] (ties count for
// the target: a class is in when fewer than k others score strictly higher). False for
// a target out of range or a prediction that is not finite.
REGISTER_OP("InTopKV2")
    .Input("predictions: float")
    .Input("targets: T")
    .Input("k: T")
    .Output("precision: bool")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn([](ShapeContext* c) -> absl::Status {
      RETURN_IF_ERROR(c->WithRank(0, 2));
      RETURN_IF_ERROR(c->WithRank(1, 1));
      RETURN_IF_ERROR(c->WithRank(2, 0));
      const PartialShape& predictions = c->input(0);
      const PartialShape& targets = c->input(1);
      int64_t batch = predictions.known_rank() ? predictions.dim(0) : -1;
      if (targets.known_rank() && targets.dim(0) >= 0) {
        if (batch >= 0 && batch != targets.dim(0)) {
          return c->Error(absl::StrCat("predictions have ", batch, " rows but targets ",
                                       targets.dim(0), " entries"));
        }
        batch = targets.dim(0);
      }
      c->set_output(0, PartialShape({batch}));
      return absl::OkStatus();
    });

// The k largest entries along the last dimension, largest first (ties: the lower index
// first), and their indices.
REGISTER_OP("TopKV2")
    .Input("input: T")
    .Input("k: int32")
    .Output("values: T")
    .Output("indices: int32")
    .Attr("sorted: bool = true")
    .Attr("T: {float, double, int32, int64}")
    .SetShapeFn([](ShapeContext* c) -> absl::Status {
      const PartialShape& in = c->input(0);
      if (in.known_rank() && in.rank() < 1) {
        return c->Error("input must have at least 1 dimension, got a scalar");
      }
      RETURN_IF_ERROR(c->WithRank(1, 0));
      if (!in.known_rank()) {
        c->set_output(0, PartialShape::Unknown());
        c->set_output(1, PartialShape::Unknown());
        return absl::OkStatus();
      }
      std::vector<int64_t> dims;
      for (int i = 0; i < in.rank(); ++i) dims.push_back(in.dim(i));
      const Tensor* k = c->input_tensor(1);  // A constant k is known now.
      dims.back() = k != nullptr && k->dims() == 0 ? k->scalar<int32_t>() : -1;
      if (dims.back() >= 0 && in.dim(in.rank() - 1) >= 0 && dims.back() > in.dim(in.rank() - 1)) {
        return c->Error(absl::StrCat("input must have at least k = ", dims.back(), " columns, got ",
                                     in.dim(in.rank() - 1)));
      }
      c->set_output(0, PartialShape(dims));
      c->set_output(1, PartialShape(dims));
      return absl::OkStatus();
    });

// The gradient of TopKV2's values: `grad` (shaped like the values) scattered into zeros
// shaped like `input` at `indices`.
REGISTER_OP("_TopKGrad")
    .Input("input: T")
    .Input("indices: int32")
    .Input("grad: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .SetShapeFn(shape_fn::Unchanged);

REGISTER_OP("Sigmoid").Input("x: T").Output("y: T").Attr(kFloating).SetShapeFn(shape_fn::Unchanged);
REGISTER_OP("Tanh").Input("x: T").Output("y: T").Attr(kFloating).SetShapeFn(shape_fn::Unchanged);

#define OVERSEER_ACTIVATION_GRAD_OP(name)                                                   \
  REGISTER_OP(name).Input("y: T").Input("dy: T").Output("z: T").Attr(kFloating).SetShapeFn( \
      shape_fn::MergeAllInputs)
OVERSEER_ACTIVATION_GRAD_OP("SigmoidGrad");
OVERSEER_ACTIVATION_GRAD_OP("TanhGrad");
OVERSEER_ACTIVATION_GRAD_OP("SqrtGrad");
#undef OVERSEER_ACTIVATION_GRAD_OP

REGISTER_OP("Softmax")
    .Input("logits: T")
    .Output("softmax: T")
    .Attr(kFloating)
    .SetShapeFn(SoftmaxShape);

REGISTER_OP("LogSoftmax")
    .Input("logits: T")
    .Output("logsoftmax: T")
    .Attr(kFloating)
    .SetShapeFn(SoftmaxShape);

REGISTER_OP("SoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: T")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr(kFloating)
    .SetShapeFn(SoftmaxXentShape);

REGISTER_OP("SparseSoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: Tlabels")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr(kFloating)
    .Attr("Tlabels: {int32, int64} = DT_INT64")
    .SetShapeFn(SparseSoftmaxXentShape);

}  // namespace overseer

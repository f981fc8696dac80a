// Op definitions of the 2-D convolution and pooling ops and their gradients: Conv2D,
// Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, MaxPoolGrad, AvgPool and
// AvgPoolGrad. NHWC only; names, arguments and attrs follow TensorFlow's.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/kernels/nn/conv_geometry.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

constexpr char kFloating[] = "T: {float, double}";

// The attrs every op here has.
absl::StatusOr<WindowAttrs> ShapeAttrs(ShapeContext* c, bool has_ksize) {
  WindowAttrs attrs;
  RETURN_IF_ERROR(c->GetAttr("strides", &attrs.strides));
  RETURN_IF_ERROR(c->GetAttr("padding", &attrs.padding));
  RETURN_IF_ERROR(c->GetAttr("data_format", &attrs.data_format));
  if (has_ksize) RETURN_IF_ERROR(c->GetAttr("ksize", &attrs.ksize));
  std::vector<int64_t> dilations;
  if (c->GetAttr("dilations", &dilations).ok()) attrs.dilations = dilations;
  absl::Status valid = attrs.Validate(has_ksize);
  if (!valid.ok()) return c->Error(std::string(valid.message()));
  return attrs;
}

// The output size of a spatial dimension, or -1 when the input size is unknown.
absl::StatusOr<int64_t> OutSize(ShapeContext* c, const WindowAttrs& attrs, int64_t in, int64_t k,
                                int64_t stride) {
  if (in < 0 || k < 0) return int64_t{-1};
  absl::StatusOr<Window> w = MakeWindow(in, k, stride, attrs.same());
  if (!w.ok()) return c->Error(std::string(w.status().message()));
  return w->out;
}

absl::Status Conv2DShape(ShapeContext* c) {
  ASSIGN_OR_RETURN(WindowAttrs attrs, ShapeAttrs(c, /*has_ksize=*/false));
  RETURN_IF_ERROR(c->WithRank(0, 4));
  RETURN_IF_ERROR(c->WithRank(1, 4));
  const PartialShape& in = c->input(0);
  const PartialShape& filter = c->input(1);
  if (!in.known_rank() || !filter.known_rank()) {
    c->set_output(0, PartialShape({-1, -1, -1, -1}));
    return absl::OkStatus();
  }
  if (in.dim(3) >= 0 && filter.dim(2) >= 0 && in.dim(3) != filter.dim(2)) {
    return c->Error(absl::StrCat("input depth ", in.dim(3), " does not match the filter's ",
                                 filter.dim(2), " input channels (input ", in.DebugString(),
                                 ", filter ", filter.DebugString(), ")"));
  }
  ASSIGN_OR_RETURN(int64_t h, OutSize(c, attrs, in.dim(1), filter.dim(0), attrs.strides[1]));
  ASSIGN_OR_RETURN(int64_t w, OutSize(c, attrs, in.dim(2), filter.dim(1), attrs.strides[2]));
  c->set_output(0, PartialShape({in.dim(0), h, w, filter.dim(3)}));
  return absl::OkStatus();
}

absl::Status PoolShape(ShapeContext* c) {
  ASSIGN_OR_RETURN(WindowAttrs attrs, ShapeAttrs(c, /*has_ksize=*/true));
  RETURN_IF_ERROR(c->WithRank(0, 4));
  const PartialShape& in = c->input(0);
  if (!in.known_rank()) {
    c->set_output(0, PartialShape({-1, -1, -1, -1}));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(int64_t h, OutSize(c, attrs, in.dim(1), attrs.ksize[1], attrs.strides[1]));
  ASSIGN_OR_RETURN(int64_t w, OutSize(c, attrs, in.dim(2), attrs.ksize[2], attrs.strides[2]));
  c->set_output(0, PartialShape({in.dim(0), h, w, in.dim(3)}));
  return absl::OkStatus();
}

// Output shaped as the int32 vector input `i` (a backprop's sizes input), of rank 4.
absl::Status SizesShape(ShapeContext* c, int i, bool has_ksize) {
  RETURN_IF_ERROR(ShapeAttrs(c, has_ksize).status());
  RETURN_IF_ERROR(c->WithRank(i, 1));
  PartialShape out = ShapeFromShapeInput(*c, i);
  if (!out.known_rank()) out = PartialShape({-1, -1, -1, -1});
  if (out.rank() != 4) {
    return c->Error(absl::StrCat("sizes must have 4 elements, got ", out.DebugString()));
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Conv2D")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .Attr(kFloating)
    .Attr("strides: list(int)")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn(Conv2DShape);

REGISTER_OP("Conv2DBackpropInput")
    .Input("input_sizes: int32")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr(kFloating)
    .Attr("strides: list(int)")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn([](ShapeContext* c) { return SizesShape(c, 0, false); });

REGISTER_OP("Conv2DBackpropFilter")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr(kFloating)
    .Attr("strides: list(int)")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn([](ShapeContext* c) { return SizesShape(c, 1, false); });

REGISTER_OP("MaxPool")
    .Input("input: T")
    .Output("output: T")
    .Attr(kFloating)
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(PoolShape);

REGISTER_OP("MaxPoolGrad")
    .Input("orig_input: T")
    .Input("orig_output: T")
    .Input("grad: T")
    .Output("output: T")
    .Attr(kFloating)
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn([](ShapeContext* c) -> absl::Status {
      RETURN_IF_ERROR(ShapeAttrs(c, true).status());
      RETURN_IF_ERROR(c->WithRank(0, 4));
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    });

REGISTER_OP("AvgPool")
    .Input("value: T")
    .Output("output: T")
    .Attr(kFloating)
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(PoolShape);

REGISTER_OP("AvgPoolGrad")
    .Input("orig_input_shape: int32")
    .Input("grad: T")
    .Output("output: T")
    .Attr(kFloating)
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn([](ShapeContext* c) { return SizesShape(c, 0, true); });

}  // namespace overseer

// Op definitions of GatherV2, UnsortedSegmentSum and Unique (TensorFlow's names,
// arguments and semantics), the pieces of embedding lookups and their sparse gradients.

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// The value of a scalar int32 or int64 input known when the graph is built.
bool KnownScalar(const ShapeContext& c, int i, int64_t* value) {
  const Tensor* t = c.input_tensor(i);
  if (t == nullptr || t->dims() != 0) return false;
  if (t->dtype() == DT_INT32) {
    *value = t->scalar<int32_t>();
  } else if (t->dtype() == DT_INT64) {
    *value = t->scalar<int64_t>();
  } else {
    return false;
  }
  return true;
}

// params.shape[:axis] + indices.shape + params.shape[axis + 1:].
absl::Status GatherShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(2, 0));
  const PartialShape& params = c->input(0);
  const PartialShape& indices = c->input(1);
  int64_t axis = 0;
  if (!params.known_rank() || !indices.known_rank() || !KnownScalar(*c, 2, &axis)) {
    return absl::OkStatus();  // Unknown.
  }
  if (params.rank() == 0) return c->Error("params must be at least 1-dimensional");
  if (axis < -params.rank() || axis >= params.rank()) {
    return c->Error(
        absl::StrCat("axis ", axis, " is out of range for params of rank ", params.rank()));
  }
  if (axis < 0) axis += params.rank();
  std::vector<int64_t> dims(params.dims().begin(), params.dims().begin() + axis);
  dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
  dims.insert(dims.end(), params.dims().begin() + axis + 1, params.dims().end());
  c->set_output(0, PartialShape(std::move(dims)));
  return absl::OkStatus();
}

// [num_segments] + data.shape[segment_ids.rank:].
absl::Status UnsortedSegmentShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(2, 0));
  const PartialShape& data = c->input(0);
  const PartialShape& ids = c->input(1);
  if (!data.known_rank() || !ids.known_rank()) return absl::OkStatus();
  if (ids.rank() > data.rank()) {
    return c->Error(absl::StrCat("segment_ids of rank ", ids.rank(), " cannot index data of rank ",
                                 data.rank()));
  }
  for (int d = 0; d < ids.rank(); ++d) {
    if (ids.dim(d) >= 0 && data.dim(d) >= 0 && ids.dim(d) != data.dim(d)) {
      return c->Error(absl::StrCat("segment_ids of shape ", ids.DebugString(),
                                   " is not a prefix of data's shape ", data.DebugString()));
    }
  }
  int64_t num_segments = -1;
  KnownScalar(*c, 2, &num_segments);
  std::vector<int64_t> dims = {num_segments < 0 ? -1 : num_segments};
  dims.insert(dims.end(), data.dims().begin() + ids.rank(), data.dims().end());
  c->set_output(0, PartialShape(std::move(dims)));
  return absl::OkStatus();
}

}  // namespace

// Slices of params along axis at the given indices.
REGISTER_OP("GatherV2")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Input("axis: Taxis")
    .Output("output: Tparams")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .Attr("Taxis: {int32, int64}")
    .SetShapeFn(GatherShape);

// output[segment_ids[i...], ...] = sum of data[i..., ...]; negative ids are dropped.
REGISTER_OP("UnsortedSegmentSum")
    .Input("data: T")
    .Input("segment_ids: Tindices")
    .Input("num_segments: Tnumsegments")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .Attr("Tnumsegments: {int32, int64} = DT_INT32")
    .SetShapeFn(UnsortedSegmentShape);

// y: the distinct elements of the vector x in order of first appearance; idx: for each
// element of x, its position in y (x[i] == y[idx[i]]).
REGISTER_OP("Unique")
    .Input("x: T")
    .Output("y: T")
    .Output("idx: out_idx")
    .Attr("T: {float, double, int32, int64}")
    .Attr("out_idx: {int32, int64} = DT_INT32")
    .SetShapeFn([](ShapeContext* c) {
      RETURN_IF_ERROR(c->WithRank(0, 1));
      c->set_output(0, PartialShape({-1}));
      c->set_output(1, c->input(0));
      return absl::OkStatus();
    });

}  // namespace overseer

// Op definitions of DynamicPartition, DynamicStitch and Range (TensorFlow's names,
// arguments and semantics): the pieces of a lookup in a table partitioned across tasks,
// and of their gradients.

#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// [-1] + data.shape[partitions.rank:] for every output.
absl::Status DynamicPartitionShape(ShapeContext* c) {
  int64_t num = 0;
  RETURN_IF_ERROR(c->GetAttr("num_partitions", &num));
  const PartialShape& data = c->input(0);
  const PartialShape& partitions = c->input(1);
  PartialShape out = PartialShape::Unknown();
  if (data.known_rank() && partitions.known_rank()) {
    if (partitions.rank() > data.rank()) {
      return c->Error(absl::StrCat("partitions of shape ", partitions.DebugString(),
                                   " cannot index data of shape ", data.DebugString()));
    }
    std::vector<int64_t> dims = {-1};
    dims.insert(dims.end(), data.dims().begin() + partitions.rank(), data.dims().end());
    out = PartialShape(std::move(dims));
  }
  for (int64_t i = 0; i < num; ++i) c->set_output(static_cast<int>(i), out);
  return absl::OkStatus();
}

// [-1] + data[0].shape[indices[0].rank:].
absl::Status DynamicStitchShape(ShapeContext* c) {
  int64_t n = 0;
  RETURN_IF_ERROR(c->GetAttr("N", &n));
  const PartialShape& indices = c->input(0);
  const PartialShape& data = c->input(static_cast<int>(n));
  if (!indices.known_rank() || !data.known_rank() || indices.rank() > data.rank()) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  std::vector<int64_t> dims = {-1};
  dims.insert(dims.end(), data.dims().begin() + indices.rank(), data.dims().end());
  c->set_output(0, PartialShape(std::move(dims)));
  return absl::OkStatus();
}

// [size] when start, limit and delta are known, else [-1].
absl::Status RangeShape(ShapeContext* c) {
  for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(c->WithRank(i, 0));
  double v[3];
  for (int i = 0; i < 3; ++i) {
    const Tensor* t = c->input_tensor(i);
    if (t == nullptr) {
      c->set_output(0, PartialShape({-1}));
      return absl::OkStatus();
    }
    switch (t->dtype()) {
      case DT_INT32:
        v[i] = t->scalar<int32_t>();
        break;
      case DT_INT64:
        v[i] = static_cast<double>(t->scalar<int64_t>());
        break;
      case DT_FLOAT:
        v[i] = t->scalar<float>();
        break;
      case DT_DOUBLE:
        v[i] = t->scalar<double>();
        break;
      default:
        return c->Error("Range takes numbers");
    }
  }
  if (v[2] == 0) return c->Error("Requires delta != 0");
  c->set_output(
      0,
      PartialShape({std::max<int64_t>(0, static_cast<int64_t>(std::ceil((v[1] - v[0]) / v[2])))}));
  return absl::OkStatus();
}

}  // namespace

// Output i holds the slices data[j...] whose partitions[j...] is i, in order.
REGISTER_OP("DynamicPartition")
    .Input("data: T")
    .Input("partitions: int32")
    .Output("outputs: num_partitions * T")
    .Attr("num_partitions: int >= 1")
    .Attr("T: type")
    .SetShapeFn(DynamicPartitionShape);

// merged[indices[m][i...], ...] = data[m][i..., ...]; a later m wins a shared index.
REGISTER_OP("DynamicStitch")
    .Input("indices: N * int32")
    .Input("data: N * T")
    .Output("merged: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .SetShapeFn(DynamicStitchShape);

// [start, start + delta, ...) up to limit.
REGISTER_OP("Range")
    .Input("start: Tidx")
    .Input("limit: Tidx")
    .Input("delta: Tidx")
    .Output("output: Tidx")
    .Attr("Tidx: {int32, int64, float, double} = DT_INT32")
    .SetShapeFn(RangeShape);

}  // namespace overseer

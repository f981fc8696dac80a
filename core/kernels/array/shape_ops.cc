// Op definitions of the ops that rearrange elements: reshapes, transposes, slices,
// broadcasts, packing and concatenation.

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// The product of the known dims; -1 if it passes 2^62 (no tensor has that many).
int64_t KnownProduct(const std::vector<int64_t>& dims, bool* all_known) {
  constexpr int64_t kMax = int64_t{1} << 62;
  int64_t product = 1;
  *all_known = true;
  for (int64_t d : dims) {
    if (d < 0) {
      *all_known = false;
    } else if (product >= 0) {
      product = d > 0 && product > kMax / d ? -1 : product * d;
    }
  }
  return product;
}

absl::Status ReshapeShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(1, 1));
  const Tensor* shape_t = c->input_tensor(1);
  if (shape_t == nullptr) {
    c->set_output(0, ShapeFromShapeInput(*c, 1));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, IntTensorToVector(*shape_t, "shape"));
  int unknown = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && unknown < 0) {
      unknown = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return c->Error(absl::StrCat("requested shape [", absl::StrJoin(dims, ","),
                                   "] has more than one -1 or a negative size"));
    }
  }
  const PartialShape& in = c->input(0);
  if (in.IsFullyDefined()) {
    const int64_t n = in.ToTensorShape().num_elements();
    bool all_known;
    const int64_t product = KnownProduct(dims, &all_known);
    if (unknown >= 0 && product > 0 && n % product == 0) {
      dims[unknown] = n / product;
    } else if (unknown >= 0 || product != n) {
      return c->Error(absl::StrCat("cannot reshape a tensor of shape ", in.DebugString(), " (", n,
                                   " elements) into shape [", absl::StrJoin(dims, ","), "]"));
    }
  }
  c->set_output(0, PartialShape(dims));
  return absl::OkStatus();
}

absl::Status ExpandDimsShape(ShapeContext* c) {
  const PartialShape& in = c->input(0);
  const Tensor* dim_t = c->input_tensor(1);
  if (!in.known_rank()) return shape_fn::Unknown(c);
  std::vector<int64_t> dims = in.dims();
  if (dim_t == nullptr) {
    c->set_output(0, PartialShape(std::vector<int64_t>(dims.size() + 1, -1)));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(int64_t dim, IntTensorToScalar(*dim_t, "dim"));
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(dim, in.rank() + 1, "ExpandDims dim"));
  dims.insert(dims.begin() + axis, 1);
  c->set_output(0, PartialShape(dims));
  return absl::OkStatus();
}

absl::Status SqueezeShape(ShapeContext* c) {
  const PartialShape& in = c->input(0);
  if (!in.known_rank()) return shape_fn::Unknown(c);
  std::vector<int64_t> squeeze;
  RETURN_IF_ERROR(c->GetAttr("squeeze_dims", &squeeze));
  std::vector<bool> remove(in.rank(), false);
  for (int64_t d : squeeze) {
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(d, in.rank(), "squeeze dim"));
    if (in.dim(axis) > 1 || in.dim(axis) == 0) {
      return c->Error(absl::StrCat("cannot squeeze dim ", d, " of size ", in.dim(axis),
                                   " in shape ", in.DebugString()));
    }
    remove[axis] = true;
  }
  std::vector<int64_t> out;
  for (int i = 0; i < in.rank(); ++i) {
    if (squeeze.empty()) {
      if (in.dim(i) < 0) return shape_fn::Unknown(c);
      if (in.dim(i) == 1) continue;
    } else if (remove[i]) {
      continue;
    }
    out.push_back(in.dim(i));
  }
  c->set_output(0, PartialShape(out));
  return absl::OkStatus();
}

absl::Status BroadcastToShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(1, 1));
  PartialShape target = ShapeFromShapeInput(*c, 1);
  if (target.known_rank()) {
    auto b = BroadcastShapes(c->input(0), target);
    if (!b.ok()) return c->Error(b.status().message());
  }
  c->set_output(0, target);
  return absl::OkStatus();
}

absl::Status TransposeShape(ShapeContext* c) {
  const PartialShape& in = c->input(0);
  const Tensor* perm_t = c->input_tensor(1);
  if (!in.known_rank()) {
    const PartialShape& p = c->input(1);
    if (p.known_rank() && p.rank() == 1 && p.dim(0) >= 0) {
      c->set_output(0, PartialShape(std::vector<int64_t>(p.dim(0), -1)));
      return absl::OkStatus();
    }
    return shape_fn::Unknown(c);
  }
  if (perm_t == nullptr) {
    c->set_output(0, PartialShape(std::vector<int64_t>(in.rank(), -1)));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> perm, IntTensorToVector(*perm_t, "perm"));
  if (static_cast<int>(perm.size()) != in.rank()) {
    return c->Error(absl::StrCat("perm [", absl::StrJoin(perm, ","),
                                 "] does not match the rank of shape ", in.DebugString()));
  }
  std::vector<int64_t> out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= in.rank()) {
      return c->Error(absl::StrCat("perm [", absl::StrJoin(perm, ","), "] is out of range"));
    }
    out[i] = in.dim(static_cast<int>(perm[i]));
  }
  c->set_output(0, PartialShape(out));
  return absl::OkStatus();
}

// Merges inputs [first, last) into one shape; INVALID_ARGUMENT if incompatible.
absl::StatusOr<PartialShape> MergeInputs(ShapeContext* c, int first, int last) {
  PartialShape merged;
  for (int i = first; i < last; ++i) {
    auto m = merged.Merge(c->input(i));
    if (!m.ok()) {
      return c->Error(absl::StrCat("input ", i, " of shape ", c->input(i).DebugString(),
                                   " is incompatible with ", merged.DebugString()));
    }
    merged = *m;
  }
  return merged;
}

absl::Status PackShape(ShapeContext* c) {
  ASSIGN_OR_RETURN(PartialShape merged, MergeInputs(c, 0, c->num_inputs()));
  if (!merged.known_rank()) return shape_fn::Unknown(c);
  int64_t axis;
  RETURN_IF_ERROR(c->GetAttr("axis", &axis));
  ASSIGN_OR_RETURN(int a, CanonicalAxis(axis, merged.rank() + 1, "Pack axis"));
  std::vector<int64_t> dims = merged.dims();
  dims.insert(dims.begin() + a, c->num_inputs());
  c->set_output(0, PartialShape(dims));
  return absl::OkStatus();
}

absl::Status UnpackShape(ShapeContext* c) {
  const PartialShape& in = c->input(0);
  PartialShape out;
  if (in.known_rank()) {
    int64_t axis, num;
    RETURN_IF_ERROR(c->GetAttr("axis", &axis));
    RETURN_IF_ERROR(c->GetAttr("num", &num));
    ASSIGN_OR_RETURN(int a, CanonicalAxis(axis, in.rank(), "Unpack axis"));
    if (in.dim(a) >= 0 && in.dim(a) != num) {
      return c->Error(absl::StrCat("cannot unpack ", num, " tensors along dimension ", axis,
                                   " of shape ", in.DebugString()));
    }
    std::vector<int64_t> dims = in.dims();
    dims.erase(dims.begin() + a);
    out = PartialShape(dims);
  }
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, out);
  return absl::OkStatus();
}

absl::Status ConcatV2Shape(ShapeContext* c) {
  const int n = c->num_inputs() - 1;
  RETURN_IF_ERROR(c->WithRank(n, 0));
  int rank = -1;
  for (int i = 0; i < n; ++i) {
    if (!c->input(i).known_rank()) continue;
    if (rank >= 0 && c->input(i).rank() != rank) {
      return c->Error(absl::StrCat("input ", i, " of shape ", c->input(i).DebugString(),
                                   " does not have rank ", rank));
    }
    rank = c->input(i).rank();
  }
  if (rank < 0) return shape_fn::Unknown(c);
  const Tensor* axis_t = c->input_tensor(n);
  if (axis_t == nullptr) {
    c->set_output(0, PartialShape(std::vector<int64_t>(rank, -1)));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(int64_t axis_value, IntTensorToScalar(*axis_t, "axis"));
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_value, rank, "ConcatV2 axis"));
  std::vector<int64_t> out(rank, -1);
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    const PartialShape& s = c->input(i);
    if (!s.known_rank() || s.dim(axis) < 0 || total < 0) {
      total = -1;
    } else {
      total += s.dim(axis);
    }
    if (!s.known_rank()) continue;
    for (int d = 0; d < rank; ++d) {
      if (d == axis || s.dim(d) < 0) continue;
      if (out[d] >= 0 && out[d] != s.dim(d)) {
        return c->Error(absl::StrCat("input ", i, " of shape ", s.DebugString(),
                                     " does not match the other inputs in dimension ", d));
      }
      out[d] = s.dim(d);
    }
  }
  out[axis] = total;
  c->set_output(0, PartialShape(out));
  return absl::OkStatus();
}

absl::Status ConcatOffsetShape(ShapeContext* c) {
  for (int i = 1; i < c->num_inputs(); ++i) c->set_output(i - 1, c->input(i));
  return absl::OkStatus();
}

absl::Status SliceShape(ShapeContext* c) {
  const PartialShape& in = c->input(0);
  const Tensor* begin_t = c->input_tensor(1);
  const Tensor* size_tensor = c->input_tensor(2);
  if (size_tensor != nullptr) {
    ASSIGN_OR_RETURN(std::vector<int64_t> size, IntTensorToVector(*size_tensor, "size"));
    std::vector<int64_t> begin;
    if (begin_t != nullptr) {
      ASSIGN_OR_RETURN(begin, IntTensorToVector(*begin_t, "begin"));
    }
    if (in.known_rank() && in.rank() != static_cast<int>(size.size())) {
      return c->Error(
          absl::StrCat("size has ", size.size(), " entries for input of shape ", in.DebugString()));
    }
    for (size_t d = 0; d < size.size(); ++d) {
      if (size[d] != -1) continue;
      const bool known = in.known_rank() && in.dim(d) >= 0 && begin.size() == size.size();
      size[d] = known ? in.dim(d) - begin[d] : -1;
    }
    c->set_output(0, PartialShape(size));
    return absl::OkStatus();
  }
  if (in.known_rank()) {
    c->set_output(0, PartialShape(std::vector<int64_t>(in.rank(), -1)));
    return absl::OkStatus();
  }
  return shape_fn::Unknown(c);
}

}  // namespace

REGISTER_OP("Reshape")
    .Input("tensor: T")
    .Input("shape: Tshape")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tshape: {int32, int64} = DT_INT32")
    .SetShapeFn(ReshapeShape);

REGISTER_OP("ExpandDims")
    .Input("input: T")
    .Input("dim: Tdim")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tdim: {int32, int64} = DT_INT32")
    .SetShapeFn(ExpandDimsShape);

REGISTER_OP("Squeeze")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("squeeze_dims: list(int) = []")
    .SetShapeFn(SqueezeShape);

REGISTER_OP("BroadcastTo")
    .Input("input: T")
    .Input("shape: Tidx")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn(BroadcastToShape);

REGISTER_OP("Transpose")
    .Input("x: T")
    .Input("perm: Tperm")
    .Output("y: T")
    .Attr("T: type")
    .Attr("Tperm: {int32, int64} = DT_INT32")
    .SetShapeFn(TransposeShape);

REGISTER_OP("Pack")
    .Input("values: N * T")
    .Output("output: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("axis: int = 0")
    .SetShapeFn(PackShape);

REGISTER_OP("Unpack")
    .Input("value: T")
    .Output("output: num * T")
    .Attr("num: int >= 0")
    .Attr("T: type")
    .Attr("axis: int = 0")
    .SetShapeFn(UnpackShape);

REGISTER_OP("ConcatV2")
    .Input("values: N * T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("N: int >= 2")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn(ConcatV2Shape);

REGISTER_OP("ConcatOffset")
    .Input("concat_dim: int32")
    .Input("shape: N * int32")
    .Output("offset: N * int32")
    .Attr("N: int >= 2")
    .SetShapeFn(ConcatOffsetShape);

REGISTER_OP("Slice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("size: Index")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Index: {int32, int64}")
    .SetShapeFn(SliceShape);

}  // namespace overseer

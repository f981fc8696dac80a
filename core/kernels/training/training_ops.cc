// Op definitions of the optimizer updates: ApplyGradientDescent, ApplyMomentum,
// ApplyAdam, ApplyAdagrad, ApplyRMSProp, ApplyAdadelta and ApplyFtrl, and the sparse
// forms SparseApply* (TensorFlow's inputs and attrs): the gradient holds one slice per
// index and only those rows of the variable and its slots change. Each updates its
// Ref(T) inputs in place and outputs the variable.

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

// Output = the merge of the tensor-shaped inputs `same`; inputs `scalars` have rank 0.
absl::Status ApplyShape(ShapeContext* c, const std::vector<int>& same,
                        const std::vector<int>& scalars) {
  PartialShape merged;
  for (int i : same) {
    auto m = merged.Merge(c->input(i));
    if (!m.ok()) {
      return c->Error(absl::StrCat("input ", i, " of shape ", c->input(i).DebugString(),
                                   " does not match the variable's shape ", merged.DebugString()));
    }
    merged = *m;
  }
  for (int i : scalars) RETURN_IF_ERROR(c->WithRank(i, 0));
  c->set_output(0, merged);
  return absl::OkStatus();
}

// The sparse form: the variables `same` share a shape of rank >= 1, `grad` is
// [len(indices)] + that shape's rest, `indices` a vector, `scalars` scalars.
absl::Status SparseApplyShape(ShapeContext* c, const std::vector<int>& same,
                              const std::vector<int>& scalars, int grad, int indices) {
  RETURN_IF_ERROR(ApplyShape(c, same, scalars));
  RETURN_IF_ERROR(c->WithRank(indices, 1));
  const PartialShape& var = c->output(0);
  const PartialShape& g = c->input(grad);
  if (!var.known_rank() || !g.known_rank()) return absl::OkStatus();
  if (var.rank() == 0) return c->Error("the variable must have rank 1 or more, not be a scalar");
  std::vector<int64_t> want = var.dims();
  want[0] = c->input(indices).known_rank() ? c->input(indices).dim(0) : -1;
  if (!g.IsCompatibleWith(PartialShape(want))) {
    return c->Error(absl::StrCat("the gradient of shape ", g.DebugString(),
                                 " does not match the indices and the variable of shape ",
                                 var.DebugString(), " (want ", PartialShape(want).DebugString(),
                                 ")"));
  }
  return absl::OkStatus();
}

}  // namespace

// var -= alpha * delta.
REGISTER_OP("ApplyGradientDescent")
    .Input("var: Ref(T)")
    .Input("alpha: T")
    .Input("delta: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return ApplyShape(c, {0, 2}, {1});
    });

// accum = accum * momentum + grad;
// var -= lr * accum, or with Nesterov var -= lr * grad + lr * momentum * accum.
REGISTER_OP("ApplyMomentum")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("momentum: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return ApplyShape(c, {0, 1, 3}, {2, 4});
    });

// lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power);
// m += (grad - m) * (1 - beta1); v += (grad^2 - v) * (1 - beta2);
// var -= lr_t * m / (sqrt(v) + epsilon), or with Nesterov
// var -= lr_t * (grad * (1 - beta1) + beta1 * m) / (sqrt(v) + epsilon).
REGISTER_OP("ApplyAdam")
    .Input("var: Ref(T)")
    .Input("m: Ref(T)")
    .Input("v: Ref(T)")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return ApplyShape(c, {0, 1, 2, 9}, {3, 4, 5, 6, 7, 8});
    });

// accum += grad^2 (with update_slots); var -= lr * grad / sqrt(accum).
REGISTER_OP("ApplyAdagrad")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn([](ShapeContext* c) {
      return ApplyShape(c, {0, 1, 3}, {2});
    });

// ms = rho * ms + (1 - rho) * grad^2;
// mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom.
REGISTER_OP("ApplyRMSProp")
    .Input("var: Ref(T)")
    .Input("ms: Ref(T)")
    .Input("mom: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return ApplyShape(c, {0, 1, 2, 7}, {3, 4, 5, 6});
    });

// accum = rho * accum + (1 - rho) * grad^2;
// update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad;
// accum_update = rho * accum_update + (1 - rho) * update^2; var -= lr * update.
REGISTER_OP("ApplyAdadelta")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("accum_update: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return ApplyShape(c, {0, 1, 2, 6}, {3, 4, 5});
    });

// For each index i: the update of ApplyMomentum on row indices[i] with grad[i].
REGISTER_OP("SparseApplyMomentum")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("momentum: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return SparseApplyShape(c, {0, 1}, {2, 5}, 3, 4);
    });

// For each index i: the update of ApplyAdagrad on row indices[i] with grad[i].
REGISTER_OP("SparseApplyAdagrad")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn([](ShapeContext* c) {
      return SparseApplyShape(c, {0, 1}, {2}, 3, 4);
    });

// For each index i: the update of ApplyRMSProp on row indices[i] with grad[i].
REGISTER_OP("SparseApplyRMSProp")
    .Input("var: Ref(T)")
    .Input("ms: Ref(T)")
    .Input("mom: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return SparseApplyShape(c, {0, 1, 2}, {3, 4, 5, 6}, 7, 8);
    });

// For each index i: the update of ApplyAdadelta on row indices[i] with grad[i].
REGISTER_OP("SparseApplyAdadelta")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("accum_update: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return SparseApplyShape(c, {0, 1, 2}, {3, 4, 5}, 6, 7);
    });

// FTRL-Proximal: new_accum = accum + grad^2;
// linear += grad - (new_accum^-lr_power - accum^-lr_power) / lr * var;
// var = |linear| > l1 ? (sign(linear) * l1 - linear) / (new_accum^-lr_power / lr + 2 * l2)
//                     : 0;
// accum = new_accum. INVALID_ARGUMENT unless lr > 0, l1 >= 0, l2 >= 0, lr_power <= 0.
REGISTER_OP("ApplyFtrl")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("linear: Ref(T)")
    .Input("grad: T")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("lr_power: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return ApplyShape(c, {0, 1, 2, 3}, {4, 5, 6, 7});
    });

// For each index i: the update of ApplyFtrl on row indices[i] with grad[i].
REGISTER_OP("SparseApplyFtrl")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("linear: Ref(T)")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("lr_power: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .SetShapeFn([](ShapeContext* c) {
      return SparseApplyShape(c, {0, 1, 2}, {5, 6, 7, 8}, 3, 4);
    });

}  // namespace overseer

// Op definitions of the optimizer updates: ApplyGradientDescent, ApplyMomentum,
// ApplyAdam, ApplyAdagrad, ApplyRMSProp and ApplyAdadelta. Each updates its Ref(T) inputs in place
// and outputs the variable.

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

}  // namespace overseer

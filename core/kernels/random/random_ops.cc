// Op definitions of the random initialisers. Seeded (seed or seed2 non-zero) ops are
// reproducible: a fresh kernel with the same seeds yields the same sequence.

#include "core/kernels/array/kernel_util.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

absl::Status RandomShape(ShapeContext* c) {
  RETURN_IF_ERROR(c->WithRank(0, 1));
  c->set_output(0, ShapeFromShapeInput(*c, 0));
  return absl::OkStatus();
}

}  // namespace

#define OVERSEER_REGISTER_RANDOM_OP(name) \
  REGISTER_OP(name)                       \
      .Input("shape: T")                  \
      .Output("output: dtype")            \
      .Attr("seed: int = 0")              \
      .Attr("seed2: int = 0")             \
      .Attr("dtype: {float, double}")     \
      .Attr("T: {int32, int64}")          \
      .SetIsStateful()                    \
      .SetShapeFn(RandomShape)

// Uniform in [0, 1).
OVERSEER_REGISTER_RANDOM_OP("RandomUniform");
// Normal with mean 0 and standard deviation 1.
OVERSEER_REGISTER_RANDOM_OP("RandomNormal");
// Normal with mean 0 and standard deviation 1, resampled beyond 2 standard deviations.
OVERSEER_REGISTER_RANDOM_OP("TruncatedNormal");

#undef OVERSEER_REGISTER_RANDOM_OP

}  // namespace overseer

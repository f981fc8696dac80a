#ifndef OVERSEER_CLIENT_GRAPH_OPS_RANDOM_H_
#define OVERSEER_CLIENT_GRAPH_OPS_RANDOM_H_

// Random ops. With seed == seed2 == 0 each run draws new values; with a seed the
// sequence is reproducible (the same graph gives the same values in a new session).
// Conventions as in ops_array.h.

#include <cstdint>

#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"

namespace overseer {
namespace ops {

struct RandomSeeds {
  int64_t seed = 0;
  int64_t seed2 = 0;
};

// Uniform in [0, 1) of shape `shape` (an int32/int64 vector).
Output RandomUniform(const Scope& scope, Input shape, DataType dtype,
                     const RandomSeeds& seeds = {});
// Standard normal: TensorFlow's RandomStandardNormal, registered here as op
// "RandomNormal".
Output RandomStandardNormal(const Scope& scope, Input shape, DataType dtype,
                            const RandomSeeds& seeds = {});
// Normal with `mean` and `stddev` (RandomStandardNormal * stddev + mean).
Output RandomNormal(const Scope& scope, Input shape, DataType dtype, double mean, double stddev,
                    const RandomSeeds& seeds = {});
// Standard normal with values beyond two standard deviations redrawn.
Output TruncatedNormal(const Scope& scope, Input shape, DataType dtype,
                       const RandomSeeds& seeds = {});

}  // namespace ops
}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPS_RANDOM_H_

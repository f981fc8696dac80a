#ifndef OVERSEER_CLIENT_GRAPH_VARIABLES_INIT_H_
#define OVERSEER_CLIENT_GRAPH_VARIABLES_INIT_H_

// Initial values for MakeVariable (TensorFlow's initializers). Random ones are seeded:
// the same seed gives the same values in every session.

#include <cstdint>

#include "client/graph/variables.h"
#include "core/tensor_shape.h"

namespace overseer {

// Zeros of `shape`.
InitializerFn ZerosInitializer(const TensorShape& shape, DataType dtype = DT_FLOAT);
// `value` everywhere in `shape`.
InitializerFn ConstantInitializer(const TensorShape& shape, double value,
                                  DataType dtype = DT_FLOAT);
// Uniform in [-limit, limit), limit = sqrt(6 / (fan_in + fan_out)) where fan_in and
// fan_out are the last two dimensions' sizes (1 for a missing one; for rank > 2 the
// leading dimensions multiply both, as TensorFlow's receptive field does).
InitializerFn GlorotUniformInitializer(const TensorShape& shape, int64_t seed,
                                       DataType dtype = DT_FLOAT);
// Normal(mean, stddev) with values beyond two standard deviations redrawn.
InitializerFn TruncatedNormalInitializer(const TensorShape& shape, double stddev, int64_t seed,
                                         double mean = 0.0, DataType dtype = DT_FLOAT);
// Normal(mean, stddev).
InitializerFn RandomNormalInitializer(const TensorShape& shape, double stddev, int64_t seed,
                                      double mean = 0.0, DataType dtype = DT_FLOAT);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_VARIABLES_INIT_H_

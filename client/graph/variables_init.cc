#include "client/graph/variables_init.h"

#include <cmath>
#include <vector>

#include "client/graph/ops_input.h"
#include "client/graph/ops_math.h"
#include "client/graph/ops_random.h"

namespace overseer {

namespace {

Tensor ShapeTensor(const TensorShape& shape) {
  return Tensor::FromVector(std::vector<int64_t>(shape.dim_sizes()));
}

// x * scale + offset in x's dtype.
Output ScaleShift(const Scope& scope, const Output& x, DataType dtype, double scale,
                  double offset) {
  Output scaled = ops::Mul(scope, x, ops::ConstOfType(scope, dtype, scale));
  return ops::Add(scope, scaled, ops::ConstOfType(scope, dtype, offset));
}

}  // namespace

InitializerFn ZerosInitializer(const TensorShape& shape, DataType dtype) {
  return ConstantInitializer(shape, 0.0, dtype);
}

InitializerFn ConstantInitializer(const TensorShape& shape, double value, DataType dtype) {
  return [=](const Scope& scope) {
    return ops::ConstFilled(scope.WithOpName(value == 0 ? "zeros" : "Const"), dtype, shape, value);
  };
}

InitializerFn GlorotUniformInitializer(const TensorShape& shape, int64_t seed, DataType dtype) {
  return [=](const Scope& scope) {
    double fan_in = 1, fan_out = 1;
    const int rank = shape.dims();
    if (rank == 1) {
      fan_in = fan_out = static_cast<double>(shape.dim_size(0));
    } else if (rank >= 2) {
      double receptive = 1;
      for (int i = 0; i < rank - 2; ++i) receptive *= static_cast<double>(shape.dim_size(i));
      fan_in = static_cast<double>(shape.dim_size(rank - 2)) * receptive;
      fan_out = static_cast<double>(shape.dim_size(rank - 1)) * receptive;
    }
    const double limit = std::sqrt(6.0 / std::max(1.0, fan_in + fan_out));
    const Scope s = scope.NewSubScope("random_uniform");
    Output u = ops::RandomUniform(s, ShapeTensor(shape), dtype, {seed, 0});
    return ScaleShift(s, u, dtype, 2 * limit, -limit);
  };
}

InitializerFn TruncatedNormalInitializer(const TensorShape& shape, double stddev, int64_t seed,
                                         double mean, DataType dtype) {
  return [=](const Scope& scope) {
    const Scope s = scope.NewSubScope("truncated_normal");
    Output n = ops::TruncatedNormal(s, ShapeTensor(shape), dtype, {seed, 0});
    return ScaleShift(s, n, dtype, stddev, mean);
  };
}

InitializerFn RandomNormalInitializer(const TensorShape& shape, double stddev, int64_t seed,
                                      double mean, DataType dtype) {
  return [=](const Scope& scope) {
    const Scope s = scope.NewSubScope("random_normal");
    Output n = ops::RandomStandardNormal(s, ShapeTensor(shape), dtype, {seed, 0});
    return ScaleShift(s, n, dtype, stddev, mean);
  };
}

}  // namespace overseer

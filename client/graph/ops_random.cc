#include "client/graph/ops_random.h"

#include "client/graph/graph_builder.h"
#include "client/graph/ops_math.h"

namespace overseer {
namespace ops {

namespace {
Output RandomOp(const Scope& scope, const char* op, const Input& shape, DataType dtype,
                const RandomSeeds& seeds) {
  return FirstOutput(NodeBuilder(scope, op)
                         .Input(shape)
                         .Attr("dtype", dtype)
                         .Attr("seed", seeds.seed)
                         .Attr("seed2", seeds.seed2)
                         .Finalize());
}
}  // namespace

Output RandomUniform(const Scope& scope, Input shape, DataType dtype, const RandomSeeds& seeds) {
  return RandomOp(scope, "RandomUniform", shape, dtype, seeds);
}

Output RandomStandardNormal(const Scope& scope, Input shape, DataType dtype,
                            const RandomSeeds& seeds) {
  return RandomOp(scope, "RandomNormal", shape, dtype, seeds);
}

Output RandomNormal(const Scope& scope, Input shape, DataType dtype, double mean, double stddev,
                    const RandomSeeds& seeds) {
  Scope s = scope.NewSubScope(scope.op_name().empty() ? "random_normal" : scope.op_name());
  Output normal = RandomStandardNormal(s, shape, dtype, seeds);
  Output scaled = Mul(s.WithOpName("mul"), normal, ConstOfType(s, dtype, stddev));
  return Add(s.WithOpName("add"), scaled, ConstOfType(s, dtype, mean));
}

Output TruncatedNormal(const Scope& scope, Input shape, DataType dtype, const RandomSeeds& seeds) {
  return RandomOp(scope, "TruncatedNormal", shape, dtype, seeds);
}

}  // namespace ops
}  // namespace overseer

#ifndef OVERSEER_CLIENT_SESSION_GRADIENTS_CHECKER_H_
#define OVERSEER_CLIENT_SESSION_GRADIENTS_CHECKER_H_

// Checks symbolic gradients against finite differences, through a real session: the
// numeric Jacobian uses central differences (x +- delta) and the symbolic one is built
// row by row with AddSymbolicGradients fed one-hot output gradients. Build the graph in
// double precision for tight bounds.
//
//   Output x = ops::Placeholder(root, DT_DOUBLE);
//   Output y = ops::Square(root, x);
//   ASSIGN_OR_RETURN(double err, ComputeGradientError(root, {x}, {x_value}, {y}));
//   EXPECT_LT(err, 1e-6);

#include <vector>

#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"
#include "core/tensor.h"

namespace overseer {

struct JacobianPair {
  // [total x elements, total y elements], row-major per x element.
  std::vector<double> symbolic, numeric;
  int64_t x_size = 0, y_size = 0;
};

// Evaluates both Jacobians of `ys` with respect to `xs` at `x_values` (one value per x,
// fed; float or double tensors). Opens its own in-process session on scope's graph
// (variables in it must not need initialising). INVALID_ARGUMENT for mismatched
// arguments or a non-floating x/y; session and gradient errors otherwise.
absl::StatusOr<JacobianPair> ComputeJacobians(const Scope& scope, const std::vector<Output>& xs,
                                              const std::vector<Tensor>& x_values,
                                              const std::vector<Output>& ys, double delta = 1e-3);

// The largest absolute difference between the two Jacobians.
absl::StatusOr<double> ComputeGradientError(const Scope& scope, const std::vector<Output>& xs,
                                            const std::vector<Tensor>& x_values,
                                            const std::vector<Output>& ys, double delta = 1e-3);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_GRADIENTS_CHECKER_H_

#ifndef OVERSEER_CLIENT_GRAPH_LEARNING_RATE_DECAY_H_
#define OVERSEER_CLIENT_GRAPH_LEARNING_RATE_DECAY_H_

// Learning-rate schedules as graph ops on the global step, in the shape of TensorFlow
// 1.x's tf.train.exponential_decay and its siblings. Each gives a float scalar that an
// optimizer takes as its learning rate (LearningRate, optimizers.h), so the rate
// follows the step wherever the step lives (a ps), recomputed in each training step:
//
//   ASSIGN_OR_RETURN(Variable step, GetOrCreateGlobalStep(root));
//   ASSIGN_OR_RETURN(Output lr, ExponentialDecay(root, 0.1, step.value, 1000, 0.96, true));
//   GradientDescentOptimizer sgd(lr);
//
// `global_step` is any integer or floating scalar (usually the global step's value).
// Invalid arguments (TensorFlow's ValueError) are INVALID_ARGUMENT before anything is
// added to the graph.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"

namespace overseer {

// learning_rate * decay_rate ^ (global_step / decay_steps); with `staircase` the
// exponent is floored, so the rate drops every decay_steps steps. decay_steps > 0.
absl::StatusOr<Output> ExponentialDecay(const Scope& scope, double learning_rate,
                                        const Output& global_step, int64_t decay_steps,
                                        double decay_rate, bool staircase = false);

// values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
// boundaries[i], and values.back() after the last boundary. One more value than
// boundaries, and increasing boundaries.
absl::StatusOr<Output> PiecewiseConstant(const Scope& scope, const Output& x,
                                         const std::vector<int64_t>& boundaries,
                                         const std::vector<double>& values);

// (learning_rate - end_learning_rate) * (1 - step / decay_steps) ^ power +
// end_learning_rate, with step = min(global_step, decay_steps); with `cycle`,
// decay_steps is instead the first multiple of it at or after global_step (at least
// decay_steps), so the decay restarts. decay_steps > 0.
absl::StatusOr<Output> PolynomialDecay(const Scope& scope, double learning_rate,
                                       const Output& global_step, int64_t decay_steps,
                                       double end_learning_rate = 0.0001, double power = 1.0,
                                       bool cycle = false);

// learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha), with
// step = min(global_step, decay_steps). decay_steps > 0.
absl::StatusOr<Output> CosineDecay(const Scope& scope, double learning_rate,
                                   const Output& global_step, int64_t decay_steps,
                                   double alpha = 0.0);

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_LEARNING_RATE_DECAY_H_

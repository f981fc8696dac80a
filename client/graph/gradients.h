#ifndef OVERSEER_CLIENT_GRAPH_GRADIENTS_H_
#define OVERSEER_CLIENT_GRAPH_GRADIENTS_H_

// Symbolic gradients: AddSymbolicGradients adds to the graph the nodes that compute
// d(sum of outputs * grad_inputs) / d(inputs), using a gradient function registered
// per op type:
//
//   absl::Status MatMulGrad(const Scope& scope, const Operation& op,
//                           const std::vector<Output>& grads,
//                           std::vector<Output>* grad_outputs);
//   REGISTER_GRADIENT("MatMul", MatMulGrad);
//   REGISTER_NO_GRADIENT("StopGradient");
//
// A gradient function gets one gradient per output of `op` (a null Output for outputs
// that received none; at least one is non-null) and appends one gradient per data
// input of `op` (a null Output where the input has no gradient, e.g. integer shapes).

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph/graph.h"
#include "client/graph/scope.h"

namespace overseer {

using GradFunc = std::function<absl::Status(const Scope& scope, const Operation& op,
                                            const std::vector<Output>& grads,
                                            std::vector<Output>* grad_outputs)>;

// The process-wide table of gradient functions. Thread-safe.
class GradientRegistry {
 public:
  static GradientRegistry* Global();
  // A null GradFunc marks the op as having no gradient (its inputs get none).
  // ALREADY_EXISTS if `op` has an entry.
  absl::Status Register(const std::string& op, GradFunc fn);
  // NOT_FOUND naming the op if nothing is registered; a null GradFunc if the op is
  // registered as having no gradient.
  absl::StatusOr<GradFunc> Lookup(const std::string& op) const;
};

// Adds gradient nodes under `scope`'s name scope + "gradients/": `grad_outputs[i]`
// receives d(sum_j <outputs[j], grad_inputs[j]>) / d(inputs[i]). `grad_inputs` must be
// empty (meaning OnesLike(outputs[j])) or have one tensor per output, of its dtype.
// Gradients reaching a tensor along several paths are summed with AddN. An input that
// no output depends on (through ops with gradients) gets a null Output.
//
// Errors (INVALID_ARGUMENT): a null or foreign tensor, mismatched grad_inputs, an op on
// a path from an input to an output with no registered gradient function (the message
// names the op and node), or an error recorded in the scope while building the
// gradient nodes. Only the latter poisons the scope; after the others the graph stays
// usable (a few unused gradient nodes may remain; sessions never run them).
absl::Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& outputs,
                                  const std::vector<Output>& inputs,
                                  const std::vector<Output>& grad_inputs,
                                  std::vector<Output>* grad_outputs);
absl::Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& outputs,
                                  const std::vector<Output>& inputs,
                                  std::vector<Output>* grad_outputs);

namespace internal {
struct GradientRegistrar {
  GradientRegistrar(const char* op, GradFunc fn);
};
}  // namespace internal

#define REGISTER_GRADIENT(op, fn) REGISTER_GRADIENT_UNIQ_HELPER(__COUNTER__, op, fn)
#define REGISTER_NO_GRADIENT(op) REGISTER_GRADIENT_UNIQ_HELPER(__COUNTER__, op, nullptr)
#define REGISTER_GRADIENT_UNIQ_HELPER(ctr, op, fn) REGISTER_GRADIENT_UNIQ(ctr, op, fn)
#define REGISTER_GRADIENT_UNIQ(ctr, op, fn)                                    \
  static ::overseer::internal::GradientRegistrar overseer_grad_registrar_##ctr \
      __attribute__((unused)) = ::overseer::internal::GradientRegistrar(op, fn)

}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_GRADIENTS_H_

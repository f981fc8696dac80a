#ifndef OVERSEER_CLIENT_GRAPH_OPS_STATE_H_
#define OVERSEER_CLIENT_GRAPH_OPS_STATE_H_

// Variable ops (the raw nodes; variables.h has the Variable helper that also creates
// the initializer and fills the collections). Conventions as in ops_array.h.

#include <cstdint>
#include <string>
#include <vector>

#include "client/graph/graph.h"
#include "client/graph/ops_input.h"
#include "client/graph/scope.h"
#include "core/tensor_shape.h"

namespace overseer {
namespace ops {

// A VariableV2 node: a ref to the persistent tensor named by the node (or
// `shared_name`) in `container` of the resource manager.
Output VariableV2(const Scope& scope, const PartialShape& shape, DataType dtype,
                  const std::string& container = "", const std::string& shared_name = "");
// Sets `ref` to `value`; returns the ref. With validate_shape, the shapes must match.
Output Assign(const Scope& scope, Input ref, Input value, bool validate_shape = true,
              bool use_locking = true);
Output AssignAdd(const Scope& scope, Input ref, Input value, bool use_locking = false);
Output AssignSub(const Scope& scope, Input ref, Input value, bool use_locking = false);
// ref *= value, as one update under the variable's lock (an Overseer op: TensorFlow
// writes Assign(ref, ref * value), which loses an update when two steps interleave).
Output AssignMul(const Scope& scope, Input ref, Input value);
// Sparse updates of a variable's rows: ref[indices[i], ...] = (or +=, -=) updates[i, ...],
// with updates.shape = indices.shape + ref.shape[1:] (tf.scatter_update / _add / _sub).
// Returns the ref.
Output ScatterUpdate(const Scope& scope, Input ref, Input indices, Input updates,
                     bool use_locking = true);
Output ScatterAdd(const Scope& scope, Input ref, Input indices, Input updates,
                  bool use_locking = true);
Output ScatterSub(const Scope& scope, Input ref, Input indices, Input updates,
                  bool use_locking = true);
// TensorFlow's count_up_to: adds 1 to the int32 or int64 scalar `ref` and outputs the
// value from before; the step fails OUT_OF_RANGE once that value reaches `limit`.
Output CountUpTo(const Scope& scope, Input ref, int64_t limit);
// A bool scalar: whether `ref` has been assigned.
Output IsVariableInitialized(const Scope& scope, Input ref);
// The names in `var_names` whose `is_initialized` entry is false, as a string vector.
Output ReportUninitializedVariables(const Scope& scope, const InputList& is_initialized,
                                    const std::vector<std::string>& var_names);

}  // namespace ops
}  // namespace overseer

#endif  // OVERSEER_CLIENT_GRAPH_OPS_STATE_H_

#ifndef OVERSEER_CORE_KERNELS_STATE_VAR_UTIL_H_
#define OVERSEER_CORE_KERNELS_STATE_VAR_UTIL_H_

// Helpers for kernels that update variables through Ref(T) inputs (Assign*, Apply*).

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/op_kernel.h"
#include "core/resource_mgr.h"
#include "core/tensor_shape.h"

namespace overseer {

// A variable made by VariableV2, which keeps the shape it was declared with.
class DeclaredVar : public Var {
 public:
  DeclaredVar(DataType dtype, PartialShape declared) : Var(dtype), declared_(std::move(declared)) {}
  const PartialShape& declared_shape() const { return declared_; }

 private:
  const PartialShape declared_;
};

// What Assign with validate_shape checks before variable `var` (ref input i) takes a
// value of `shape`: the variable's current shape if it has one, and its declared shape
// if it is a DeclaredVar. INVALID_ARGUMENT naming the variable otherwise.
absl::Status CheckAssignedShape(const OpKernelContext& ctx, int i, Var* var,
                                const TensorShape& shape) ABSL_EXCLUSIVE_LOCKS_REQUIRED(var->mu());

// The node that feeds input i of the kernel ("v" for "v:0" or "v").
std::string InputNodeName(const OpKernelContext& ctx, int i);

// The variable behind ref input i. INVALID_ARGUMENT naming the input when it is not a
// ref (the graph wired a value where a variable is required).
absl::StatusOr<Var*> RefInput(OpKernelContext* ctx, int i);

// FAILED_PRECONDITION "Attempting to use uninitialized value NAME" for input i.
absl::Status UninitializedError(const OpKernelContext& ctx, int i);

// Holds the mutexes of several variables, taken in address order (so that two kernels
// locking overlapping sets never deadlock) and each only once.
class VarLocks {
 public:
  explicit VarLocks(std::vector<Var*> vars);
  ~VarLocks();
  VarLocks(const VarLocks&) = delete;
  VarLocks& operator=(const VarLocks&) = delete;

 private:
  std::vector<absl::Mutex*> locked_;
};

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_STATE_VAR_UTIL_H_

#include "core/kernels/state/var_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/node_def_util.h"

namespace overseer {

std::string InputNodeName(const OpKernelContext& ctx, int i) {
  const NodeDef& def = ctx.kernel().def();
  if (i >= def.input_size()) return absl::StrCat("input ", i);
  auto id = ParseTensorName(def.input(i));
  return id.ok() ? id->node : def.input(i);
}

absl::StatusOr<Var*> RefInput(OpKernelContext* ctx, int i) {
  if (!ctx->input_is_ref(i)) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", i, " (", InputNodeName(*ctx, i), ") must be a variable reference"));
  }
  return ctx->input_ref(i);
}

absl::Status CheckAssignedShape(const OpKernelContext& ctx, int i, Var* var,
                                const TensorShape& shape) {
  if (var->is_initialized() && var->tensor()->shape() != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("Assign requires shapes of both tensors to match: variable ",
                     InputNodeName(ctx, i), " has shape ", var->tensor()->shape().DebugString(),
                     ", value has shape ", shape.DebugString()));
  }
  const auto* declared = dynamic_cast<const DeclaredVar*>(var);
  if (declared != nullptr && !declared->declared_shape().IsCompatibleWith(shape)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Assign requires shapes of both tensors to match: variable ", InputNodeName(ctx, i),
        " is declared with shape ", declared->declared_shape().DebugString(), ", value has shape ",
        shape.DebugString()));
  }
  return absl::OkStatus();
}

absl::Status UninitializedError(const OpKernelContext& ctx, int i) {
  return absl::FailedPreconditionError(
      absl::StrCat("Attempting to use uninitialized value ", InputNodeName(ctx, i)));
}

VarLocks::VarLocks(std::vector<Var*> vars) {
  for (Var* v : vars) locked_.push_back(v->mu());
  std::sort(locked_.begin(), locked_.end());
  locked_.erase(std::unique(locked_.begin(), locked_.end()), locked_.end());
  for (absl::Mutex* mu : locked_) mu->Lock();
}

VarLocks::~VarLocks() {
  for (auto it = locked_.rbegin(); it != locked_.rend(); ++it) (*it)->Unlock();
}

}  // namespace overseer

// CPU kernels of ScatterUpdate, ScatterAdd and ScatterSub: sparse updates of a
// variable's rows in place (the optimizers' and embeddings' updates on a ps).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/array/kernel_util.h"
#include "core/kernels/state/var_util.h"
#include "core/op_kernel.h"
#include "core/status_macros.h"

namespace overseer {
namespace {

enum class ScatterKind { kUpdate, kAdd, kSub };

// ref[indices[i], ...] = (or +=, -=) updates[i, ...]. Repeated indices: every update
// applies, in order (the last one wins for ScatterUpdate).
template <ScatterKind kKind>
class ScatterOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Var * var, RefInput(ctx, 0));
    ASSIGN_OR_RETURN(Tensor indices, ctx->input_value(1));
    ASSIGN_OR_RETURN(Tensor updates, ctx->input_value(2));
    if (updates.dtype() != var->dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot scatter updates of dtype ", DataTypeString(updates.dtype()), " into variable ",
          InputNodeName(*ctx, 0), " of dtype ", DataTypeString(var->dtype())));
    }
    const std::vector<int64_t> index = Int64Values(indices);
    absl::MutexLock lock(var->mu());
    if (!var->is_initialized()) return UninitializedError(*ctx, 0);
    Tensor* t = var->tensor();
    if (t->dims() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(type_string(),
                                                     " needs a variable of rank 1 or more; ",
                                                     InputNodeName(*ctx, 0), " is a scalar"));
    }
    // updates.shape must be indices.shape + ref.shape[1:].
    std::vector<int64_t> want = indices.shape().dim_sizes();
    const std::vector<int64_t>& rdims = t->shape().dim_sizes();
    want.insert(want.end(), rdims.begin() + 1, rdims.end());
    if (updates.shape().dim_sizes() != want) {
      return absl::InvalidArgumentError(
          absl::StrCat(type_string(), ": updates of shape ", updates.shape().DebugString(),
                       " do not match indices of shape ", indices.shape().DebugString(),
                       " into variable ", InputNodeName(*ctx, 0), " of shape ",
                       t->shape().DebugString(), " (want ", TensorShape(want).DebugString(), ")"));
    }
    const int64_t rows = rdims[0];
    for (size_t i = 0; i < index.size(); ++i) {
      if (index[i] < 0 || index[i] >= rows) {
        return absl::InvalidArgumentError(
            absl::StrCat(type_string(), ": indices[", i, "] = ", index[i], " is not in [0, ", rows,
                         ") (the rows of ", InputNodeName(*ctx, 0), ")"));
      }
    }
    var->PrepareForUpdate();
    const int64_t inner = rows == 0 ? 0 : t->NumElements() / rows;
    Tensor* target = var->tensor();
    RETURN_IF_ERROR(ApplyUpdates(*target, updates, index, inner));
    ctx->set_output_ref(0, ctx->input_ref_shared(0));
    return absl::OkStatus();
  }

 private:
  // Writes into `target`'s buffer (which the caller holds locked).
  absl::Status ApplyUpdates(const Tensor& target, const Tensor& updates,
                            const std::vector<int64_t>& index, int64_t inner) const {
    auto apply = [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = target.data<T>();
      const T* in = updates.data<T>();
      for (size_t i = 0; i < index.size(); ++i) {
        T* row = out + index[i] * inner;
        const T* from = in + static_cast<int64_t>(i) * inner;
        for (int64_t j = 0; j < inner; ++j) {
          if constexpr (kKind == ScatterKind::kUpdate) {
            row[j] = from[j];
          } else if constexpr (kKind == ScatterKind::kAdd) {
            row[j] += from[j];
          } else {
            row[j] -= from[j];
          }
        }
      }
      return absl::OkStatus();
    };
    if constexpr (kKind == ScatterKind::kUpdate) {
      return VisitAllTypes(updates.dtype(), type_string(), apply);
    } else {
      return VisitNumericTypes(updates.dtype(), type_string(), apply);
    }
  }
};
using ScatterUpdateOp = ScatterOp<ScatterKind::kUpdate>;
using ScatterAddOp = ScatterOp<ScatterKind::kAdd>;
using ScatterSubOp = ScatterOp<ScatterKind::kSub>;
REGISTER_KERNEL(ScatterUpdateOp, "ScatterUpdate");
REGISTER_KERNEL(ScatterAddOp, "ScatterAdd");
REGISTER_KERNEL(ScatterSubOp, "ScatterSub");

}  // namespace
}  // namespace overseer

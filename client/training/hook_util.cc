#include "client/training/hook_util.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/graph/variables.h"
#include "core/status_macros.h"

namespace overseer {
namespace hook_internal {
namespace {

absl::StatusOr<Variable> FindGlobalStep(const Scope& scope, absl::string_view hook) {
  absl::StatusOr<Variable> step = GetGlobalStep(*scope.graph());
  if (!step.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("global step should be created to use ", hook, " (", step.status().message(),
                     "); call CreateGlobalStep or GetOrCreateGlobalStep first"));
  }
  return step;
}

std::string Element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT:
      return absl::StrCat(t.data<float>()[i]);
    case DT_DOUBLE:
      return absl::StrCat(t.data<double>()[i]);
    case DT_INT32:
      return absl::StrCat(t.data<int32_t>()[i]);
    case DT_INT64:
      return absl::StrCat(t.data<int64_t>()[i]);
    case DT_BOOL:
      return t.data<bool>()[i] ? "True" : "False";
    case DT_STRING:
      return absl::StrCat("'", t.data<std::string>()[i], "'");
    default:
      return "?";
  }
}

}  // namespace

absl::StatusOr<Output> GlobalStepTensor(const Scope& scope, absl::string_view hook) {
  ASSIGN_OR_RETURN(Variable step, FindGlobalStep(scope, hook));
  return step.value;
}

absl::StatusOr<std::string> GlobalStepName(const Scope& scope, absl::string_view hook) {
  ASSIGN_OR_RETURN(Variable step, FindGlobalStep(scope, hook));
  return step.name();
}

absl::StatusOr<int64_t> ReadGlobalStep(ClientSession* session, const Output& step) {
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run({step}, &out));
  return StepValue(out[0]);
}

std::string FormatTensorValue(const Tensor& t, int max_entries) {
  if (!t.IsInitialized()) return "<uninitialized>";
  if (t.dims() == 0) return Element(t, 0);
  std::string out = "[";
  const int64_t n = std::min<int64_t>(t.NumElements(), max_entries);
  for (int64_t i = 0; i < n; ++i) absl::StrAppend(&out, i == 0 ? "" : " ", Element(t, i));
  if (t.NumElements() > n) out += " ...";
  return out + "]";
}

}  // namespace hook_internal
}  // namespace overseer

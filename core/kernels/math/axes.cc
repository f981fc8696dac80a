#include "core/kernels/math/axes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace overseer {

absl::StatusOr<std::vector<int64_t>> ReadIndexVector(const Tensor& t, const char* what) {
  if (t.dims() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a scalar or vector, got shape ", t.shape().DebugString()));
  }
  std::vector<int64_t> values(t.NumElements());
  if (t.dtype() == DT_INT32) {
    const int32_t* p = t.data<int32_t>();
    std::copy(p, p + values.size(), values.begin());
  } else if (t.dtype() == DT_INT64) {
    const int64_t* p = t.data<int64_t>();
    std::copy(p, p + values.size(), values.begin());
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be int32 or int64, got ", DataTypeString(t.dtype())));
  }
  return values;
}

absl::StatusOr<std::vector<bool>> ReductionMask(const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> mask(rank, false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return absl::InvalidArgumentError(absl::StrCat("Invalid reduction dimension ", axis,
                                                     " for input with ", rank, " dimensions"));
    }
    mask[axis < 0 ? axis + rank : axis] = true;
  }
  return mask;
}

absl::Status BroadcastGradientAxes(const std::vector<int64_t>& s0, const std::vector<int64_t>& s1,
                                   std::vector<int64_t>* r0, std::vector<int64_t>* r1) {
  r0->clear();
  r1->clear();
  const int rank = static_cast<int>(std::max(s0.size(), s1.size()));
  for (int d = 0; d < rank; ++d) {
    const int i0 = static_cast<int>(s0.size()) - rank + d;
    const int i1 = static_cast<int>(s1.size()) - rank + d;
    const int64_t d0 = i0 >= 0 ? s0[i0] : 1;
    const int64_t d1 = i1 >= 0 ? s1[i1] : 1;
    if (d0 == d1) {
      if (d0 == 1) {
        r0->push_back(d);
        r1->push_back(d);
      }
    } else if (d0 == 1) {
      r0->push_back(d);
    } else if (d1 == 1) {
      r1->push_back(d);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("Incompatible shapes: [",
                                                     absl::StrJoin(s0, ","), "] vs. [",
                                                     absl::StrJoin(s1, ","), "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace overseer

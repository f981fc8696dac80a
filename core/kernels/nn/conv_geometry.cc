#include "core/kernels/nn/conv_geometry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace overseer {
namespace {

absl::Status CheckFour(const char* what, const std::vector<int64_t>& v) {
  if (v.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must have 4 elements (NHWC), got [", absl::StrJoin(v, ", "), "]"));
  }
  for (int64_t x : v) {
    if (x <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must be positive, got [", absl::StrJoin(v, ", "), "]"));
    }
  }
  if (v[0] != 1 || v[3] != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " over the batch and depth dimensions must be 1, got [",
                     absl::StrJoin(v, ", "), "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WindowAttrs::Validate(bool has_ksize) const {
  if (data_format != "NHWC") {
    return absl::InvalidArgumentError(
        absl::StrCat("data_format '", data_format, "' is not supported; use NHWC"));
  }
  if (padding != "SAME" && padding != "VALID") {
    return absl::InvalidArgumentError(
        absl::StrCat("padding must be SAME or VALID, got '", padding, "'"));
  }
  if (absl::Status s = CheckFour("strides", strides); !s.ok()) return s;
  if (has_ksize) {
    if (absl::Status s = CheckFour("ksize", ksize); !s.ok()) return s;
  }
  for (int64_t d : dilations) {
    if (d != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dilations other than 1 are not supported, got [", absl::StrJoin(dilations, ", "), "]"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Window> MakeWindow(int64_t in, int64_t k, int64_t stride, bool same) {
  if (k <= 0 || stride <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("window size ", k, " and stride ", stride, " must be positive"));
  }
  Window w;
  w.in = in;
  w.k = k;
  w.stride = stride;
  if (same) {
    w.out = (in + stride - 1) / stride;
    const int64_t pad = std::max<int64_t>((w.out - 1) * stride + k - in, 0);
    w.pad_before = pad / 2;
  } else {
    if (in < k) {
      return absl::InvalidArgumentError(absl::StrCat("with VALID padding the input (", in,
                                                     ") must be at least the window (", k, ")"));
    }
    w.out = (in - k) / stride + 1;
  }
  return w;
}

}  // namespace overseer

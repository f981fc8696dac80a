#ifndef OVERSEER_CORE_KERNELS_NN_CONV_GEOMETRY_H_
#define OVERSEER_CORE_KERNELS_NN_CONV_GEOMETRY_H_

// The geometry shared by the convolution and pooling ops (NHWC): their window attrs,
// and where each output position's window falls on the input, with TensorFlow's SAME
// and VALID padding.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace overseer {

struct WindowAttrs {
  std::vector<int64_t> strides;
  std::vector<int64_t> ksize;  // Pooling only.
  std::vector<int64_t> dilations = {1, 1, 1, 1};
  std::string padding;
  std::string data_format = "NHWC";

  bool same() const { return padding == "SAME"; }
  // INVALID_ARGUMENT unless: data_format NHWC; padding SAME or VALID; 4 positive
  // strides (and ksize) with 1 for the batch and depth; dilations all 1.
  absl::Status Validate(bool has_ksize) const;
};

// One spatial dimension: input size, window size, stride, output size, and the padding
// before the first element (SAME splits the padding, the extra element after).
struct Window {
  int64_t in = 0;
  int64_t k = 0;
  int64_t stride = 1;
  int64_t out = 0;
  int64_t pad_before = 0;
};

// INVALID_ARGUMENT for a non-positive window or stride, and for VALID padding with an
// input smaller than the window.
absl::StatusOr<Window> MakeWindow(int64_t in, int64_t k, int64_t stride, bool same);

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_NN_CONV_GEOMETRY_H_

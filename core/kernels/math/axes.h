#ifndef OVERSEER_CORE_KERNELS_MATH_AXES_H_
#define OVERSEER_CORE_KERNELS_MATH_AXES_H_

// Axis arithmetic shared by the math ops' shape functions and their kernels.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace overseer {

// The values of an int32 or int64 scalar or vector (axes, shapes). INVALID_ARGUMENT
// naming `what` for another dtype or a rank above 1.
absl::StatusOr<std::vector<int64_t>> ReadIndexVector(const Tensor& t, const char* what);

// Which of `rank` dimensions `axes` name; negative axes count from the end and
// duplicates are allowed. INVALID_ARGUMENT "Invalid reduction dimension 5 for input
// with 2 dimensions" for an axis outside [-rank, rank).
absl::StatusOr<std::vector<bool>> ReductionMask(const std::vector<int64_t>& axes, int rank);

// BroadcastGradientArgs: for shapes s0 and s1 broadcast against each other, the axes of
// the output (ascending) that the gradient of each side must be summed over. An axis
// where both sides are 1 is listed for both. INVALID_ARGUMENT "Incompatible shapes:
// [2,3] vs. [4]" when they do not broadcast.
absl::Status BroadcastGradientAxes(const std::vector<int64_t>& s0, const std::vector<int64_t>& s1,
                                   std::vector<int64_t>* r0, std::vector<int64_t>* r1);

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_MATH_AXES_H_

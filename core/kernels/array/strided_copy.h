#ifndef OVERSEER_CORE_KERNELS_ARRAY_STRIDED_COPY_H_
#define OVERSEER_CORE_KERNELS_ARRAY_STRIDED_COPY_H_

// Gathers a strided view of an input buffer into a dense row-major output; the common
// core of Slice, Transpose and BroadcastTo.

#include <cstdint>
#include <vector>

namespace overseer {

// Row-major strides (in elements) of `dims`.
inline std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

// For every index (i_0, ..., i_{n-1}) of `out_dims` in row-major order, writes
// in[offset + sum_k i_k * in_strides[k]] to the next element of `out`. A stride of 0
// repeats (broadcasts) the input along that dimension.
template <typename T>
void StridedCopy(const T* in, int64_t offset, const std::vector<int64_t>& in_strides,
                 const std::vector<int64_t>& out_dims, T* out) {
  const int rank = static_cast<int>(out_dims.size());
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    out[0] = in[offset];
    return;
  }
  const int64_t inner = out_dims[rank - 1];
  const int64_t inner_stride = in_strides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t pos = offset;
  for (int64_t done = 0; done < total; done += inner) {
    if (inner_stride == 1) {
      for (int64_t j = 0; j < inner; ++j) out[j] = in[pos + j];
    } else {
      for (int64_t j = 0; j < inner; ++j) out[j] = in[pos + j * inner_stride];
    }
    out += inner;
    // Advance the odometer over the outer dimensions.
    for (int k = rank - 2; k >= 0; --k) {
      pos += in_strides[k];
      if (++index[k] < out_dims[k]) break;
      pos -= in_strides[k] * out_dims[k];
      index[k] = 0;
    }
  }
}

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_ARRAY_STRIDED_COPY_H_

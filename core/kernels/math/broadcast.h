#ifndef OVERSEER_CORE_KERNELS_MATH_BROADCAST_H_
#define OVERSEER_CORE_KERNELS_MATH_BROADCAST_H_

// Numpy broadcasting of several operands, collapsed to the fewest dimensions so that
// kernels can evaluate it with an Eigen broadcast of small, fixed rank.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/status_macros.h"
#include "core/tensor_eigen.h"
#include "core/tensor_shape.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {

// The layout of an elementwise op over operands broadcast against each other.
// Dimensions of output size 1 are dropped and adjacent dimensions in which every
// operand is either broadcast or not in the same way are merged, so [2,3] + [3]
// becomes out [2,3], operand 1 reshaped to [1,3] and broadcast by [2,1].
// A value type.
class BroadcastLayout {
 public:
  // INVALID_ARGUMENT "Incompatible shapes: [2,3] vs. [4]" naming the shapes that
  // disagree.
  static absl::StatusOr<BroadcastLayout> Make(absl::Span<const TensorShape> shapes);

  const TensorShape& output_shape() const { return output_shape_; }
  // Rank after collapsing; 0 when the output has one element (or none).
  int rank() const { return static_cast<int>(out_dims_.size()); }
  const std::vector<int64_t>& out_dims() const { return out_dims_; }
  // Operand i viewed at rank(): each entry is 1 or out_dims()[d].
  const std::vector<int64_t>& reshape(int i) const { return reshape_[i]; }
  // Factors that broadcast reshape(i) to out_dims().
  const std::vector<int64_t>& bcast(int i) const { return bcast_[i]; }
  // Whether operand i already has every output element (no broadcasting needed).
  bool is_full(int i) const { return full_[i]; }
  // Whether operand i holds a single element that is broadcast everywhere.
  bool is_single(int i) const { return single_[i]; }

 private:
  TensorShape output_shape_;
  std::vector<int64_t> out_dims_;
  std::vector<std::vector<int64_t>> reshape_, bcast_;
  std::vector<bool> full_, single_;
};

// Rank-N Eigen views and index arrays for BroadcastLayout's vectors.
template <int N>
Eigen::array<Eigen::DenseIndex, N> ToEigenDims(const std::vector<int64_t>& v) {
  Eigen::array<Eigen::DenseIndex, N> a;
  for (int i = 0; i < N; ++i) a[i] = v[i];
  return a;
}

template <typename T, int N>
Tensor::EigenTensor<T, N> ShapedView(const Tensor& t, const std::vector<int64_t>& dims) {
  return Tensor::EigenTensor<T, N>(t.data<T>(), ToEigenDims<N>(dims));
}

// Computes, for each flat output index, the flat index of operand i; used for layouts
// of a rank the Eigen paths do not instantiate.
class BroadcastIndexer {
 public:
  BroadcastIndexer(const BroadcastLayout& layout, int operand);
  // Flat index into the operand for flat output index `out_index`.
  int64_t Map(int64_t out_index) const;

 private:
  std::vector<int64_t> out_dims_;
  std::vector<int64_t> strides_;  // Operand strides; 0 where broadcast.
};

// Operand `i` of `layout` copied out to the full output shape.
template <typename T>
absl::StatusOr<Tensor> ExpandToOutput(const Tensor& x, const BroadcastLayout& layout, int i) {
  ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(x.dtype(), layout.output_shape()));
  BroadcastIndexer indexer(layout, i);
  const T* in = x.data<T>();
  T* o = out.data<T>();
  for (int64_t k = 0; k < out.NumElements(); ++k) o[k] = in[indexer.Map(k)];
  return out;
}

}  // namespace overseer

#endif  // OVERSEER_CORE_KERNELS_MATH_BROADCAST_H_

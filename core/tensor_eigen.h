#ifndef OVERSEER_CORE_TENSOR_EIGEN_H_
#define OVERSEER_CORE_TENSOR_EIGEN_H_

// What a file that views a Tensor's elements through Eigen includes: Eigen's Tensor
// module, which core/tensor.h only declares (it takes 2.5 s to parse, and most files
// that use tensors never view them through Eigen).
//
//   #include "core/tensor_eigen.h"
//   auto v = t.flat<float>();  // Eigen::TensorMap<...>
//   v.setZero();

#include <array>
#include <type_traits>

#include "core/tensor.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace overseer {

// core/tensor.h declares the views' types with Eigen's values spelled out.
static_assert(kEigenRowMajor == Eigen::RowMajor);
static_assert(kEigenAligned == Eigen::Aligned);
static_assert(std::is_same_v<EigenIndex, Eigen::DenseIndex>);
static_assert(
    std::is_same_v<Tensor::EigenTensor<float, 2>,
                   Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor, Eigen::DenseIndex>,
                                    Eigen::Aligned>>);
static_assert(std::is_same_v<Eigen::array<EigenIndex, 3>, std::array<EigenIndex, 3>>);

}  // namespace overseer

#endif  // OVERSEER_CORE_TENSOR_EIGEN_H_

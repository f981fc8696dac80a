// Kernels of Add, Sub, Mul, Div, Maximum, Minimum and Pow with numpy broadcasting.

#include <cmath>
#include <type_traits>

#include "core/kernels/math/cwise_binary.h"
#include "core/tensor_eigen.h"

namespace overseer {
namespace {

struct AddFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a + b;
  }
};
struct SubFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a - b;
  }
};
struct MulFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a * b;
  }
};
struct MaximumFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a.cwiseMax(b);
  }
};
struct MinimumFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a.cwiseMin(b);
  }
};

// x^y elementwise; for integers a negative exponent is INVALID_ARGUMENT, as TensorFlow.
struct PowFn {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    using T = typename Eigen::internal::traits<A>::Scalar;
    return a.binaryExpr(b, [](T x, T y) -> T {
      if constexpr (std::is_integral_v<T>) {
        T result = 1;
        for (T base = x; y > 0; y >>= 1, base *= base) {
          if (y & 1) result *= base;
        }
        return result;
      } else {
        return std::pow(x, y);
      }
    });
  }

  template <typename T>
  static absl::Status Check(const Tensor& y) {
    if constexpr (std::is_integral_v<T>) {
      const T* p = y.data<T>();
      for (int64_t i = 0; i < y.NumElements(); ++i) {
        if (p[i] < 0) {
          return absl::InvalidArgumentError("Integers to negative integer powers are not allowed");
        }
      }
    }
    return absl::OkStatus();
  }
};

// Integer division truncates toward zero, as C++ (and TensorFlow's Div) does; an
// integer divisor of zero is INVALID_ARGUMENT rather than a crash.
struct DivFn {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a / b;
  }

  template <typename T>
  static absl::Status Check(const Tensor& y) {
    if constexpr (std::is_integral_v<T>) {
      const T* p = y.data<T>();
      for (int64_t i = 0; i < y.NumElements(); ++i) {
        if (p[i] == 0) return absl::InvalidArgumentError("Integer division by zero");
      }
    }
    return absl::OkStatus();
  }
};

using AddOp = BinaryOp<AddFn, CwiseTypes::kNumeric, false>;
using SubOp = BinaryOp<SubFn, CwiseTypes::kNumeric, false>;
using MulOp = BinaryOp<MulFn, CwiseTypes::kNumeric, false>;
using DivOp = BinaryOp<DivFn, CwiseTypes::kNumeric, false>;
using MaximumOp = BinaryOp<MaximumFn, CwiseTypes::kNumeric, false>;
using MinimumOp = BinaryOp<MinimumFn, CwiseTypes::kNumeric, false>;
REGISTER_KERNEL(AddOp, "Add");
REGISTER_KERNEL(SubOp, "Sub");
REGISTER_KERNEL(MulOp, "Mul");
REGISTER_KERNEL(DivOp, "Div");
REGISTER_KERNEL(MaximumOp, "Maximum");
REGISTER_KERNEL(MinimumOp, "Minimum");
using PowOp = BinaryOp<PowFn, CwiseTypes::kNumeric, false>;
REGISTER_KERNEL(PowOp, "Pow");

}  // namespace
}  // namespace overseer

// Kernels of the comparisons (Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual)
// and LogicalAnd, with numpy broadcasting and a bool result.

#include "core/kernels/math/cwise_binary.h"

namespace overseer {
namespace {

struct EqualFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a == b;
  }
};
struct NotEqualFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a != b;
  }
};
struct LessFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a < b;
  }
};
struct LessEqualFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a <= b;
  }
};
struct GreaterFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a > b;
  }
};
struct GreaterEqualFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a >= b;
  }
};
struct LogicalAndFn : NoCheck {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a && b;
  }
};

using EqualOp = BinaryOp<EqualFn, CwiseTypes::kNumericAndBool, true>;
using NotEqualOp = BinaryOp<NotEqualFn, CwiseTypes::kNumericAndBool, true>;
using LessOp = BinaryOp<LessFn, CwiseTypes::kNumeric, true>;
using LessEqualOp = BinaryOp<LessEqualFn, CwiseTypes::kNumeric, true>;
using GreaterOp = BinaryOp<GreaterFn, CwiseTypes::kNumeric, true>;
using GreaterEqualOp = BinaryOp<GreaterEqualFn, CwiseTypes::kNumeric, true>;
using LogicalAndOp = BinaryOp<LogicalAndFn, CwiseTypes::kBool, true>;
REGISTER_KERNEL(EqualOp, "Equal");
REGISTER_KERNEL(NotEqualOp, "NotEqual");
REGISTER_KERNEL(LessOp, "Less");
REGISTER_KERNEL(LessEqualOp, "LessEqual");
REGISTER_KERNEL(GreaterOp, "Greater");
REGISTER_KERNEL(GreaterEqualOp, "GreaterEqual");
REGISTER_KERNEL(LogicalAndOp, "LogicalAnd");

}  // namespace
}  // namespace overseer

// Kernels of the unary elementwise ops: Neg, Square, Sqrt, Exp, Log, Reciprocal, Floor,
// Sin, Cos.

#include "core/kernels/math/cwise_unary.h"

#include <cmath>

namespace overseer {
namespace {

struct NegFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return -x;
  }
};
struct SquareFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.square();
  }
};
struct SqrtFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.sqrt();
  }
};
struct ExpFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.exp();
  }
};
struct LogFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.log();
  }
};
struct ReciprocalFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.inverse();
  }
};

struct FloorFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.floor();
  }
};
struct SinFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.unaryExpr([](T v) { return std::sin(v); });
  }
};
struct CosFn {
  template <typename T, typename X>
  static auto Apply(const X& x) {
    return x.unaryExpr([](T v) { return std::cos(v); });
  }
};

using NegOp = UnaryOp<NegFn, true>;
using SquareOp = UnaryOp<SquareFn, true>;
using SqrtOp = UnaryOp<SqrtFn, false>;
using ExpOp = UnaryOp<ExpFn, false>;
using LogOp = UnaryOp<LogFn, false>;
using ReciprocalOp = UnaryOp<ReciprocalFn, false>;
REGISTER_KERNEL(NegOp, "Neg");
REGISTER_KERNEL(SquareOp, "Square");
REGISTER_KERNEL(SqrtOp, "Sqrt");
REGISTER_KERNEL(ExpOp, "Exp");
REGISTER_KERNEL(LogOp, "Log");
REGISTER_KERNEL(ReciprocalOp, "Reciprocal");
using FloorOp = UnaryOp<FloorFn, false>;
using SinOp = UnaryOp<SinFn, false>;
using CosOp = UnaryOp<CosFn, false>;
REGISTER_KERNEL(FloorOp, "Floor");
REGISTER_KERNEL(SinOp, "Sin");
REGISTER_KERNEL(CosOp, "Cos");

}  // namespace
}  // namespace overseer

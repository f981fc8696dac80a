#include "client/graph/learning_rate_decay.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/graph/ops_array.h"
#include "client/graph/ops_math.h"
#include "core/status_macros.h"
#include "core/types.h"

namespace overseer {
namespace {

absl::Status CheckDecaySteps(const char* schedule, int64_t decay_steps) {
  if (decay_steps > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(schedule, ": decay_steps must be positive, got ", decay_steps));
}

absl::Status CheckStep(const char* schedule, const Output& global_step) {
  if (!global_step.valid()) {
    return absl::InvalidArgumentError(absl::StrCat(schedule, ": global_step is not a tensor"));
  }
  const DataType t = RemoveRefType(global_step.dtype());
  if (t == DT_FLOAT || t == DT_DOUBLE || t == DT_INT32 || t == DT_INT64) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(schedule, ": global_step must be a number, got ", DataTypeString(t)));
}

Output F(const Scope& scope, double value) { return ops::ConstOfType(scope, DT_FLOAT, value); }

// The step as a float.
Output FloatStep(const Scope& scope, const Output& global_step) {
  return RemoveRefType(global_step.dtype()) == DT_FLOAT ? global_step
                                                        : ops::Cast(scope, global_step, DT_FLOAT);
}

}  // namespace

absl::StatusOr<Output> ExponentialDecay(const Scope& scope, double learning_rate,
                                        const Output& global_step, int64_t decay_steps,
                                        double decay_rate, bool staircase) {
  RETURN_IF_ERROR(CheckDecaySteps("ExponentialDecay", decay_steps));
  RETURN_IF_ERROR(CheckStep("ExponentialDecay", global_step));
  const Scope s = scope.NewSubScope("ExponentialDecay");
  Output p = ops::Div(s, FloatStep(s, global_step), F(s, static_cast<double>(decay_steps)));
  if (staircase) p = ops::Floor(s, p);
  Output out = ops::Mul(s.WithOpName("learning_rate"), F(s, learning_rate),
                        ops::Pow(s, F(s, decay_rate), p));
  RETURN_IF_ERROR(s.status());
  return out;
}

absl::StatusOr<Output> PiecewiseConstant(const Scope& scope, const Output& x,
                                         const std::vector<int64_t>& boundaries,
                                         const std::vector<double>& values) {
  if (values.size() != boundaries.size() + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("PiecewiseConstant: ", values.size(), " values for ", boundaries.size(),
                     " boundaries (one more value than boundaries is needed)"));
  }
  for (size_t i = 1; i < boundaries.size(); ++i) {
    if (boundaries[i] <= boundaries[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PiecewiseConstant: boundaries must increase, but boundary ", i, " (", boundaries[i],
          ") is not above boundary ", i - 1, " (", boundaries[i - 1], ")"));
    }
  }
  RETURN_IF_ERROR(CheckStep("PiecewiseConstant", x));
  const Scope s = scope.NewSubScope("PiecewiseConstant");
  const DataType t = RemoveRefType(x.dtype());
  Output out = F(s, values[0]);
  for (size_t i = 0; i < boundaries.size(); ++i) {
    // Integer steps compare exactly (a boundary past 2^53 survives).
    Output boundary = t == DT_INT64   ? ops::Const(s, boundaries[i])
                      : t == DT_INT32 ? ops::Const(s, static_cast<int32_t>(boundaries[i]))
                                      : ops::ConstOfType(s, t, static_cast<double>(boundaries[i]));
    Output past = ops::Greater(s, x, boundary);
    out = ops::Select(i + 1 == boundaries.size() ? s.WithOpName("learning_rate") : s, past,
                      F(s, values[i + 1]), out);
  }
  RETURN_IF_ERROR(s.status());
  return out;
}

absl::StatusOr<Output> PolynomialDecay(const Scope& scope, double learning_rate,
                                       const Output& global_step, int64_t decay_steps,
                                       double end_learning_rate, double power, bool cycle) {
  RETURN_IF_ERROR(CheckDecaySteps("PolynomialDecay", decay_steps));
  RETURN_IF_ERROR(CheckStep("PolynomialDecay", global_step));
  const Scope s = scope.NewSubScope("PolynomialDecay");
  Output step = FloatStep(s, global_step);
  Output steps = F(s, static_cast<double>(decay_steps));
  if (cycle) {
    // ceil(step / decay_steps), at least 1 (so that step 0 decays over the first cycle).
    Output q = ops::Div(s, step, steps);
    Output ceil = ops::Neg(s, ops::Floor(s, ops::Neg(s, q)));
    steps = ops::Mul(s, steps, ops::Maximum(s, ceil, F(s, 1)));
  } else {
    step = ops::Minimum(s, step, steps);
  }
  Output frac = ops::Sub(s, F(s, 1), ops::Div(s, step, steps));
  Output out =
      ops::Add(s.WithOpName("learning_rate"),
               ops::Mul(s, F(s, learning_rate - end_learning_rate), ops::Pow(s, frac, F(s, power))),
               F(s, end_learning_rate));
  RETURN_IF_ERROR(s.status());
  return out;
}

absl::StatusOr<Output> CosineDecay(const Scope& scope, double learning_rate,
                                   const Output& global_step, int64_t decay_steps, double alpha) {
  RETURN_IF_ERROR(CheckDecaySteps("CosineDecay", decay_steps));
  RETURN_IF_ERROR(CheckStep("CosineDecay", global_step));
  const Scope s = scope.NewSubScope("CosineDecay");
  Output steps = F(s, static_cast<double>(decay_steps));
  Output step = ops::Minimum(s, FloatStep(s, global_step), steps);
  Output cosine = ops::Mul(
      s, F(s, 0.5),
      ops::Add(s, F(s, 1), ops::Cos(s, ops::Mul(s, F(s, M_PI), ops::Div(s, step, steps)))));
  Output decayed = ops::Add(s, ops::Mul(s, F(s, 1 - alpha), cosine), F(s, alpha));
  Output out = ops::Mul(s.WithOpName("learning_rate"), F(s, learning_rate), decayed);
  RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace overseer

#include <cmath>
#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsScalar;
using test::AsTensor;
using test::ExpectTensorEqual;
using test::ExpectTensorNear;
using test::KernelRunner;
using test::MakeVar;
using test::ReadVar;
using test::Ref;
using test::Value;

TEST(ApplyGradientDescentTest, Updates) {
  Tensor initial = AsTensor<float>({1, 2});
  auto var = MakeVar(DT_FLOAT, initial);
  KernelRunner k("ApplyGradientDescent");
  k.Attr("T", DT_FLOAT);
  auto out = k.Run({Ref(var), Value(AsScalar<float>(0.5f)), Value(AsTensor<float>({2, 3}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorNear(out->at(0), AsTensor<float>({0, 0.5f}));
  ExpectTensorEqual(initial, AsTensor<float>({1, 2}));  // Copy-on-write.

  auto raw = k.RunRaw({Ref(var), Value(AsScalar<float>(1)), Value(AsTensor<float>({1, 1}))});
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->at(0).ref, var);
  ExpectTensorNear(ReadVar(var.get()), AsTensor<float>({-1, -0.5f}));
}

TEST(ApplyGradientDescentTest, Errors) {
  KernelRunner k("ApplyGradientDescent");
  k.Attr("T", DT_FLOAT).Input("w").Input("lr").Input("grad");
  auto uninit = MakeVar(DT_FLOAT);
  auto out = k.Run({Ref(uninit), Value(AsScalar<float>(1)), Value(AsTensor<float>({1}))});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().message(), "Attempting to use uninitialized value w");

  auto var = MakeVar(DT_FLOAT, AsTensor<float>({1, 2}));
  out = k.Run({Ref(var), Value(AsScalar<float>(1)), Value(AsTensor<float>({1, 2, 3}))});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("[2]"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("[3]"), std::string::npos) << out.status();

  out = k.Run({Ref(var), Value(AsTensor<float>({1})), Value(AsTensor<float>({1, 2}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = k.Run(
      {Value(AsTensor<float>({1, 2})), Value(AsScalar<float>(1)), Value(AsTensor<float>({1, 2}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  ExpectTensorEqual(ReadVar(var.get()), AsTensor<float>({1, 2}));
}

TEST(ApplyMomentumTest, PlainAndNesterov) {
  for (bool nesterov : {false, true}) {
    auto var = MakeVar(DT_DOUBLE, AsTensor<double>({1, 2}));
    auto accum = MakeVar(DT_DOUBLE, AsTensor<double>({0.5, 0.5}));
    KernelRunner k("ApplyMomentum");
    k.Attr("T", DT_DOUBLE).Attr("use_nesterov", nesterov);
    auto out = k.Run({Ref(var), Ref(accum), Value(AsScalar<double>(0.1)),
                      Value(AsTensor<double>({1, 2})), Value(AsScalar<double>(0.9))});
    ASSERT_TRUE(out.ok()) << out.status();
    // accum = 0.5 * 0.9 + grad.
    ExpectTensorNear(ReadVar(accum.get()), AsTensor<double>({1.45, 2.45}), 1e-12);
    if (nesterov) {
      // var -= grad * lr + accum * momentum * lr.
      ExpectTensorNear(out->at(0), AsTensor<double>({0.7695, 1.5795}), 1e-12);
    } else {
      ExpectTensorNear(out->at(0), AsTensor<double>({0.855, 1.755}), 1e-12);
    }
  }
}

TEST(ApplyMomentumTest, UninitializedAccum) {
  auto var = MakeVar(DT_FLOAT, AsTensor<float>({1}));
  auto accum = MakeVar(DT_FLOAT);
  KernelRunner k("ApplyMomentum");
  k.Attr("T", DT_FLOAT).Input("w").Input("w/Momentum").Input("lr").Input("g").Input("m");
  auto out = k.Run({Ref(var), Ref(accum), Value(AsScalar<float>(0.1f)), Value(AsTensor<float>({1})),
                    Value(AsScalar<float>(0.9f))});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().message(), "Attempting to use uninitialized value w/Momentum");
}

// One Adam step computed directly from TensorFlow's formulas.
std::vector<double> AdamStep(bool nesterov, std::vector<double> var, std::vector<double>* m,
                             std::vector<double>* v, const std::vector<double>& grad) {
  const double b1p = 0.9, b2p = 0.999, lr = 0.001, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
  for (size_t i = 0; i < var.size(); ++i) {
    (*m)[i] += (grad[i] - (*m)[i]) * (1 - b1);
    (*v)[i] += (grad[i] * grad[i] - (*v)[i]) * (1 - b2);
    const double num = nesterov ? grad[i] * (1 - b1) + b1 * (*m)[i] : (*m)[i];
    var[i] -= lr_t * num / (std::sqrt((*v)[i]) + eps);
  }
  return var;
}

TEST(ApplyAdamTest, MatchesFormula) {
  for (bool nesterov : {false, true}) {
    const std::vector<double> var0 = {1, 2, -3}, m0 = {0, 0.1, 0.2}, v0 = {0, 0.01, 0.3};
    const std::vector<double> grad = {0.1, -0.2, 5};
    auto var = MakeVar(DT_DOUBLE, AsTensor<double>(var0));
    auto m = MakeVar(DT_DOUBLE, AsTensor<double>(m0));
    auto v = MakeVar(DT_DOUBLE, AsTensor<double>(v0));
    KernelRunner k("ApplyAdam");
    k.Attr("T", DT_DOUBLE).Attr("use_nesterov", nesterov);
    auto out = k.Run({Ref(var), Ref(m), Ref(v), Value(AsScalar<double>(0.9)),
                      Value(AsScalar<double>(0.999)), Value(AsScalar<double>(0.001)),
                      Value(AsScalar<double>(0.9)), Value(AsScalar<double>(0.999)),
                      Value(AsScalar<double>(1e-8)), Value(AsTensor<double>(grad))});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> em = m0, ev = v0;
    std::vector<double> evar = AdamStep(nesterov, var0, &em, &ev, grad);
    ExpectTensorNear(out->at(0), AsTensor<double>(evar), 1e-12);
    ExpectTensorNear(ReadVar(m.get()), AsTensor<double>(em), 1e-12);
    ExpectTensorNear(ReadVar(v.get()), AsTensor<double>(ev), 1e-12);
  }
  // The first step from zero moments moves each weight by about lr against the gradient.
  auto var = MakeVar(DT_FLOAT, AsTensor<float>({1, 2}));
  auto m = MakeVar(DT_FLOAT, AsTensor<float>({0, 0}));
  auto v = MakeVar(DT_FLOAT, AsTensor<float>({0, 0}));
  KernelRunner k("ApplyAdam");
  k.Attr("T", DT_FLOAT);
  auto out = k.Run({Ref(var), Ref(m), Ref(v), Value(AsScalar<float>(0.9f)),
                    Value(AsScalar<float>(0.999f)), Value(AsScalar<float>(0.001f)),
                    Value(AsScalar<float>(0.9f)), Value(AsScalar<float>(0.999f)),
                    Value(AsScalar<float>(1e-8f)), Value(AsTensor<float>({0.1f, -0.2f}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorNear(out->at(0), AsTensor<float>({0.999f, 2.001f}), 1e-4);
}

TEST(ApplyAdamTest, ShapeMismatchOfMoments) {
  auto var = MakeVar(DT_FLOAT, AsTensor<float>({1, 2}));
  auto m = MakeVar(DT_FLOAT, AsTensor<float>({0}));
  auto v = MakeVar(DT_FLOAT, AsTensor<float>({0, 0}));
  KernelRunner k("ApplyAdam");
  k.Attr("T", DT_FLOAT);
  auto s = [](float x) { return Value(AsScalar<float>(x)); };
  auto out = k.Run({Ref(var), Ref(m), Ref(v), s(0.9f), s(0.999f), s(0.001f), s(0.9f), s(0.999f),
                    s(1e-8f), Value(AsTensor<float>({1, 1}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ApplyAdagradTest, AccumulatesSquaresAndCanLeaveTheSlot) {
  for (bool update_slots : {true, false}) {
    auto var = MakeVar(DT_DOUBLE, AsTensor<double>({1, 2}));
    auto accum = MakeVar(DT_DOUBLE, AsTensor<double>({0.1, 0.1}));
    KernelRunner k("ApplyAdagrad");
    k.Attr("T", DT_DOUBLE).Attr("update_slots", update_slots);
    auto out = k.Run(
        {Ref(var), Ref(accum), Value(AsScalar<double>(0.5)), Value(AsTensor<double>({2, 4}))});
    ASSERT_TRUE(out.ok()) << out.status();
    const double a0 = update_slots ? 4.1 : 0.1, a1 = update_slots ? 16.1 : 0.1;
    ExpectTensorNear(ReadVar(accum.get()), AsTensor<double>({a0, a1}), 1e-12);
    ExpectTensorNear(out->at(0),
                     AsTensor<double>({1 - 0.5 * 2 / std::sqrt(a0), 2 - 0.5 * 4 / std::sqrt(a1)}),
                     1e-12);
  }
}

TEST(ApplyRMSPropTest, MeanSquareAndMomentum) {
  auto var = MakeVar(DT_DOUBLE, AsTensor<double>({1}));
  auto ms = MakeVar(DT_DOUBLE, AsTensor<double>({1}));
  auto mom = MakeVar(DT_DOUBLE, AsTensor<double>({0.5}));
  KernelRunner k("ApplyRMSProp");
  k.Attr("T", DT_DOUBLE);
  auto out = k.Run({Ref(var), Ref(ms), Ref(mom), Value(AsScalar<double>(0.01)),
                    Value(AsScalar<double>(0.9)), Value(AsScalar<double>(0.2)),
                    Value(AsScalar<double>(1e-10)), Value(AsTensor<double>({2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  const double want_ms = 0.9 * 1 + 0.1 * 4;
  const double want_mom = 0.2 * 0.5 + 0.01 * 2 / std::sqrt(want_ms + 1e-10);
  ExpectTensorNear(ReadVar(ms.get()), AsTensor<double>({want_ms}), 1e-12);
  ExpectTensorNear(ReadVar(mom.get()), AsTensor<double>({want_mom}), 1e-12);
  ExpectTensorNear(out->at(0), AsTensor<double>({1 - want_mom}), 1e-12);
}

TEST(ApplyAdadeltaTest, UpdatesBothAccumulators) {
  auto var = MakeVar(DT_FLOAT, AsTensor<float>({1}));
  auto accum = MakeVar(DT_FLOAT, AsTensor<float>({0}));
  auto accum_update = MakeVar(DT_FLOAT, AsTensor<float>({0}));
  KernelRunner k("ApplyAdadelta");
  k.Attr("T", DT_FLOAT);
  auto out = k.Run({Ref(var), Ref(accum), Ref(accum_update), Value(AsScalar<float>(1)),
                    Value(AsScalar<float>(0.95f)), Value(AsScalar<float>(1e-6f)),
                    Value(AsTensor<float>({2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  const double want_accum = 0.05 * 4;
  const double update = std::sqrt(1e-6) / std::sqrt(want_accum + 1e-6) * 2;
  ExpectTensorNear(ReadVar(accum.get()), AsTensor<float>({static_cast<float>(want_accum)}), 1e-6);
  ExpectTensorNear(ReadVar(accum_update.get()),
                   AsTensor<float>({static_cast<float>(0.05 * update * update)}), 1e-9);
  ExpectTensorNear(out->at(0), AsTensor<float>({static_cast<float>(1 - update)}), 1e-6);
}

TEST(ApplyAdagradTest, ASlotOfAnotherShapeIsNamed) {
  auto var = MakeVar(DT_FLOAT, AsTensor<float>({1, 2}));
  auto accum = MakeVar(DT_FLOAT, AsTensor<float>({1, 2, 3}));
  KernelRunner k("ApplyAdagrad");
  k.Attr("T", DT_FLOAT).Input("w").Input("w/Adagrad").Input("lr").Input("grad");
  auto out =
      k.Run({Ref(var), Ref(accum), Value(AsScalar<float>(1)), Value(AsTensor<float>({1, 1}))});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  EXPECT_NE(out.status().message().find("w/Adagrad"), std::string::npos) << out.status();
  ExpectTensorEqual(ReadVar(var.get()), AsTensor<float>({1, 2}));
}

}  // namespace
}  // namespace overseer

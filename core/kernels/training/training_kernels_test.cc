#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

// A sparse update and the dense one it applies to each row it names.
struct SparseCase {
  std::string op;
  int num_vars;                 // The variable and its slots.
  std::vector<double> scalars;  // In the op's input order, after the variables.
  // Builds the inputs in the op's order from the refs, scalars, grad and indices.
  std::vector<TensorValue> (*sparse_inputs)(const std::vector<TensorValue>& vars,
                                            const std::vector<TensorValue>& scalars,
                                            TensorValue grad, TensorValue indices);
  std::vector<TensorValue> (*dense_inputs)(const std::vector<TensorValue>& vars,
                                           const std::vector<TensorValue>& scalars,
                                           TensorValue grad);
};

std::vector<TensorValue> Cat(std::vector<TensorValue> a, const std::vector<TensorValue>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<SparseCase> SparseCases() {
  using In = TensorValue;
  using V = std::vector<In>;
  // Ops whose inputs are the variables, then the scalars before the gradient.
  auto scalars_then_grad = [](const V& v, const V& s, In g, In i) {
    return Cat(Cat(v, s), {g, i});
  };
  auto scalars_then_grad_dense = [](const V& v, const V& s, In g) { return Cat(Cat(v, s), {g}); };
  return {
      {"Momentum",
       2,
       {0.1, 0.9},
       [](const V& v, const V& s, In g, In i) {
         return Cat(v, {s[0], g, i, s[1]});
       },
       [](const V& v, const V& s, In g) {
         return Cat(v, {s[0], g, s[1]});
       }},
      {"Adagrad", 2, {0.1}, scalars_then_grad, scalars_then_grad_dense},
      {"RMSProp", 3, {0.1, 0.9, 0.5, 1e-7}, scalars_then_grad, scalars_then_grad_dense},
      {"Adadelta", 3, {0.5, 0.95, 1e-6}, scalars_then_grad, scalars_then_grad_dense},
      {"Ftrl",
       3,
       {0.5, 0.01, 0.2, -0.5},
       [](const V& v, const V& s, In g, In i) {
         return Cat(Cat(v, {g, i}), s);
       },
       [](const V& v, const V& s, In g) { return Cat(Cat(v, {g}), s); }},
  };
}

TEST(SparseApplyTest, EachNamedRowGetsTheDenseUpdateAndTheOthersStay) {
  // Three rows of two; the gradient names rows 2 and 0.
  const std::vector<double> start = {1.0, -2.0, 0.5, 0.25, 3.0, -1.5};
  const std::vector<double> grad = {0.3, -0.7, 1.1, 0.2};
  const std::vector<int64_t> rows = {2, 0};
  for (const SparseCase& c : SparseCases()) {
    SCOPED_TRACE(c.op);
    std::vector<TensorValue> scalars;
    for (double s : c.scalars) scalars.push_back(Value(AsScalar<double>(s)));
    std::vector<std::shared_ptr<Var>> vars;
    std::vector<TensorValue> refs;
    for (int k = 0; k < c.num_vars; ++k) {
      std::vector<double> init = start;
      for (double& x : init) x = k == 0 ? x : std::abs(x) + 0.1 * k;  // Slots stay positive.
      Tensor t(DT_DOUBLE, TensorShape({3, 2}));
      std::copy(init.begin(), init.end(), t.data<double>());
      vars.push_back(MakeVar(DT_DOUBLE, t));
      refs.push_back(Ref(vars.back()));
    }
    std::vector<Tensor> before;
    for (auto& v : vars) before.push_back(ReadVar(v.get()));
    Tensor g(DT_DOUBLE, TensorShape({2, 2}));
    std::copy(grad.begin(), grad.end(), g.data<double>());
    KernelRunner k("SparseApply" + c.op);
    k.Attr("T", DT_DOUBLE).Attr("Tindices", DT_INT64);
    auto out = k.Run(c.sparse_inputs(refs, scalars, Value(g), Value(AsTensor<int64_t>({2, 0}))));
    ASSERT_TRUE(out.ok()) << out.status();
    for (int k2 = 0; k2 < c.num_vars; ++k2) {
      const Tensor after = ReadVar(vars[k2].get());
      // Row 1 is not named: unchanged, bit for bit.
      EXPECT_EQ(after.data<double>()[2], before[k2].data<double>()[2]);
      EXPECT_EQ(after.data<double>()[3], before[k2].data<double>()[3]);
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<std::shared_ptr<Var>> row_vars;
      std::vector<TensorValue> row_refs;
      for (int k2 = 0; k2 < c.num_vars; ++k2) {
        const double* b = before[k2].data<double>() + rows[i] * 2;
        row_vars.push_back(MakeVar(DT_DOUBLE, AsTensor<double>({b[0], b[1]})));
        row_refs.push_back(Ref(row_vars.back()));
      }
      KernelRunner dense("Apply" + c.op);
      dense.Attr("T", DT_DOUBLE);
      auto d = dense.Run(c.dense_inputs(row_refs, scalars,
                                        Value(AsTensor<double>({grad[2 * i], grad[2 * i + 1]}))));
      ASSERT_TRUE(d.ok()) << d.status();
      for (int k2 = 0; k2 < c.num_vars; ++k2) {
        const double* got = ReadVar(vars[k2].get()).data<double>() + rows[i] * 2;
        const Tensor want = ReadVar(row_vars[k2].get());
        EXPECT_NEAR(got[0], want.data<double>()[0], 1e-12)
            << "variable " << k2 << " row " << rows[i];
        EXPECT_NEAR(got[1], want.data<double>()[1], 1e-12)
            << "variable " << k2 << " row " << rows[i];
      }
    }
  }
}

TEST(SparseApplyTest, ARepeatedIndexIsUpdatedOncePerSlice) {
  auto var = MakeVar(DT_FLOAT, AsTensor<float>({1, 2}, {2, 1}));
  auto accum = MakeVar(DT_FLOAT, AsTensor<float>({1, 1}, {2, 1}));
  KernelRunner k("SparseApplyAdagrad");
  k.Attr("T", DT_FLOAT).Attr("Tindices", DT_INT32);
  auto out = k.Run({Ref(var), Ref(accum), Value(AsScalar<float>(1)),
                    Value(AsTensor<float>({1, 1}, {2, 1})), Value(AsTensor<int32_t>({1, 1}))});
  ASSERT_TRUE(out.ok()) << out.status();
  // accum 1 -> 2 -> 3; var 2 - 1/sqrt(2) - 1/sqrt(3).
  ExpectTensorNear(ReadVar(accum.get()), AsTensor<float>({1, 3}, {2, 1}), 1e-6);
  ExpectTensorNear(
      ReadVar(var.get()),
      AsTensor<float>({1, static_cast<float>(2 - 1 / std::sqrt(2.0) - 1 / std::sqrt(3.0))}, {2, 1}),
      1e-6);
}

TEST(SparseApplyTest, BadIndicesAndShapesAreNamedAndChangeNothing) {
  auto var = MakeVar(DT_FLOAT, AsTensor<float>({1, 2, 3, 4}, {2, 2}));
  auto accum = MakeVar(DT_FLOAT, AsTensor<float>({1, 1, 1, 1}, {2, 2}));
  KernelRunner k("SparseApplyAdagrad");
  k.Attr("T", DT_FLOAT)
      .Attr("Tindices", DT_INT64)
      .Input("emb")
      .Input("emb/Adagrad")
      .Input("lr")
      .Input("grad")
      .Input("ids");
  auto run = [&](Tensor grad, Tensor indices) {
    return k.Run({Ref(var), Ref(accum), Value(AsScalar<float>(1)), Value(grad), Value(indices)});
  };
  auto out = run(AsTensor<float>({1, 1, 1, 1}, {2, 2}), AsTensor<int64_t>({0, 2}));
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("indices[1] = 2 is not in [0, 2)"), std::string::npos)
      << out.status();
  EXPECT_NE(out.status().message().find("emb"), std::string::npos) << out.status();
  out = run(AsTensor<float>({1, 1, 1}, {1, 3}), AsTensor<int64_t>({0}));
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("want [1,2]"), std::string::npos) << out.status();
  out = run(AsTensor<float>({1, 1}, {1, 2}), AsTensor<int64_t>({0}, {1, 1}));
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("must be a vector"), std::string::npos) << out.status();
  ExpectTensorEqual(ReadVar(var.get()), AsTensor<float>({1, 2, 3, 4}, {2, 2}));
  ExpectTensorEqual(ReadVar(accum.get()), AsTensor<float>({1, 1, 1, 1}, {2, 2}));
}

// TensorFlow's FTRL-Proximal, computed from its definition.
double FtrlReference(double var, double accum, double linear, double g, double lr, double l1,
                     double l2, double power, double* new_accum_out, double* linear_out) {
  const double new_accum = accum + g * g;
  linear += g - (std::pow(new_accum, -power) - std::pow(accum, -power)) / lr * var;
  const double quadratic = std::pow(new_accum, -power) / lr + 2 * l2;
  *new_accum_out = new_accum;
  *linear_out = linear;
  if (std::abs(linear) <= l1) return 0;
  return ((linear > 0 ? l1 : -l1) - linear) / quadratic;
}

TEST(ApplyFtrlTest, MatchesTheDefinitionAndL1Zeroes) {
  for (double power : {-0.5, -0.7, 0.0}) {
    for (double l1 : {0.0, 0.1, 100.0}) {
      SCOPED_TRACE(absl::StrCat("lr_power ", power, " l1 ", l1));
      auto var = MakeVar(DT_DOUBLE, AsTensor<double>({1, -0.5}));
      auto accum = MakeVar(DT_DOUBLE, AsTensor<double>({0.1, 0.3}));
      auto linear = MakeVar(DT_DOUBLE, AsTensor<double>({0, 0.2}));
      KernelRunner k("ApplyFtrl");
      k.Attr("T", DT_DOUBLE);
      auto out = k.Run({Ref(var), Ref(accum), Ref(linear), Value(AsTensor<double>({2, -0.25})),
                        Value(AsScalar<double>(0.5)), Value(AsScalar<double>(l1)),
                        Value(AsScalar<double>(0.2)), Value(AsScalar<double>(power))});
      ASSERT_TRUE(out.ok()) << out.status();
      double a0, a1, l0, l1v;
      const double v0 = FtrlReference(1, 0.1, 0, 2, 0.5, l1, 0.2, power, &a0, &l0);
      const double v1 = FtrlReference(-0.5, 0.3, 0.2, -0.25, 0.5, l1, 0.2, power, &a1, &l1v);
      ExpectTensorNear(ReadVar(var.get()), AsTensor<double>({v0, v1}), 1e-12);
      ExpectTensorNear(ReadVar(accum.get()), AsTensor<double>({a0, a1}), 1e-12);
      ExpectTensorNear(ReadVar(linear.get()), AsTensor<double>({l0, l1v}), 1e-12);
      if (l1 == 100.0) ExpectTensorEqual(ReadVar(var.get()), AsTensor<double>({0, 0}));
    }
  }
}

TEST(ApplyFtrlTest, BadHyperparametersAreRejected) {
  auto var = MakeVar(DT_FLOAT, AsTensor<float>({1}));
  auto accum = MakeVar(DT_FLOAT, AsTensor<float>({0.1f}));
  auto linear = MakeVar(DT_FLOAT, AsTensor<float>({0}));
  KernelRunner k("ApplyFtrl");
  k.Attr("T", DT_FLOAT);
  for (auto [lr, l1, l2, power] : std::vector<std::array<float, 4>>{
           {0, 0, 0, -0.5f}, {1, -1, 0, -0.5f}, {1, 0, -1, -0.5f}, {1, 0, 0, 0.5f}}) {
    auto out = k.Run({Ref(var), Ref(accum), Ref(linear), Value(AsTensor<float>({1})),
                      Value(AsScalar<float>(lr)), Value(AsScalar<float>(l1)),
                      Value(AsScalar<float>(l2)), Value(AsScalar<float>(power))});
    ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
    EXPECT_NE(out.status().message().find("lr_power <= 0"), std::string::npos) << out.status();
  }
  ExpectTensorEqual(ReadVar(var.get()), AsTensor<float>({1}));
}

}  // namespace
}  // namespace overseer

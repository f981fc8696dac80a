// Conv2D, its backprops and the pooling ops against hand-computed values and against a
// direct (six nested loops) convolution, and their errors for bad input.

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsTensor;
using test::ExpectTensorEqual;
using test::ExpectTensorNear;
using test::KernelRunner;
using test::Value;

absl::StatusOr<std::vector<Tensor>> RunWindowOp(const std::string& op,
                                                const std::vector<Tensor>& inputs,
                                                const std::vector<int>& strides,
                                                const std::string& padding,
                                                const std::vector<int>& ksize = {}) {
  KernelRunner k(op);
  k.Attr("T", DT_DOUBLE).Attr("strides", strides).Attr("padding", padding);
  if (!ksize.empty()) k.Attr("ksize", ksize);
  std::vector<TensorValue> in;
  for (const Tensor& t : inputs) in.push_back(Value(t));
  return k.Run(in);
}

Tensor Random(const TensorShape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  Tensor t(DT_DOUBLE, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<double>()[i] = dist(rng);
  return t;
}

// The convolution straight from its definition, with TensorFlow's SAME padding.
struct Direct {
  int64_t n, h, w, c, kh, kw, o, sh, sw, oh, ow, ph, pw;
  Direct(const Tensor& x, const Tensor& f, int stride_h, int stride_w, bool same)
      : n(x.dim_size(0)),
        h(x.dim_size(1)),
        w(x.dim_size(2)),
        c(x.dim_size(3)),
        kh(f.dim_size(0)),
        kw(f.dim_size(1)),
        o(f.dim_size(3)),
        sh(stride_h),
        sw(stride_w) {
    oh = same ? (h + sh - 1) / sh : (h - kh) / sh + 1;
    ow = same ? (w + sw - 1) / sw : (w - kw) / sw + 1;
    ph = same ? std::max<int64_t>((oh - 1) * sh + kh - h, 0) / 2 : 0;
    pw = same ? std::max<int64_t>((ow - 1) * sw + kw - w, 0) / 2 : 0;
  }
  // Calls fn(x index, filter index, output index) for every product of the convolution.
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z)
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t iy = y * sh - ph + i, iz = z * sw - pw + j;
              if (iy < 0 || iy >= h || iz < 0 || iz >= w) continue;
              for (int64_t d = 0; d < c; ++d)
                for (int64_t e = 0; e < o; ++e) {
                  fn(((b * h + iy) * w + iz) * c + d, ((i * kw + j) * c + d) * o + e,
                     ((b * oh + y) * ow + z) * o + e);
                }
            }
  }
};

TEST(Conv2DTest, HandComputed) {
  // 3x3 image 1..9, 2x2 filter of ones, VALID: the sums of the four 2x2 windows.
  Tensor x = AsTensor<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, TensorShape({1, 3, 3, 1}));
  Tensor f = AsTensor<double>({1, 1, 1, 1}, TensorShape({2, 2, 1, 1}));
  auto valid = RunWindowOp("Conv2D", {x, f}, {1, 1, 1, 1}, "VALID");
  ASSERT_TRUE(valid.ok()) << valid.status();
  ExpectTensorEqual(valid->at(0), AsTensor<double>({12, 16, 24, 28}, TensorShape({1, 2, 2, 1})));
  // SAME with stride 2: out 2x2, padding one column and row after.
  auto same = RunWindowOp("Conv2D", {x, f}, {1, 2, 2, 1}, "SAME");
  ASSERT_TRUE(same.ok()) << same.status();
  ExpectTensorEqual(same->at(0), AsTensor<double>({12, 9, 15, 9}, TensorShape({1, 2, 2, 1})));
}

TEST(Conv2DTest, ForwardAndBackpropsMatchTheDefinition) {
  struct Case {
    TensorShape x, f;
    int sh, sw;
    bool same;
  };
  for (const Case& k : std::vector<Case>{{{2, 5, 6, 3}, {3, 3, 3, 4}, 1, 1, true},
                                         {{2, 7, 5, 2}, {3, 2, 2, 3}, 2, 2, true},
                                         {{1, 6, 6, 2}, {2, 3, 2, 2}, 2, 1, false},
                                         {{3, 4, 4, 1}, {4, 4, 1, 2}, 1, 1, false}}) {
    SCOPED_TRACE(k.x.DebugString() + " * " + k.f.DebugString());
    Tensor x = Random(k.x, 1), f = Random(k.f, 2);
    const Direct d(x, f, k.sh, k.sw, k.same);
    const std::vector<int> strides = {1, k.sh, k.sw, 1};
    const std::string padding = k.same ? "SAME" : "VALID";
    Tensor want(DT_DOUBLE, TensorShape({d.n, d.oh, d.ow, d.o}));
    d.ForEach([&](int64_t xi, int64_t fi, int64_t yi) {
      want.data<double>()[yi] += x.data<double>()[xi] * f.data<double>()[fi];
    });
    auto y = RunWindowOp("Conv2D", {x, f}, strides, padding);
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectTensorNear(y->at(0), want, 1e-12);

    Tensor g = Random(want.shape(), 3);
    Tensor want_dx(DT_DOUBLE, k.x), want_df(DT_DOUBLE, k.f);
    d.ForEach([&](int64_t xi, int64_t fi, int64_t yi) {
      want_dx.data<double>()[xi] += g.data<double>()[yi] * f.data<double>()[fi];
      want_df.data<double>()[fi] += g.data<double>()[yi] * x.data<double>()[xi];
    });
    auto sizes = [](const TensorShape& s) {
      return AsTensor<int32_t>(
          {static_cast<int32_t>(s.dim_size(0)), static_cast<int32_t>(s.dim_size(1)),
           static_cast<int32_t>(s.dim_size(2)), static_cast<int32_t>(s.dim_size(3))});
    };
    auto dx = RunWindowOp("Conv2DBackpropInput", {sizes(k.x), f, g}, strides, padding);
    ASSERT_TRUE(dx.ok()) << dx.status();
    ExpectTensorNear(dx->at(0), want_dx, 1e-12);
    auto df = RunWindowOp("Conv2DBackpropFilter", {x, sizes(k.f), g}, strides, padding);
    ASSERT_TRUE(df.ok()) << df.status();
    ExpectTensorNear(df->at(0), want_df, 1e-12);
  }
}

TEST(Conv2DTest, BadInputIsInvalidArgument) {
  Tensor x = Random({1, 3, 3, 2}, 1);
  auto expect = [](const absl::StatusOr<std::vector<Tensor>>& r, const std::string& text) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status();
  };
  expect(RunWindowOp("Conv2D", {x, Random({2, 2, 3, 1}, 2)}, {1, 1, 1, 1}, "SAME"),
         "input depth 2 does not match the filter's 3 input channels");
  expect(RunWindowOp("Conv2D", {x, Random({4, 4, 2, 1}, 2)}, {1, 1, 1, 1}, "VALID"),
         "must be at least the window");
  expect(RunWindowOp("Conv2D", {x, Random({2, 2, 2}, 2)}, {1, 1, 1, 1}, "SAME"),
         "filter must be 4-dimensional");
  expect(
      RunWindowOp("Conv2D", {Random({3, 3, 2}, 1), Random({2, 2, 2, 1}, 2)}, {1, 1, 1, 1}, "SAME"),
      "input must be 4-dimensional");
  KernelRunner bad_strides("Conv2D");
  bad_strides.Attr("T", DT_DOUBLE)
      .Attr("strides", std::vector<int>{2, 1, 1, 1})
      .Attr("padding", "SAME");
  EXPECT_EQ(bad_strides.Init().code(), absl::StatusCode::kInvalidArgument);
  KernelRunner zero_stride("Conv2D");
  zero_stride.Attr("T", DT_DOUBLE)
      .Attr("strides", std::vector<int>{1, 0, 1, 1})
      .Attr("padding", "SAME");
  EXPECT_EQ(zero_stride.Init().code(), absl::StatusCode::kInvalidArgument);
  KernelRunner full("Conv2D");
  full.Attr("T", DT_DOUBLE).Attr("strides", std::vector<int>{1, 1, 1, 1}).Attr("padding", "FULL");
  EXPECT_EQ(full.Init().code(), absl::StatusCode::kInvalidArgument);
  expect(RunWindowOp(
             "Conv2DBackpropInput",
             {AsTensor<int32_t>({1, 3, 3, 2}), Random({2, 2, 2, 1}, 2), Random({1, 2, 2, 1}, 3)},
             {1, 1, 1, 1}, "SAME"),
         "out_backprop has shape [1,2,2,1] but the convolution's output is [1,3,3,1]");
  expect(
      RunWindowOp("Conv2DBackpropFilter",
                  {x, AsTensor<int32_t>({2, 2, 2}), Random({1, 3, 3, 1}, 3)}, {1, 1, 1, 1}, "SAME"),
      "filter_sizes must be a vector of 4 sizes");
}

TEST(PoolTest, MaxAndAvgHandComputed) {
  Tensor x = AsTensor<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                              TensorShape({1, 4, 4, 1}));
  auto max = RunWindowOp("MaxPool", {x}, {1, 2, 2, 1}, "VALID", {1, 2, 2, 1});
  ASSERT_TRUE(max.ok()) << max.status();
  ExpectTensorEqual(max->at(0), AsTensor<double>({6, 8, 14, 16}, TensorShape({1, 2, 2, 1})));
  // AvgPool leaves the padding out of the mean: 3x3 image 1..9, 2x2 windows, SAME.
  Tensor small = AsTensor<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, TensorShape({1, 3, 3, 1}));
  auto avg = RunWindowOp("AvgPool", {small}, {1, 2, 2, 1}, "SAME", {1, 2, 2, 1});
  ASSERT_TRUE(avg.ok()) << avg.status();
  ExpectTensorEqual(avg->at(0), AsTensor<double>({3, 4.5, 7.5, 9}, TensorShape({1, 2, 2, 1})));

  // The gradients: MaxPool's to each window's largest, AvgPool's spread over the window.
  auto max_grad = RunWindowOp(
      "MaxPoolGrad", {x, max->at(0), AsTensor<double>({1, 2, 3, 4}, TensorShape({1, 2, 2, 1}))},
      {1, 2, 2, 1}, "VALID", {1, 2, 2, 1});
  ASSERT_TRUE(max_grad.ok()) << max_grad.status();
  ExpectTensorEqual(max_grad->at(0),
                    AsTensor<double>({0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4},
                                     TensorShape({1, 4, 4, 1})));
  auto avg_grad = RunWindowOp(
      "AvgPoolGrad",
      {AsTensor<int32_t>({1, 3, 3, 1}), AsTensor<double>({4, 2, 2, 1}, TensorShape({1, 2, 2, 1}))},
      {1, 2, 2, 1}, "SAME", {1, 2, 2, 1});
  ASSERT_TRUE(avg_grad.ok()) << avg_grad.status();
  ExpectTensorEqual(avg_grad->at(0),
                    AsTensor<double>({1, 1, 1, 1, 1, 1, 1, 1, 1}, TensorShape({1, 3, 3, 1})));
}

TEST(PoolTest, BadInputIsInvalidArgument) {
  auto r = RunWindowOp("MaxPool", {Random({1, 2, 2, 1}, 1)}, {1, 1, 1, 1}, "VALID", {1, 3, 3, 1});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  KernelRunner depth("MaxPool");
  depth.Attr("T", DT_DOUBLE)
      .Attr("strides", std::vector<int>{1, 1, 1, 1})
      .Attr("padding", "SAME")
      .Attr("ksize", std::vector<int>{1, 2, 2, 2});
  EXPECT_EQ(depth.Init().code(), absl::StatusCode::kInvalidArgument);
  auto grad = RunWindowOp(
      "MaxPoolGrad", {Random({1, 4, 4, 1}, 1), Random({1, 2, 2, 1}, 2), Random({1, 3, 3, 1}, 3)},
      {1, 2, 2, 1}, "VALID", {1, 2, 2, 1});
  EXPECT_EQ(grad.status().code(), absl::StatusCode::kInvalidArgument) << grad.status();
}

}  // namespace
}  // namespace overseer

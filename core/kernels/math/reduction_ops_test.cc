#include <algorithm>
#include <cmath>
#include <limits>
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
using test::Value;

absl::StatusOr<Tensor> Reduce(const std::string& op, const Tensor& x, const Tensor& axes,
                              bool keep_dims = false) {
  test::KernelRunner runner(op);
  runner.Attr("T", x.dtype()).Attr("Tidx", axes.dtype()).Attr("keep_dims", keep_dims);
  auto out = runner.Run({Value(x), Value(axes)});
  if (!out.ok()) return out.status();
  return out->at(0);
}

Tensor MustReduce(const std::string& op, const Tensor& x, const Tensor& axes,
                  bool keep_dims = false) {
  auto out = Reduce(op, x, axes, keep_dims);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : Tensor();
}

// [[1,2,3],[4,5,6]]
Tensor M() { return AsTensor<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})); }

TEST(ReductionTest, EachAxisOfAMatrix) {
  ExpectTensorEqual(MustReduce("Sum", M(), AsTensor<int32_t>({0})), AsTensor<float>({5, 7, 9}));
  ExpectTensorEqual(MustReduce("Sum", M(), AsTensor<int32_t>({1})), AsTensor<float>({6, 15}));
  ExpectTensorEqual(MustReduce("Max", M(), AsTensor<int32_t>({0})), AsTensor<float>({4, 5, 6}));
  ExpectTensorEqual(MustReduce("Prod", M(), AsTensor<int64_t>({1})), AsTensor<float>({6, 120}));
  ExpectTensorEqual(MustReduce("Mean", M(), AsTensor<int32_t>({1})), AsTensor<float>({2, 5}));
}

TEST(ReductionTest, NegativeAxisAndScalarAxis) {
  ExpectTensorEqual(MustReduce("Sum", M(), AsTensor<int32_t>({-1})), AsTensor<float>({6, 15}));
  ExpectTensorEqual(MustReduce("Sum", M(), AsScalar<int32_t>(-2)), AsTensor<float>({5, 7, 9}));
}

TEST(ReductionTest, KeepDims) {
  ExpectTensorEqual(MustReduce("Sum", M(), AsTensor<int32_t>({1}), true),
                    AsTensor<float>({6, 15}, TensorShape({2, 1})));
  ExpectTensorEqual(MustReduce("Max", M(), AsTensor<int32_t>({0, 1}), true),
                    AsTensor<float>({6}, TensorShape({1, 1})));
}

TEST(ReductionTest, AllAxesAndEmptyAxes) {
  ExpectTensorEqual(MustReduce("Sum", M(), AsTensor<int32_t>({0, 1})), AsScalar<float>(21));
  ExpectTensorEqual(MustReduce("Mean", M(), AsTensor<int32_t>({1, 0})), AsScalar<float>(3.5f));
  ExpectTensorEqual(MustReduce("Prod", M(), AsTensor<int32_t>({0, -1})), AsScalar<float>(720));
  // No axes: the identity.
  ExpectTensorEqual(MustReduce("Sum", M(), AsTensor<int32_t>({})), M());
  // Scalar input, no axes.
  ExpectTensorEqual(MustReduce("Max", AsScalar<float>(3), AsTensor<int32_t>({})),
                    AsScalar<float>(3));
}

TEST(ReductionTest, IntegerMeanTruncates) {
  ExpectTensorEqual(MustReduce("Mean", AsTensor<int32_t>({1, 2, 4, 4}, TensorShape({2, 2})),
                               AsTensor<int32_t>({1})),
                    AsTensor<int32_t>({1, 4}));
  ExpectTensorEqual(MustReduce("Sum", AsTensor<int64_t>({1, 2, 3}), AsTensor<int32_t>({0})),
                    AsScalar<int64_t>(6));
  ExpectTensorNear(MustReduce("Mean", AsTensor<double>({1, 2}), AsTensor<int32_t>({0})),
                   AsScalar<double>(1.5));
}

// [2,3,4] with values 0..23.
Tensor Cube() {
  std::vector<int32_t> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  return AsTensor<int32_t>(v, TensorShape({2, 3, 4}));
}

TEST(ReductionTest, Rank3EveryAxisSet) {
  ExpectTensorEqual(MustReduce("Sum", Cube(), AsTensor<int32_t>({1})),
                    AsTensor<int32_t>({12, 15, 18, 21, 48, 51, 54, 57}, TensorShape({2, 4})));
  ExpectTensorEqual(MustReduce("Sum", Cube(), AsTensor<int32_t>({0, 2})),
                    AsTensor<int32_t>({60, 92, 124}));
  ExpectTensorEqual(
      MustReduce("Max", Cube(), AsTensor<int32_t>({0})),
      AsTensor<int32_t>({12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}, TensorShape({3, 4})));
  ExpectTensorEqual(MustReduce("Sum", Cube(), AsTensor<int32_t>({1, 2})),
                    AsTensor<int32_t>({66, 210}));
}

TEST(ReductionTest, AlternatingAxesUseTheLoop) {
  // [2,2,2,2] values 0..15, reduce axes 0 and 2 (collapses to rank 4).
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  // out[j,l] = sum_{i,k} v[8i + 4j + 2k + l]
  std::vector<float> want(4, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k)
        for (int l = 0; l < 2; ++l) want[j * 2 + l] += v[8 * i + 4 * j + 2 * k + l];
  Tensor x = AsTensor<float>(v, TensorShape({2, 2, 2, 2}));
  ExpectTensorEqual(MustReduce("Sum", x, AsTensor<int32_t>({0, 2})),
                    AsTensor<float>(want, TensorShape({2, 2})));
  std::vector<float> mean = want;
  for (float& m : mean) m /= 4;
  ExpectTensorEqual(MustReduce("Mean", x, AsTensor<int32_t>({0, 2}), true),
                    AsTensor<float>(mean, TensorShape({1, 2, 1, 2})));
}

TEST(ReductionTest, LargeInputsMatchLoop) {
  const int rows = 900, cols = 500;
  std::vector<int64_t> v(rows * cols), row_sum(rows, 0), col_max(cols, -1);
  int64_t total = 0;
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const int64_t x = (i * 31 + j * 17) % 1009;
      v[i * cols + j] = x;
      row_sum[i] += x;
      col_max[j] = std::max(col_max[j], x);
      total += x;
    }
  }
  Tensor x = AsTensor<int64_t>(v, TensorShape({rows, cols}));
  ExpectTensorEqual(MustReduce("Sum", x, AsTensor<int32_t>({1})), AsTensor<int64_t>(row_sum));
  ExpectTensorEqual(MustReduce("Max", x, AsTensor<int32_t>({0})), AsTensor<int64_t>(col_max));
  ExpectTensorEqual(MustReduce("Sum", x, AsTensor<int32_t>({0, 1})), AsScalar<int64_t>(total));
}

TEST(ReductionTest, EmptyInputs) {
  Tensor empty = AsTensor<float>({}, TensorShape({0, 3}));
  ExpectTensorEqual(MustReduce("Sum", empty, AsTensor<int32_t>({0})), AsTensor<float>({0, 0, 0}));
  ExpectTensorEqual(MustReduce("Prod", empty, AsTensor<int32_t>({0})), AsTensor<float>({1, 1, 1}));
  const float inf = std::numeric_limits<float>::infinity();
  ExpectTensorEqual(MustReduce("Max", empty, AsTensor<int32_t>({0})),
                    AsTensor<float>({-inf, -inf, -inf}));
  ExpectTensorEqual(MustReduce("Sum", empty, AsTensor<int32_t>({1})),
                    AsTensor<float>({}, TensorShape({0})));
  Tensor mean = MustReduce("Mean", empty, AsTensor<int32_t>({0}));
  EXPECT_TRUE(std::isnan(mean.data<float>()[0]));
}

TEST(ReductionTest, BadAxisIsInvalidArgument) {
  auto out = Reduce("Sum", M(), AsTensor<int32_t>({2}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("Invalid reduction dimension 2"), std::string::npos)
      << out.status();
}

absl::StatusOr<Tensor> ArgMax(const Tensor& x, const Tensor& dim, DataType out_type) {
  test::KernelRunner runner("ArgMax");
  runner.Attr("T", x.dtype()).Attr("Tidx", dim.dtype()).Attr("output_type", out_type);
  auto out = runner.Run({Value(x), Value(dim)});
  if (!out.ok()) return out.status();
  return out->at(0);
}

TEST(ArgMaxTest, EachAxis) {
  Tensor x = AsTensor<float>({1, 9, 3, 7, 5, 6}, TensorShape({2, 3}));
  ExpectTensorEqual(*ArgMax(x, AsScalar<int32_t>(0), DT_INT64), AsTensor<int64_t>({1, 0, 1}));
  ExpectTensorEqual(*ArgMax(x, AsScalar<int32_t>(1), DT_INT32), AsTensor<int32_t>({1, 0}));
  ExpectTensorEqual(*ArgMax(x, AsScalar<int64_t>(-1), DT_INT64), AsTensor<int64_t>({1, 0}));
  // Ties pick the first.
  ExpectTensorEqual(*ArgMax(AsTensor<int32_t>({2, 5, 5}), AsScalar<int32_t>(0), DT_INT64),
                    AsScalar<int64_t>(1));
  ExpectTensorEqual(*ArgMax(Cube(), AsScalar<int32_t>(1), DT_INT64),
                    AsTensor<int64_t>({2, 2, 2, 2, 2, 2, 2, 2}, TensorShape({2, 4})));
}

TEST(ArgMaxTest, Errors) {
  EXPECT_EQ(ArgMax(AsTensor<float>({}, TensorShape({2, 0})), AsScalar<int32_t>(1), DT_INT64)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ArgMax(M(), AsScalar<int32_t>(2), DT_INT64).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

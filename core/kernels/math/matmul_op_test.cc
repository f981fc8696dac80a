#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsTensor;
using test::ExpectTensorEqual;
using test::Value;

absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  test::KernelRunner runner("MatMul");
  runner.Attr("T", a.dtype()).Attr("transpose_a", ta).Attr("transpose_b", tb);
  auto out = runner.Run({Value(a), Value(b)});
  if (!out.ok()) return out.status();
  return out->at(0);
}

// a = [[1,2,3],[4,5,6]], b = [[7,8],[9,10],[11,12]]; a*b = [[58,64],[139,154]].
template <typename T>
void CheckAllTransposes() {
  Tensor a = AsTensor<T>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Tensor a_t = AsTensor<T>({1, 4, 2, 5, 3, 6}, TensorShape({3, 2}));
  Tensor b = AsTensor<T>({7, 8, 9, 10, 11, 12}, TensorShape({3, 2}));
  Tensor b_t = AsTensor<T>({7, 9, 11, 8, 10, 12}, TensorShape({2, 3}));
  Tensor want = AsTensor<T>({58, 64, 139, 154}, TensorShape({2, 2}));
  ExpectTensorEqual(*MatMul(a, b, false, false), want);
  ExpectTensorEqual(*MatMul(a_t, b, true, false), want);
  ExpectTensorEqual(*MatMul(a, b_t, false, true), want);
  ExpectTensorEqual(*MatMul(a_t, b_t, true, true), want);
}

TEST(MatMulTest, AllTransposesFloat) { CheckAllTransposes<float>(); }
TEST(MatMulTest, AllTransposesDouble) { CheckAllTransposes<double>(); }
TEST(MatMulTest, AllTransposesInt32) { CheckAllTransposes<int32_t>(); }
TEST(MatMulTest, AllTransposesInt64) { CheckAllTransposes<int64_t>(); }

TEST(MatMulTest, InnerDimensionMismatchNamesShapes) {
  auto out = MatMul(AsTensor<float>(std::vector<float>(6), TensorShape({2, 3})),
                    AsTensor<float>(std::vector<float>(20), TensorShape({4, 5})), false, false);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("inner dimensions differ: [2,3] x [4,5]"),
            std::string::npos)
      << out.status();
}

TEST(MatMulTest, RejectsNonMatrices) {
  auto out = MatMul(AsTensor<float>({1, 2}), AsTensor<float>({1, 2}), false, false);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MatMulTest, EmptyShapes) {
  // [0,3] x [3,2] -> [0,2]; [2,0] x [0,2] -> zeros [2,2].
  ExpectTensorEqual(
      *MatMul(AsTensor<float>({}, TensorShape({0, 3})),
              AsTensor<float>(std::vector<float>(6), TensorShape({3, 2})), false, false),
      AsTensor<float>({}, TensorShape({0, 2})));
  ExpectTensorEqual(*MatMul(AsTensor<float>({}, TensorShape({2, 0})),
                            AsTensor<float>({}, TensorShape({0, 2})), false, false),
                    AsTensor<float>({0, 0, 0, 0}, TensorShape({2, 2})));
}

TEST(MatMulTest, LargerMatchesNaiveProduct) {
  const int m = 37, k = 53, n = 29;
  std::vector<float> av(m * k), bv(k * n), want(m * n, 0);
  for (int i = 0; i < m * k; ++i) av[i] = static_cast<float>((i * 7) % 11) - 5;
  for (int i = 0; i < k * n; ++i) bv[i] = static_cast<float>((i * 5) % 13) - 6;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) want[i * n + j] += av[i * k + p] * bv[p * n + j];
  test::ExpectTensorNear(*MatMul(AsTensor<float>(av, TensorShape({m, k})),
                                 AsTensor<float>(bv, TensorShape({k, n})), false, false),
                         AsTensor<float>(want, TensorShape({m, n})));
}

}  // namespace
}  // namespace overseer

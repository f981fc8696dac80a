#include <cmath>
#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsTensor;
using test::KernelRunner;
using test::Value;

std::unique_ptr<KernelRunner> MakeRandom(const std::string& op, int seed, int seed2,
                                         DataType dtype = DT_FLOAT) {
  auto k = std::make_unique<KernelRunner>(op);
  k->Attr("seed", seed).Attr("seed2", seed2).Attr("dtype", dtype).Attr("T", DT_INT32);
  return k;
}

Tensor Draw(KernelRunner* k, const std::vector<int32_t>& shape) {
  auto out = k->Run({Value(AsTensor<int32_t>(shape))});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->at(0) : Tensor();
}

struct Moments {
  double mean = 0, stddev = 0, min = 1e300, max = -1e300;
};

template <typename T>
Moments ComputeMoments(const Tensor& t) {
  Moments m;
  const T* p = t.data<T>();
  const int64_t n = t.NumElements();
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += p[i];
    sq += static_cast<double>(p[i]) * p[i];
    m.min = std::min<double>(m.min, p[i]);
    m.max = std::max<double>(m.max, p[i]);
  }
  m.mean = sum / n;
  m.stddev = std::sqrt(sq / n - m.mean * m.mean);
  return m;
}

class RandomOpTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RandomOpTest, SeededIsReproducibleAndAdvances) {
  auto a = MakeRandom(GetParam(), 7, 3);
  auto b = MakeRandom(GetParam(), 7, 3);
  Tensor a1 = Draw(a.get(), {4, 5}), a2 = Draw(a.get(), {4, 5});
  Tensor b1 = Draw(b.get(), {4, 5}), b2 = Draw(b.get(), {4, 5});
  EXPECT_TRUE(a1.Equals(b1));
  EXPECT_TRUE(a2.Equals(b2));
  EXPECT_FALSE(a1.Equals(a2));
  EXPECT_EQ(a1.shape(), TensorShape({4, 5}));

  auto other_seed2 = MakeRandom(GetParam(), 7, 4);
  EXPECT_FALSE(Draw(other_seed2.get(), {4, 5}).Equals(a1));
  auto only_seed2 = MakeRandom(GetParam(), 0, 3);
  auto only_seed2_again = MakeRandom(GetParam(), 0, 3);
  EXPECT_TRUE(Draw(only_seed2.get(), {8}).Equals(Draw(only_seed2_again.get(), {8})));
}

TEST_P(RandomOpTest, UnseededDiffers) {
  auto a = MakeRandom(GetParam(), 0, 0);
  auto b = MakeRandom(GetParam(), 0, 0);
  EXPECT_FALSE(Draw(a.get(), {64}).Equals(Draw(b.get(), {64})));
}

TEST_P(RandomOpTest, EmptyAndBadShapes) {
  auto k = MakeRandom(GetParam(), 1, 1, DT_DOUBLE);
  Tensor empty = Draw(k.get(), {3, 0});
  EXPECT_EQ(empty.shape(), TensorShape({3, 0}));
  EXPECT_EQ(empty.dtype(), DT_DOUBLE);
  EXPECT_EQ(k->Run({Value(AsTensor<int32_t>({2, -1}))}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(All, RandomOpTest,
                         ::testing::Values("RandomUniform", "RandomNormal", "TruncatedNormal"));

TEST(RandomUniformTest, Moments) {
  auto k = MakeRandom("RandomUniform", 11, 0);
  Moments m = ComputeMoments<float>(Draw(k.get(), {10000}));
  EXPECT_NEAR(m.mean, 0.5, 0.02);
  EXPECT_NEAR(m.stddev, std::sqrt(1.0 / 12), 0.02);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
}

TEST(RandomNormalTest, Moments) {
  auto k = MakeRandom("RandomNormal", 12, 0, DT_DOUBLE);
  Moments m = ComputeMoments<double>(Draw(k.get(), {10001}));
  EXPECT_NEAR(m.mean, 0.0, 0.05);
  EXPECT_NEAR(m.stddev, 1.0, 0.05);
  EXPECT_LT(m.min, -2.5);  // Tails exist (P(all > -2.5) over 10k draws is ~0).
}

TEST(TruncatedNormalTest, MomentsAndBounds) {
  auto k = MakeRandom("TruncatedNormal", 13, 0);
  Moments m = ComputeMoments<float>(Draw(k.get(), {10000}));
  EXPECT_NEAR(m.mean, 0.0, 0.05);
  EXPECT_NEAR(m.stddev, 0.8796, 0.05);  // Standard normal truncated to [-2, 2].
  EXPECT_GE(m.min, -2.0);
  EXPECT_LE(m.max, 2.0);
}

}  // namespace
}  // namespace overseer

#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsScalar;
using test::AsTensor;
using test::ExpectTensorEqual;
using test::Value;

Tensor Cast(const Tensor& x, DataType dst) {
  test::KernelRunner runner("Cast");
  runner.Attr("SrcT", x.dtype()).Attr("DstT", dst);
  auto out = runner.Run({Value(x)});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->at(0) : Tensor();
}

TEST(CastTest, BetweenEveryKind) {
  ExpectTensorEqual(Cast(AsTensor<float>({1.7f, -1.7f, 0}), DT_INT32),
                    AsTensor<int32_t>({1, -1, 0}));
  ExpectTensorEqual(Cast(AsTensor<int32_t>({3, -4}), DT_FLOAT), AsTensor<float>({3, -4}));
  ExpectTensorEqual(Cast(AsTensor<int64_t>({1LL << 40}), DT_DOUBLE),
                    AsTensor<double>({static_cast<double>(1LL << 40)}));
  ExpectTensorEqual(Cast(AsTensor<double>({2.5}), DT_INT64), AsTensor<int64_t>({2}));
  ExpectTensorEqual(Cast(AsTensor<float>({0, 0.5f, -2}), DT_BOOL),
                    AsTensor<bool>({false, true, true}));
  ExpectTensorEqual(Cast(AsTensor<bool>({true, false}), DT_FLOAT), AsTensor<float>({1, 0}));
  ExpectTensorEqual(Cast(AsTensor<bool>({true, false}), DT_INT64), AsTensor<int64_t>({1, 0}));
  ExpectTensorEqual(Cast(AsTensor<int32_t>({}, TensorShape({0, 2})), DT_DOUBLE),
                    AsTensor<double>({}, TensorShape({0, 2})));
}

TEST(CastTest, SameTypeSharesTheBuffer) {
  Tensor x = AsTensor<float>({1, 2});
  Tensor y = Cast(x, DT_FLOAT);
  EXPECT_TRUE(y.SharesBufferWith(x));
}

absl::StatusOr<Tensor> Select(const Tensor& c, const Tensor& t, const Tensor& e) {
  test::KernelRunner runner("Select");
  runner.Attr("T", t.dtype());
  auto out = runner.Run({Value(c), Value(t), Value(e)});
  if (!out.ok()) return out.status();
  return out->at(0);
}

TEST(SelectTest, SameShape) {
  auto out = Select(AsTensor<bool>({true, false, true}), AsTensor<float>({1, 2, 3}),
                    AsTensor<float>({10, 20, 30}));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(*out, AsTensor<float>({1, 20, 3}));
}

TEST(SelectTest, ScalarCondition) {
  Tensor t = AsTensor<int32_t>({1, 2}), e = AsTensor<int32_t>({3, 4});
  ExpectTensorEqual(*Select(AsScalar<bool>(true), t, e), t);
  ExpectTensorEqual(*Select(AsScalar<bool>(false), t, e), e);
}

TEST(SelectTest, VectorConditionPicksRows) {
  // TensorFlow's form: condition [2] selects rows of [2,2] even though numpy rules would
  // align it with the columns.
  auto out =
      Select(AsTensor<bool>({true, false}), AsTensor<int64_t>({1, 2, 3, 4}, TensorShape({2, 2})),
             AsTensor<int64_t>({10, 20, 30, 40}, TensorShape({2, 2})));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(*out, AsTensor<int64_t>({1, 2, 30, 40}, TensorShape({2, 2})));
  auto bad = Select(AsTensor<bool>({true, false, true}),
                    AsTensor<int64_t>({1, 2, 3, 4}, TensorShape({2, 2})),
                    AsTensor<int64_t>({10, 20, 30, 40}, TensorShape({2, 2})));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SelectTest, Broadcasting) {
  // condition [2,1], t scalar, e [3] -> [2,3].
  auto out = Select(AsTensor<bool>({true, false}, TensorShape({2, 1})), AsScalar<double>(0),
                    AsTensor<double>({1, 2, 3}));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(*out, AsTensor<double>({0, 0, 0, 1, 2, 3}, TensorShape({2, 3})));
  // condition [3] against scalars.
  out = Select(AsTensor<bool>({false, true, false}), AsScalar<bool>(true), AsScalar<bool>(false));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(*out, AsTensor<bool>({false, true, false}));
  auto bad = Select(AsTensor<bool>({true, false}, TensorShape({2, 1})), AsTensor<float>({1, 2, 3}),
                    AsTensor<float>({1, 2, 3, 4}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[3] vs. [4]"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace overseer

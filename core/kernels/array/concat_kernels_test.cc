#include <string>
#include <vector>

#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsScalar;
using test::AsTensor;
using test::ExpectTensorEqual;
using test::KernelRunner;
using test::Value;

TEST(PackTest, AlongEachAxis) {
  Tensor a = AsTensor<int32_t>({1, 2, 3}), b = AsTensor<int32_t>({4, 5, 6});
  KernelRunner k0("Pack");
  k0.Attr("T", DT_INT32).Attr("N", 2);
  auto out = k0.Run({Value(a), Value(b)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}));

  KernelRunner k1("Pack");
  k1.Attr("T", DT_INT32).Attr("N", 2).Attr("axis", -1);
  out = k1.Run({Value(a), Value(b)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<int32_t>({1, 4, 2, 5, 3, 6}, {3, 2}));

  KernelRunner scalars("Pack");
  scalars.Attr("T", DT_STRING).Attr("N", 2);
  out = scalars.Run({Value(AsScalar<std::string>("x")), Value(AsScalar<std::string>("y"))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<std::string>({"x", "y"}));

  EXPECT_EQ(k0.Run({Value(a), Value(AsTensor<int32_t>({1}))}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(UnpackTest, SplitsAlongAxis) {
  KernelRunner k("Unpack");
  k.Attr("T", DT_FLOAT).Attr("num", 3).Attr("axis", 1);
  auto out = k.Run({Value(AsTensor<float>({1, 2, 3, 4, 5, 6}, {2, 3}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  ExpectTensorEqual(out->at(0), AsTensor<float>({1, 4}));
  ExpectTensorEqual(out->at(1), AsTensor<float>({2, 5}));
  ExpectTensorEqual(out->at(2), AsTensor<float>({3, 6}));

  EXPECT_EQ(k.Run({Value(AsTensor<float>({1, 2}, {1, 2}))}).status().code(),
            absl::StatusCode::kInvalidArgument);

  KernelRunner empty("Unpack");
  empty.Attr("T", DT_FLOAT).Attr("num", 2);
  out = empty.Run({Value(AsTensor<float>({}, {2, 0}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(1), AsTensor<float>({}, {0}));
}

TEST(ConcatV2Test, AlongAxes) {
  KernelRunner k("ConcatV2");
  k.Attr("T", DT_FLOAT).Attr("N", 2);
  Tensor a = AsTensor<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = AsTensor<float>({5, 6}, {2, 1});
  auto out = k.Run({Value(a), Value(b), Value(AsScalar<int32_t>(1))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({1, 2, 5, 3, 4, 6}, {2, 3}));

  out = k.Run({Value(a), Value(AsTensor<float>({7, 8}, {1, 2})), Value(AsScalar<int32_t>(-2))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({1, 2, 3, 4, 7, 8}, {3, 2}));

  out = k.Run({Value(a), Value(AsTensor<float>({}, {0, 2})), Value(AsScalar<int32_t>(0))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), a);

  out = k.Run({Value(a), Value(b), Value(AsScalar<int32_t>(0))});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("[2,1]"), std::string::npos) << out.status();
  out = k.Run({Value(a), Value(b), Value(AsScalar<int32_t>(2))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = k.Run({Value(AsScalar<float>(1)), Value(AsScalar<float>(2)), Value(AsScalar<int32_t>(0))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConcatOffsetTest, Offsets) {
  KernelRunner k("ConcatOffset");
  k.Attr("N", 3);
  auto out = k.Run({Value(AsScalar<int32_t>(1)), Value(AsTensor<int32_t>({2, 3, 5})),
                    Value(AsTensor<int32_t>({2, 7, 5})), Value(AsTensor<int32_t>({2, 1, 5}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<int32_t>({0, 0, 0}));
  ExpectTensorEqual(out->at(1), AsTensor<int32_t>({0, 3, 0}));
  ExpectTensorEqual(out->at(2), AsTensor<int32_t>({0, 10, 0}));

  out = k.Run({Value(AsScalar<int32_t>(1)), Value(AsTensor<int32_t>({2, 3})),
               Value(AsTensor<int32_t>({4, 7})), Value(AsTensor<int32_t>({2, 1}))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

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

absl::StatusOr<std::vector<Tensor>> Gather(const Tensor& params, const Tensor& indices,
                                           const Tensor& axis) {
  KernelRunner k("GatherV2");
  k.Attr("Tparams", params.dtype()).Attr("Tindices", indices.dtype()).Attr("Taxis", axis.dtype());
  return k.Run({Value(params), Value(indices), Value(axis)});
}

// As TensorFlow's gather_op_test: rows at the indices, any index shape, other axes,
// and out-of-range indices refused with the index named.
TEST(GatherTest, RowsColumnsAndErrors) {
  const Tensor params = AsTensor<float>({0, 1, 2, 10, 11, 12, 20, 21, 22}, TensorShape({3, 3}));
  auto rows = Gather(params, AsTensor<int32_t>({2, 0, 2}), AsScalar<int32_t>(0));
  ASSERT_TRUE(rows.ok()) << rows.status();
  ExpectTensorEqual(rows->at(0),
                    AsTensor<float>({20, 21, 22, 0, 1, 2, 20, 21, 22}, TensorShape({3, 3})));
  auto matrix =
      Gather(params, AsTensor<int64_t>({1, 0, 1, 1}, TensorShape({2, 2})), AsScalar<int64_t>(0));
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ(matrix->at(0).shape(), TensorShape({2, 2, 3}));
  auto columns = Gather(params, AsTensor<int32_t>({2}), AsScalar<int32_t>(-1));
  ASSERT_TRUE(columns.ok()) << columns.status();
  ExpectTensorEqual(columns->at(0), AsTensor<float>({2, 12, 22}, TensorShape({3, 1})));
  auto strings =
      Gather(AsTensor<std::string>({"a", "b"}), AsScalar<int32_t>(1), AsScalar<int32_t>(0));
  ASSERT_TRUE(strings.ok()) << strings.status();
  ExpectTensorEqual(strings->at(0), AsScalar<std::string>("b"));

  auto bad = Gather(params, AsTensor<int32_t>({0, 3}), AsScalar<int32_t>(0));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("indices[1] = 3 is not in [0, 3)"), std::string::npos)
      << bad.status();
  EXPECT_EQ(Gather(params, AsTensor<int32_t>({0}), AsScalar<int32_t>(2)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

absl::StatusOr<std::vector<Tensor>> SegmentSum(const Tensor& data, const Tensor& ids, int32_t num) {
  KernelRunner k("UnsortedSegmentSum");
  k.Attr("T", data.dtype()).Attr("Tindices", ids.dtype()).Attr("Tnumsegments", DT_INT32);
  return k.Run({Value(data), Value(ids), Value(AsScalar<int32_t>(num))});
}

// As TensorFlow's segment_reduction_ops_test: sums per segment, empty segments zero,
// negative ids dropped, ids past num_segments refused.
TEST(UnsortedSegmentSumTest, SumsDropsAndRefuses) {
  const Tensor data = AsTensor<float>({1, 2, 3, 4, 5, 6, 7, 8}, TensorShape({4, 2}));
  auto sums = SegmentSum(data, AsTensor<int32_t>({0, 2, 0, -1}), 3);
  ASSERT_TRUE(sums.ok()) << sums.status();
  ExpectTensorEqual(sums->at(0), AsTensor<float>({6, 8, 0, 0, 3, 4}, TensorShape({3, 2})));
  auto all = SegmentSum(data, AsTensor<int64_t>({0, 0, 0, 0, 1, 1, 1, 1}, TensorShape({4, 2})), 2);
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectTensorEqual(all->at(0), AsTensor<float>({10, 26}));
  auto past = SegmentSum(data, AsTensor<int32_t>({0, 1, 2, 3}), 3);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(past.status().message().find("segment_ids[3] = 3"), std::string::npos) << past.status();
  EXPECT_EQ(SegmentSum(data, AsTensor<int32_t>({0, 1}), 3).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

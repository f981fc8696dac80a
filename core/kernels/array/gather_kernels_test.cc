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

// As TensorFlow's dynamic_partition_op_test and dynamic_stitch_op_test.
TEST(DynamicPartitionTest, SlicesGoToTheirPartitionsInOrder) {
  KernelRunner k("DynamicPartition");
  k.Attr("T", DT_FLOAT).Attr("num_partitions", int64_t{3});
  auto out = k.Run({Value(AsTensor<float>({0, 1, 2, 3, 4, 5, 6, 7}, TensorShape({4, 2}))),
                    Value(AsTensor<int32_t>({2, 0, 2, 2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  ExpectTensorEqual(out->at(0), AsTensor<float>({2, 3}, TensorShape({1, 2})));
  EXPECT_EQ(out->at(1).shape(), TensorShape({0, 2}));
  ExpectTensorEqual(out->at(2), AsTensor<float>({0, 1, 4, 5, 6, 7}, TensorShape({3, 2})));
  auto bad = k.Run({Value(AsTensor<float>({0, 1})), Value(AsTensor<int32_t>({0, 3}))});
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("partitions[1] = 3 is not in [0, 3)"), std::string::npos);
  auto shape = k.Run({Value(AsTensor<float>({0, 1})), Value(AsTensor<int32_t>({0, 1, 2}))});
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DynamicStitchTest, MergesByIndexLaterWins) {
  KernelRunner k("DynamicStitch");
  k.Attr("T", DT_STRING).Attr("N", int64_t{2});
  auto out =
      k.Run({Value(AsTensor<int32_t>({0, 4})), Value(AsTensor<int32_t>({1, 0})),
             Value(AsTensor<std::string>({"a", "e"})), Value(AsTensor<std::string>({"b", "z"}))});
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 0 from the later input; rows 2 and 3 given by no one stay empty.
  ExpectTensorEqual(out->at(0), AsTensor<std::string>({"z", "b", "", "", "e"}));
  auto negative = k.Run({Value(AsTensor<int32_t>({-1})), Value(AsTensor<int32_t>({0})),
                         Value(AsTensor<std::string>({"a"})), Value(AsTensor<std::string>({"b"}))});
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RangeTest, IntegersFloatsAndErrors) {
  auto run = [](const Tensor& start, const Tensor& limit, const Tensor& delta) {
    KernelRunner k("Range");
    k.Attr("Tidx", start.dtype());
    return k.Run({Value(start), Value(limit), Value(delta)});
  };
  auto ints = run(AsScalar<int32_t>(3), AsScalar<int32_t>(10), AsScalar<int32_t>(3));
  ASSERT_TRUE(ints.ok()) << ints.status();
  ExpectTensorEqual(ints->at(0), AsTensor<int32_t>({3, 6, 9}));
  auto down = run(AsScalar<int64_t>(5), AsScalar<int64_t>(1), AsScalar<int64_t>(-2));
  ASSERT_TRUE(down.ok()) << down.status();
  ExpectTensorEqual(down->at(0), AsTensor<int64_t>({5, 3}));
  auto floats = run(AsScalar<float>(0), AsScalar<float>(1), AsScalar<float>(0.25f));
  ASSERT_TRUE(floats.ok()) << floats.status();
  ExpectTensorEqual(floats->at(0), AsTensor<float>({0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(run(AsScalar<int32_t>(0), AsScalar<int32_t>(3), AsScalar<int32_t>(0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run(AsScalar<int32_t>(5), AsScalar<int32_t>(3), AsScalar<int32_t>(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// As TensorFlow's unique_op_test: distinct values in order of first appearance, and
// where each element went.
TEST(UniqueTest, FirstAppearanceOrderAndPositions) {
  for (DataType out_idx : {DT_INT32, DT_INT64}) {
    KernelRunner k("Unique");
    k.Attr("T", DT_INT64).Attr("out_idx", out_idx);
    auto out = k.Run({Value(AsTensor<int64_t>({7, 3, 7, 9, 3, 3}))});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensorEqual(out->at(0), AsTensor<int64_t>({7, 3, 9}));
    if (out_idx == DT_INT32) {
      ExpectTensorEqual(out->at(1), AsTensor<int32_t>({0, 1, 0, 2, 1, 1}));
    } else {
      ExpectTensorEqual(out->at(1), AsTensor<int64_t>({0, 1, 0, 2, 1, 1}));
    }
  }
  KernelRunner f("Unique");
  f.Attr("T", DT_FLOAT).Attr("out_idx", DT_INT32);
  auto empty = f.Run({Value(Tensor(DT_FLOAT, TensorShape({0})))});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->at(0).shape(), TensorShape({0}));
  auto matrix = f.Run({Value(AsTensor<float>({1, 2}, TensorShape({1, 2})))});
  ASSERT_EQ(matrix.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(matrix.status().message().find("needs a vector"), std::string::npos) << matrix.status();
}

}  // namespace
}  // namespace overseer

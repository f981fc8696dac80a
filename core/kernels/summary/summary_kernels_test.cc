#include <cfloat>
#include <string>
#include <vector>

#include "core/kernels/summary/histogram.h"
#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"
#include "proto/summary.pb.h"

namespace overseer {
namespace {

Summary ParseOutput(const absl::StatusOr<std::vector<Tensor>>& out) {
  EXPECT_TRUE(out.ok()) << out.status();
  Summary summary;
  if (!out.ok()) return summary;
  EXPECT_EQ(out->at(0).dtype(), DT_STRING);
  EXPECT_EQ(out->at(0).shape().dims(), 0);
  EXPECT_TRUE(summary.ParseFromString(out->at(0).scalar<std::string>()));
  return summary;
}

TEST(HistogramTest, DefaultBucketLimitsAreTensorFlows) {
  const std::vector<double>& limits = DefaultHistogramBucketLimits();
  ASSERT_EQ(limits.size() % 2, 1u);
  const size_t mid = limits.size() / 2;
  EXPECT_EQ(limits.front(), -DBL_MAX);
  EXPECT_EQ(limits.back(), DBL_MAX);
  EXPECT_EQ(limits[mid], 0.0);
  EXPECT_DOUBLE_EQ(limits[mid + 1], 1e-12);
  EXPECT_DOUBLE_EQ(limits[mid + 2], 1.1e-12);
  EXPECT_LT(limits[limits.size() - 2], 1e20);
  EXPECT_GE(limits[limits.size() - 2] * 1.1, 1e20 * (1 - 1e-9));
  for (size_t i = 1; i < limits.size(); ++i) EXPECT_LT(limits[i - 1], limits[i]);
  for (size_t i = 0; i < limits.size(); ++i) EXPECT_EQ(limits[i], -limits[limits.size() - 1 - i]);
}

TEST(HistogramTest, EncodesCountsAndCollapsesEmptyRuns) {
  Histogram h;
  for (double v : {1.0, 1.0, 2.0, -3.0}) h.Add(v);
  HistogramProto proto;
  h.EncodeToProto(&proto);
  EXPECT_EQ(proto.min(), -3.0);
  EXPECT_EQ(proto.max(), 2.0);
  EXPECT_EQ(proto.num(), 4.0);
  EXPECT_EQ(proto.sum(), 1.0);
  EXPECT_EQ(proto.sum_squares(), 15.0);
  ASSERT_EQ(proto.bucket_size(), proto.bucket_limit_size());
  double total = 0;
  int non_empty = 0;
  for (int i = 0; i < proto.bucket_size(); ++i) {
    total += proto.bucket(i);
    if (proto.bucket(i) > 0) ++non_empty;
    if (i > 0) {
      EXPECT_FALSE(proto.bucket(i) == 0 && proto.bucket(i - 1) == 0);
    }
  }
  EXPECT_EQ(total, 4.0);
  EXPECT_EQ(non_empty, 3);
  // 1.0 falls in the bucket whose limit is the first edge above it.
  for (int i = 0; i < proto.bucket_size(); ++i) {
    if (proto.bucket(i) == 2.0) {
      EXPECT_GT(proto.bucket_limit(i), 1.0);
      EXPECT_LT(proto.bucket_limit(i), 1.1 + 1e-9);
    }
  }
}

TEST(SummaryKernelsTest, ScalarSummary) {
  test::KernelRunner runner("ScalarSummary");
  runner.Attr("T", DT_FLOAT);
  Summary s = ParseOutput(runner.Run({test::Value(Tensor::FromVector<std::string>({"loss", "acc"})),
                                      test::Value(Tensor::FromVector<float>({0.5f, 0.9f}))}));
  ASSERT_EQ(s.value_size(), 2);
  EXPECT_EQ(s.value(0).tag(), "loss");
  EXPECT_EQ(s.value(0).simple_value(), 0.5f);
  EXPECT_EQ(s.value(1).tag(), "acc");
  EXPECT_EQ(s.value(1).simple_value(), 0.9f);

  test::KernelRunner ints("ScalarSummary");
  ints.Attr("T", DT_INT64);
  s = ParseOutput(ints.Run(
      {test::Value(Tensor::Scalar<std::string>("step")), test::Value(Tensor::Scalar<int64_t>(7))}));
  EXPECT_EQ(s.value(0).simple_value(), 7.0f);
}

TEST(SummaryKernelsTest, ScalarSummaryShapeMismatch) {
  test::KernelRunner runner("ScalarSummary");
  runner.Attr("T", DT_FLOAT);
  auto out = runner.Run({test::Value(Tensor::FromVector<std::string>({"a", "b"})),
                         test::Value(Tensor::FromVector<float>({1.0f}))});
  EXPECT_TRUE(absl::IsInvalidArgument(out.status()));
  EXPECT_NE(out.status().message().find("same shape"), std::string::npos);
}

TEST(SummaryKernelsTest, HistogramSummary) {
  test::KernelRunner runner("HistogramSummary");
  runner.Attr("T", DT_DOUBLE);
  Summary s = ParseOutput(runner.Run({test::Value(Tensor::Scalar<std::string>("weights")),
                                      test::Value(Tensor::FromVector<double>({0.1, 0.2, 5.0}))}));
  ASSERT_EQ(s.value_size(), 1);
  EXPECT_EQ(s.value(0).tag(), "weights");
  EXPECT_EQ(s.value(0).histo().num(), 3.0);
  EXPECT_EQ(s.value(0).histo().min(), 0.1);
  EXPECT_EQ(s.value(0).histo().max(), 5.0);

  auto nan = runner.Run({test::Value(Tensor::Scalar<std::string>("weights")),
                         test::Value(Tensor::FromVector<double>({1.0, std::nan("")}))});
  EXPECT_TRUE(absl::IsInvalidArgument(nan.status()));
  auto bad_tag = runner.Run({test::Value(Tensor::FromVector<std::string>({"a", "b"})),
                             test::Value(Tensor::FromVector<double>({1.0}))});
  EXPECT_TRUE(absl::IsInvalidArgument(bad_tag.status()));
}

TEST(SummaryKernelsTest, TensorSummaryV2CarriesPluginMetadata) {
  SummaryMetadata metadata;
  metadata.mutable_plugin_data()->set_plugin_name("scalars");
  metadata.set_data_class(DATA_CLASS_SCALAR);
  test::KernelRunner runner("TensorSummaryV2");
  runner.Attr("T", DT_FLOAT);
  Summary s = ParseOutput(runner.Run(
      {test::Value(Tensor::Scalar<std::string>("loss")), test::Value(Tensor::Scalar<float>(0.25f)),
       test::Value(Tensor::Scalar<std::string>(metadata.SerializeAsString()))}));
  ASSERT_EQ(s.value_size(), 1);
  EXPECT_EQ(s.value(0).metadata().plugin_data().plugin_name(), "scalars");
  EXPECT_EQ(s.value(0).metadata().data_class(), DATA_CLASS_SCALAR);
  auto value = Tensor::FromProto(s.value(0).tensor());
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->dtype(), DT_FLOAT);
  EXPECT_EQ(value->scalar<float>(), 0.25f);

  auto bad = runner.Run({test::Value(Tensor::Scalar<std::string>("loss")),
                         test::Value(Tensor::Scalar<float>(0.25f)),
                         test::Value(Tensor::Scalar<std::string>("\xff\xff not a proto"))});
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
}

TEST(SummaryKernelsTest, TensorSummaryUsesNodeNameAndAttrs) {
  test::KernelRunner runner("TensorSummary", "my_tensor");
  runner.Attr("T", DT_INT32).Attr("display_name", std::string("Mine"));
  Summary s = ParseOutput(runner.Run({test::Value(Tensor::FromVector<int32_t>({1, 2, 3}))}));
  EXPECT_EQ(s.value(0).tag(), "my_tensor");
  EXPECT_EQ(s.value(0).metadata().display_name(), "Mine");
  EXPECT_EQ(s.value(0).tensor().dtype(), DT_INT32);
}

TEST(SummaryKernelsTest, MergeSummary) {
  Summary a, b;
  a.add_value()->set_tag("x");
  b.add_value()->set_tag("y");
  b.add_value()->set_tag("z");
  test::KernelRunner runner("MergeSummary");
  runner.Attr("N", 2);
  Summary s =
      ParseOutput(runner.Run({test::Value(Tensor::Scalar<std::string>(a.SerializeAsString())),
                              test::Value(Tensor::Scalar<std::string>(b.SerializeAsString()))}));
  ASSERT_EQ(s.value_size(), 3);
  EXPECT_EQ(s.value(2).tag(), "z");

  auto dup = runner.Run({test::Value(Tensor::Scalar<std::string>(a.SerializeAsString())),
                         test::Value(Tensor::Scalar<std::string>(a.SerializeAsString()))});
  EXPECT_TRUE(absl::IsInvalidArgument(dup.status()));
  EXPECT_NE(dup.status().message().find("Duplicate tag x"), std::string::npos);
}

}  // namespace
}  // namespace overseer

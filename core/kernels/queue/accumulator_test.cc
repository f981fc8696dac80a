#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/kernels/queue/conditional_accumulator.h"
#include "core/kernels/testing/kernel_test_util.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsScalar;
using test::AsTensor;
using test::ExpectTensorEqual;
using test::KernelRunner;
using test::Value;

// The accumulator ops of one test, sharing a ResourceMgr.
class AccumulatorTest : public ::testing::Test {
 protected:
  absl::StatusOr<Tensor> Create(const PartialShape& shape, const std::string& reduction = "MEAN",
                                DataType dtype = DT_FLOAT) {
    KernelRunner k("ConditionalAccumulator", "acc");
    k.set_resource_mgr(&mgr_);
    k.Attr("dtype", dtype).Attr("shape", shape).Attr("reduction_type", reduction);
    ASSIGN_OR_RETURN(std::vector<Tensor> out, k.Run({}));
    return out.at(0);
  }
  std::unique_ptr<KernelRunner> Op(const std::string& op) {
    auto k = std::make_unique<KernelRunner>(op);
    k->set_resource_mgr(&mgr_);
    if (op == "AccumulatorApplyGradient" || op == "AccumulatorTakeGradient") {
      k->Attr("dtype", DT_FLOAT);
    }
    return k;
  }
  absl::Status Apply(const Tensor& h, int64_t local_step, const Tensor& grad) {
    return Op("AccumulatorApplyGradient")
        ->Run({Value(h), Value(AsScalar<int64_t>(local_step)), Value(grad)})
        .status();
  }
  absl::StatusOr<Tensor> Take(const Tensor& h, int32_t n) {
    ASSIGN_OR_RETURN(std::vector<Tensor> out,
                     Op("AccumulatorTakeGradient")->Run({Value(h), Value(AsScalar<int32_t>(n))}));
    return out.at(0);
  }
  int NumAccumulated(const Tensor& h) {
    auto out = Op("AccumulatorNumAccumulated")->Run({Value(h)});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->at(0).scalar<int32_t>() : -1;
  }
  std::shared_ptr<ConditionalAccumulator> Resource() {
    auto r = mgr_.Lookup<ConditionalAccumulator>("localhost", "acc");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : nullptr;
  }

  ResourceMgr mgr_;
};

TEST_F(AccumulatorTest, MeanOfTheGradientsOfOneStepThenTheStepAdvances) {
  auto h = Create(PartialShape({2}));
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_TRUE(Apply(*h, 0, AsTensor<float>({1, 10})).ok());
  ASSERT_TRUE(Apply(*h, 0, AsTensor<float>({3, 20})).ok());
  EXPECT_EQ(NumAccumulated(*h), 2);
  auto mean = Take(*h, 2);
  ASSERT_TRUE(mean.ok()) << mean.status();
  ExpectTensorEqual(*mean, AsTensor<float>({2, 15}));
  EXPECT_EQ(NumAccumulated(*h), 0);
  EXPECT_EQ(Resource()->global_step(), 1);

  // A gradient of step 0 is now stale: dropped, not an error; step 1 and later count.
  ASSERT_TRUE(Apply(*h, 0, AsTensor<float>({100, 100})).ok());
  EXPECT_EQ(NumAccumulated(*h), 0);
  EXPECT_EQ(Resource()->stale_dropped(), 1);
  ASSERT_TRUE(Apply(*h, 1, AsTensor<float>({4, 4})).ok());
  ASSERT_TRUE(Apply(*h, 5, AsTensor<float>({6, 6})).ok());
  mean = Take(*h, 2);
  ASSERT_TRUE(mean.ok()) << mean.status();
  ExpectTensorEqual(*mean, AsTensor<float>({5, 5}));

  // SetGlobalStep moves the step (a chief after a restore does).
  ASSERT_TRUE(Op("AccumulatorSetGlobalStep")->Run({Value(*h), Value(AsScalar<int64_t>(7))}).ok());
  EXPECT_EQ(Resource()->global_step(), 7);
  ASSERT_TRUE(Apply(*h, 6, AsTensor<float>({1, 1})).ok());
  EXPECT_EQ(NumAccumulated(*h), 0);
}

TEST_F(AccumulatorTest, SumReduction) {
  auto h = Create(PartialShape({1}), "SUM");
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_TRUE(Apply(*h, 0, AsTensor<float>({1})).ok());
  ASSERT_TRUE(Apply(*h, 0, AsTensor<float>({2})).ok());
  ASSERT_TRUE(Apply(*h, 0, AsTensor<float>({4})).ok());
  auto sum = Take(*h, 3);
  ASSERT_TRUE(sum.ok()) << sum.status();
  ExpectTensorEqual(*sum, AsTensor<float>({7}));
}

TEST_F(AccumulatorTest, TakeWaitsForEnoughGradientsAndCanBeCancelled) {
  auto h = Create(PartialShape({1}));
  ASSERT_TRUE(h.ok()) << h.status();
  absl::StatusOr<Tensor> got;
  std::thread taker([&] { got = Take(*h, 2); });
  ASSERT_TRUE(Apply(*h, 0, AsTensor<float>({1})).ok());
  ASSERT_TRUE(Apply(*h, 0, AsTensor<float>({5})).ok());
  taker.join();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectTensorEqual(*got, AsTensor<float>({3}));

  CancellationManager cm;
  auto take = Op("AccumulatorTakeGradient");
  take->set_cancellation(&cm);
  absl::Status cancelled_status;
  std::thread cancelled([&] {
    cancelled_status = take->Run({Value(*h), Value(AsScalar<int32_t>(1))}).status();
  });
  cm.StartCancel(absl::CancelledError("step cancelled"));
  cancelled.join();
  EXPECT_EQ(cancelled_status.code(), absl::StatusCode::kCancelled);

  // CancelTakes wakes a waiting take and fails later ones until SetGlobalStep.
  std::thread waiting([&] { got = Take(*h, 1); });
  ASSERT_TRUE(Op("AccumulatorCancelTakes")->Run({Value(*h)}).ok());
  waiting.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(Apply(*h, 1, AsTensor<float>({9})).ok());
  EXPECT_EQ(Take(*h, 1).status().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(Op("AccumulatorSetGlobalStep")->Run({Value(*h), Value(AsScalar<int64_t>(1))}).ok());
  got = Take(*h, 1);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectTensorEqual(*got, AsTensor<float>({9}));
}

TEST_F(AccumulatorTest, BadInputIsInvalidArgumentAndChangesNothing) {
  auto h = Create(PartialShape({2}));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(Apply(*h, 0, AsTensor<float>({1, 2, 3})).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Op("AccumulatorApplyGradient")
                ->Run({Value(*h), Value(AsScalar<int32_t>(0)), Value(AsTensor<float>({1, 2}))})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Take(*h, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NumAccumulated(*h), 0);
  // Another signature under the same name conflicts; unknown dtypes and reductions fail.
  EXPECT_EQ(Create(PartialShape({3})).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Create(PartialShape({2}), "MAX").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Create(PartialShape({2}), "MEAN", DT_INT32).ok());
  EXPECT_EQ(Take(AsScalar<std::string>("localhost/none"), 1).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Take(AsScalar<std::string>("no-slash"), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// An unknown dimension takes the first gradient's shape; later ones must match it.
TEST_F(AccumulatorTest, PartialShapeFixedByTheFirstGradient) {
  auto h = Create(PartialShape({-1}));
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_TRUE(Apply(*h, 0, AsTensor<float>({1, 2, 3})).ok());
  EXPECT_EQ(Apply(*h, 0, AsTensor<float>({1, 2})).code(), absl::StatusCode::kInvalidArgument);
  auto got = Take(*h, 1);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectTensorEqual(*got, AsTensor<float>({1, 2, 3}));
}

}  // namespace
}  // namespace overseer

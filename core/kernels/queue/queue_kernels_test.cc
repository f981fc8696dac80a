#include <memory>
#include <string>
#include <thread>
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

// The queue ops of one test, sharing a ResourceMgr.
class QueueKernelsTest : public ::testing::Test {
 protected:
  Tensor CreateQueue(int capacity = -1, const std::string& name = "q") {
    KernelRunner k("FIFOQueue", name);
    k.set_resource_mgr(&mgr_);
    k.Attr("component_types", std::vector<DataType>{DT_FLOAT, DT_STRING});
    k.Attr("capacity", capacity);
    auto out = k.Run({});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->at(0) : Tensor();
  }
  std::unique_ptr<KernelRunner> Op(const std::string& op) {
    auto k = std::make_unique<KernelRunner>(op);
    k->set_resource_mgr(&mgr_);
    if (op == "QueueEnqueue" || op == "QueueEnqueueMany") {
      k->Attr("Tcomponents", std::vector<DataType>{DT_FLOAT, DT_STRING});
    } else if (op == "QueueDequeue" || op == "QueueDequeueMany" || op == "QueueDequeueUpTo") {
      k->Attr("component_types", std::vector<DataType>{DT_FLOAT, DT_STRING});
    }
    return k;
  }
  int Size(const Tensor& handle) {
    auto out = Op("QueueSize")->Run({Value(handle)});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->at(0).scalar<int32_t>() : -1;
  }

  ResourceMgr mgr_;
};

TEST_F(QueueKernelsTest, HandleNamesTheResource) {
  Tensor handle = CreateQueue();
  ExpectTensorEqual(handle, AsScalar<std::string>("localhost/q"));
  EXPECT_EQ(Size(handle), 0);
  // A second creation with another capacity conflicts.
  KernelRunner k("FIFOQueue", "q");
  k.set_resource_mgr(&mgr_);
  k.Attr("component_types", std::vector<DataType>{DT_FLOAT, DT_STRING}).Attr("capacity", 3);
  EXPECT_EQ(k.Run({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Op("QueueSize")->Run({Value(AsScalar<std::string>("localhost/none"))}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(QueueKernelsTest, EnqueueDequeueAndMany) {
  Tensor h = CreateQueue();
  auto enqueue = Op("QueueEnqueue");
  ASSERT_TRUE(
      enqueue->Run({Value(h), Value(AsScalar<float>(1)), Value(AsScalar<std::string>("a"))}).ok());
  auto many = Op("QueueEnqueueMany");
  ASSERT_TRUE(many->Run({Value(h), Value(AsTensor<float>({2, 3})),
                         Value(AsTensor<std::string>({"b", "c"}))})
                  .ok());
  EXPECT_EQ(Size(h), 3);

  auto out = Op("QueueDequeue")->Run({Value(h)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsScalar<float>(1));
  ExpectTensorEqual(out->at(1), AsScalar<std::string>("a"));

  out = Op("QueueDequeueMany")->Run({Value(h), Value(AsScalar<int32_t>(2))});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensorEqual(out->at(0), AsTensor<float>({2, 3}));
  ExpectTensorEqual(out->at(1), AsTensor<std::string>({"b", "c"}));
}

TEST_F(QueueKernelsTest, MismatchesAreInvalid) {
  Tensor h = CreateQueue();
  auto enqueue = Op("QueueEnqueue");
  absl::Status s =
      enqueue->Run({Value(h), Value(AsScalar<float>(1)), Value(AsScalar<float>(2))}).status();
  // The kernel's declared Tcomponents say string, so the value itself is checked.
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  KernelRunner wrong("QueueDequeue");
  wrong.set_resource_mgr(&mgr_);
  wrong.Attr("component_types", std::vector<DataType>{DT_INT32});
  EXPECT_EQ(wrong.Run({Value(h)}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(QueueKernelsTest, CloseThenDrainThenOutOfRange) {
  Tensor h = CreateQueue();
  ASSERT_TRUE(Op("QueueEnqueue")
                  ->Run({Value(h), Value(AsScalar<float>(1)), Value(AsScalar<std::string>("a"))})
                  .ok());
  ASSERT_TRUE(Op("QueueClose")->Run({Value(h)}).ok());
  EXPECT_EQ(Op("QueueEnqueue")
                ->Run({Value(h), Value(AsScalar<float>(1)), Value(AsScalar<std::string>("a"))})
                .status()
                .code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(Op("QueueDequeueMany")->Run({Value(h), Value(AsScalar<int32_t>(2))}).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(Op("QueueDequeue")->Run({Value(h)}).ok());
  EXPECT_EQ(Op("QueueDequeue")->Run({Value(h)}).status().code(), absl::StatusCode::kOutOfRange);
}

// Where DequeueMany fails on a closed queue, DequeueUpTo gives the smaller final batch.
TEST_F(QueueKernelsTest, DequeueUpToGivesTheFinalSmallerBatch) {
  Tensor h = CreateQueue();
  for (float v : {1.0f, 2.0f, 3.0f}) {
    ASSERT_TRUE(Op("QueueEnqueue")
                    ->Run({Value(h), Value(AsScalar<float>(v)), Value(AsScalar<std::string>("a"))})
                    .ok());
  }
  ASSERT_TRUE(Op("QueueClose")->Run({Value(h)}).ok());
  auto batch = Op("QueueDequeueUpTo")->Run({Value(h), Value(AsScalar<int32_t>(2))});
  ASSERT_TRUE(batch.ok()) << batch.status();
  ExpectTensorEqual(batch->at(0), AsTensor<float>({1, 2}));
  auto last = Op("QueueDequeueUpTo")->Run({Value(h), Value(AsScalar<int32_t>(2))});
  ASSERT_TRUE(last.ok()) << last.status();
  ExpectTensorEqual(last->at(0), AsTensor<float>({3}));
  EXPECT_EQ(Op("QueueDequeueUpTo")->Run({Value(h), Value(AsScalar<int32_t>(2))}).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(QueueKernelsTest, DeadlinesAndTimeouts) {
  Tensor h = CreateQueue();
  auto dequeue = Op("QueueDequeue");
  dequeue->set_deadline(absl::InfinitePast());
  EXPECT_EQ(dequeue->Run({Value(h)}).status().code(), absl::StatusCode::kDeadlineExceeded);

  auto timed = Op("QueueDequeue");
  timed->Attr("timeout_ms", 0);
  EXPECT_EQ(timed->Run({Value(h)}).status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(QueueKernelsTest, BlockedDequeueAcrossThreadsAndCancellation) {
  Tensor h = CreateQueue();
  absl::StatusOr<std::vector<Tensor>> got;
  std::thread consumer([&] { got = Op("QueueDequeue")->Run({Value(h)}); });
  EXPECT_TRUE(Op("QueueEnqueue")
                  ->Run({Value(h), Value(AsScalar<float>(7)), Value(AsScalar<std::string>("x"))})
                  .ok());
  consumer.join();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectTensorEqual(got->at(0), AsScalar<float>(7));

  CancellationManager cm;
  auto dequeue = Op("QueueDequeue");
  dequeue->set_cancellation(&cm);
  std::thread cancelled([&] { got = dequeue->Run({Value(h)}); });
  cm.StartCancel(absl::CancelledError("step cancelled"));
  cancelled.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled);
}

// The other queue kinds share the queue ops; a kind or min_after_dequeue that differs
// from the existing queue's is a conflict.
TEST_F(QueueKernelsTest, RandomShuffleAndPaddingQueues) {
  KernelRunner shuffle("RandomShuffleQueue", "s");
  shuffle.set_resource_mgr(&mgr_);
  shuffle.Attr("component_types", std::vector<DataType>{DT_FLOAT, DT_STRING})
      .Attr("min_after_dequeue", 1)
      .Attr("seed", 3);
  auto h = shuffle.Run({});
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_TRUE(Op("QueueEnqueueMany")
                  ->Run({Value(h->at(0)), Value(AsTensor<float>({1, 2, 3})),
                         Value(AsTensor<std::string>({"a", "b", "c"}))})
                  .ok());
  auto two = Op("QueueDequeueMany")->Run({Value(h->at(0)), Value(AsScalar<int32_t>(2))});
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(Size(h->at(0)), 1);

  KernelRunner as_fifo("FIFOQueue", "s");
  as_fifo.set_resource_mgr(&mgr_);
  as_fifo.Attr("component_types", std::vector<DataType>{DT_FLOAT, DT_STRING});
  absl::Status s = as_fifo.Run({}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("exists as a RandomShuffleQueue"), std::string::npos) << s;

  KernelRunner bad("RandomShuffleQueue", "bad");
  bad.set_resource_mgr(&mgr_);
  bad.Attr("component_types", std::vector<DataType>{DT_FLOAT})
      .Attr("capacity", 2)
      .Attr("min_after_dequeue", 2);
  EXPECT_EQ(bad.Run({}).status().code(), absl::StatusCode::kInvalidArgument);

  KernelRunner padding("PaddingFIFOQueue", "p");
  padding.set_resource_mgr(&mgr_);
  padding.Attr("component_types", std::vector<DataType>{DT_FLOAT})
      .Attr("shapes", std::vector<PartialShape>{PartialShape({-1})});
  auto p = padding.Run({});
  ASSERT_TRUE(p.ok()) << p.status();
  auto enqueue = Op("QueueEnqueue");
  enqueue->Attr("Tcomponents", std::vector<DataType>{DT_FLOAT});
  ASSERT_TRUE(enqueue->Run({Value(p->at(0)), Value(AsTensor<float>({1}))}).ok());
  ASSERT_TRUE(enqueue->Run({Value(p->at(0)), Value(AsTensor<float>({2, 3}))}).ok());
  KernelRunner dequeue("QueueDequeueMany");
  dequeue.set_resource_mgr(&mgr_);
  dequeue.Attr("component_types", std::vector<DataType>{DT_FLOAT});
  auto padded = dequeue.Run({Value(p->at(0)), Value(AsScalar<int32_t>(2))});
  ASSERT_TRUE(padded.ok()) << padded.status();
  ExpectTensorEqual(padded->at(0), AsTensor<float>({1, 0, 2, 3}, {2, 2}));

  KernelRunner unshaped("PaddingFIFOQueue", "u");
  unshaped.set_resource_mgr(&mgr_);
  unshaped.Attr("component_types", std::vector<DataType>{DT_FLOAT});
  EXPECT_EQ(unshaped.Run({}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

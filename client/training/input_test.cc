#include "client/training/input.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "client/graph/ops.h"
#include "client/session/client_session.h"
#include "client/training/coordinator.h"
#include "client/training/queue_runner.h"
#include "core/resource_mgr.h"
#include "core/tensor_eigen.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

// Five examples (x = 1..5, y = 10x) in a source queue that is closed: a finite input.
struct Source {
  Scope root = Scope::NewRootScope();
  Operation fill, close;
  Output x, y;
  Source() {
    ops::FIFOQueueAttrs attrs;
    attrs.shapes = {PartialShape::Scalar(), PartialShape::Scalar()};
    Output q = ops::FIFOQueue(root.WithOpName("source"), {DT_FLOAT, DT_INT32}, attrs);
    fill = ops::QueueEnqueueMany(root, q,
                                 {Tensor::FromVector<float>({1, 2, 3, 4, 5}),
                                  Tensor::FromVector<int32_t>({10, 20, 30, 40, 50})});
    close = ops::QueueClose(root, q);
    std::vector<Output> element = ops::QueueDequeue(root, q, {DT_FLOAT, DT_INT32});
    x = element[0];
    y = element[1];
  }
};

// Runs `batch` until OUT_OF_RANGE with the queue runners started; returns each
// batch's x values.
std::vector<std::vector<float>> Drain(Source* s, const std::vector<Output>& batch) {
  ResourceMgr resources;
  SessionOptions options;
  options.resource_mgr = &resources;
  auto session = ClientSession::Create(s->root, options);
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<std::vector<float>> batches;
  if (!session.ok()) return batches;
  for (const Operation& op : {s->fill, s->close}) {  // In order: a close first would win.
    const absl::Status ran = (*session)->Run({}, {}, {op}, nullptr);
    EXPECT_TRUE(ran.ok()) << ran;
  }
  Coordinator coord;
  auto started = StartQueueRunners(session->get(), &coord);
  EXPECT_TRUE(started.ok()) << started.status();
  absl::Status run;
  while (run.ok() && batches.size() < 10) {
    std::vector<Tensor> out;
    run = (*session)->Run(batch, &out);
    if (!run.ok()) break;
    EXPECT_EQ(out[1].NumElements(), out[0].NumElements());
    for (int64_t i = 0; i < out[0].NumElements(); ++i) {
      EXPECT_EQ(out[1].flat<int32_t>()(i), static_cast<int32_t>(10 * out[0].flat<float>()(i)));
    }
    batches.emplace_back(out[0].data<float>(), out[0].data<float>() + out[0].NumElements());
  }
  EXPECT_EQ(run.code(), absl::StatusCode::kOutOfRange) << run;
  EXPECT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join().ok());
  return batches;
}
TEST(BatchTest, BatchesInOrderAndDropsTheIncompleteFinalBatch) {
  Source s;
  BatchOptions options;
  options.batch_size = 2;
  options.shapes = {PartialShape::Scalar(), PartialShape::Scalar()};
  auto batch = Batch(s.root, {s.x, s.y}, options);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(Drain(&s, *batch), (std::vector<std::vector<float>>{{1, 2}, {3, 4}}));
}

TEST(BatchTest, AllowSmallerFinalBatchKeepsTheRest) {
  Source s;
  BatchOptions options;
  options.batch_size = 2;
  options.allow_smaller_final_batch = true;
  options.shapes = {PartialShape::Scalar(), PartialShape::Scalar()};
  auto batch = Batch(s.root, {s.x, s.y}, options);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(Drain(&s, *batch), (std::vector<std::vector<float>>{{1, 2}, {3, 4}, {5}}));
}

TEST(BatchTest, BadArgumentsAreInvalidArgument) {
  Source s;
  EXPECT_EQ(Batch(s.root, {}).status().code(), absl::StatusCode::kInvalidArgument);
  // The dequeued element's shape is not inferred: it must be given.
  auto unknown = Batch(s.root, {s.x});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("shapes"), std::string::npos) << unknown.status();
  BatchOptions zero;
  zero.batch_size = 0;
  zero.shapes = {PartialShape::Scalar()};
  EXPECT_EQ(Batch(s.root, {s.x}, zero).status().code(), absl::StatusCode::kInvalidArgument);
  BatchOptions mismatched;
  mismatched.shapes = {PartialShape::Scalar()};
  EXPECT_EQ(Batch(s.root, {s.x, s.y}, mismatched).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// tf.train.shuffle_batch: every example once, x and y of an example together; the
// batch is drawn from what is in the queue.
TEST(ShuffleBatchTest, EveryExampleOnceWithItsLabel) {
  Source s;
  ShuffleBatchOptions options;
  options.batch_size = 2;
  options.capacity = 10;
  options.min_after_dequeue = 2;
  options.seed = 5;
  options.allow_smaller_final_batch = true;
  options.shapes = {PartialShape::Scalar(), PartialShape::Scalar()};
  auto batch = ShuffleBatch(s.root, {s.x, s.y}, options);
  ASSERT_TRUE(batch.ok()) << batch.status();
  std::vector<float> seen;
  for (const std::vector<float>& b : Drain(&s, *batch)) seen.insert(seen.end(), b.begin(), b.end());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<float>{1, 2, 3, 4, 5}));
}

TEST(ShuffleBatchTest, MinAfterDequeueMustBeBelowCapacity) {
  Source s;
  ShuffleBatchOptions options;
  options.capacity = 4;
  options.min_after_dequeue = 4;
  options.shapes = {PartialShape::Scalar()};
  auto batch = ShuffleBatch(s.root, {s.x}, options);
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(batch.status().message().find("min_after_dequeue"), std::string::npos)
      << batch.status();
  options.min_after_dequeue = -1;
  EXPECT_EQ(ShuffleBatch(s.root, {s.x}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// tf.train.batch(dynamic_pad=True): sequences of different lengths, padded with zeros to
// the longest of each batch.
TEST(BatchTest, DynamicPadPadsToTheLongest) {
  Scope root = Scope::NewRootScope();
  ops::FIFOQueueAttrs attrs;
  attrs.shapes = {PartialShape({-1})};
  Output q = ops::FIFOQueue(root.WithOpName("source"), {DT_INT32}, attrs);
  Operation one = ops::QueueEnqueue(root, q, {Tensor::FromVector<int32_t>({1})});
  Operation three = ops::QueueEnqueue(root, q, {Tensor::FromVector<int32_t>({2, 3, 4})});
  Operation close = ops::QueueClose(root, q);
  Output element = ops::QueueDequeue(root, q, {DT_INT32})[0];

  BatchOptions options;
  options.batch_size = 2;
  EXPECT_EQ(Batch(root, {element}, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.dynamic_pad = true;
  EXPECT_EQ(Batch(root, {element}, options).status().code(), absl::StatusCode::kInvalidArgument)
      << "the rank must be known";
  options.shapes = {PartialShape({-1})};
  auto batch = Batch(root, {element}, options);
  ASSERT_TRUE(batch.ok()) << batch.status();

  ResourceMgr resources;
  SessionOptions session_options;
  session_options.resource_mgr = &resources;
  auto session = ClientSession::Create(root, session_options);
  ASSERT_TRUE(session.ok()) << session.status();
  for (const Operation& op : {one, three, close}) {
    ASSERT_TRUE((*session)->Run({}, {}, {op}, nullptr).ok());
  }
  Coordinator coord;
  ASSERT_TRUE(StartQueueRunners(session->get(), &coord).ok());
  std::vector<Tensor> out;
  const absl::Status ran = (*session)->Run({(*batch)[0]}, &out);
  ASSERT_TRUE(ran.ok()) << ran;
  EXPECT_EQ(out[0].shape(), TensorShape({2, 3}));
  EXPECT_EQ(std::vector<int32_t>(out[0].data<int32_t>(), out[0].data<int32_t>() + 6),
            (std::vector<int32_t>{1, 0, 0, 2, 3, 4}));
  EXPECT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join().ok());
}

}  // namespace
}  // namespace overseer

#include "client/training/input.h"

#include <memory>
#include <vector>

#include "client/graph/ops.h"
#include "client/session/client_session.h"
#include "client/training/coordinator.h"
#include "client/training/queue_runner.h"
#include "core/resource_mgr.h"
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

}  // namespace
}  // namespace overseer

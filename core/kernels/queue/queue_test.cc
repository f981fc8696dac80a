#include "core/kernels/queue/queue.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/kernels/testing/kernel_test_util.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using test::AsScalar;
using test::AsTensor;
using test::ExpectTensorEqual;

// A real clock that counts the waits that start, so a test can tell that another thread
// is blocked inside the queue before it acts (no sleeping).
class CountingClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) override {
    {
      absl::MutexLock lock(&count_mu_);
      ++waits_;
    }
    return mu->AwaitWithDeadline(cond, deadline);
  }
  // Blocks until `n` waits have started. The waiter holds the queue's mutex from before
  // the count until it sleeps, so state changes made afterwards under that mutex wake it.
  void AwaitWaits(int n) {
    absl::MutexLock lock(&count_mu_);
    auto reached = [this, n]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return waits_ >= n; };
    count_mu_.Await(absl::Condition(&reached));
  }

 private:
  absl::Mutex count_mu_;
  int waits_ ABSL_GUARDED_BY(count_mu_) = 0;
};

std::shared_ptr<Queue> MakeQueue(int64_t capacity = -1, std::vector<PartialShape> shapes = {}) {
  QueueOptions options;
  options.capacity = capacity;
  auto q = Queue::Create("q", {DT_INT32}, std::move(shapes), options);
  EXPECT_TRUE(q.ok()) << q.status();
  return *q;
}

Queue::Tuple Int(int v) { return {AsScalar<int32_t>(v)}; }

TEST(QueueTest, FirstInFirstOut) {
  auto q = MakeQueue();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q->Enqueue(Int(i), QueueWait()).ok());
  EXPECT_EQ(q->Size(), 3);
  for (int i = 0; i < 3; ++i) {
    auto t = q->Dequeue(QueueWait());
    ASSERT_TRUE(t.ok()) << t.status();
    ExpectTensorEqual(t->at(0), AsScalar<int32_t>(i));
  }
  EXPECT_EQ(q->Size(), 0);
}

TEST(QueueTest, DequeueBlocksUntilEnqueue) {
  auto q = MakeQueue();
  CountingClock clock;
  QueueWait wait;
  wait.clock = &clock;
  absl::StatusOr<Queue::Tuple> got;
  std::thread consumer([&] { got = q->Dequeue(wait); });
  clock.AwaitWaits(1);
  EXPECT_TRUE(q->Enqueue(Int(42), QueueWait()).ok());
  consumer.join();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectTensorEqual(got->at(0), AsScalar<int32_t>(42));
}

TEST(QueueTest, EnqueueBlocksWhileFull) {
  auto q = MakeQueue(/*capacity=*/1);
  ASSERT_TRUE(q->Enqueue(Int(1), QueueWait()).ok());
  CountingClock clock;
  QueueWait wait;
  wait.clock = &clock;
  absl::Status enqueued;
  std::thread producer([&] { enqueued = q->Enqueue(Int(2), wait); });
  clock.AwaitWaits(1);
  EXPECT_EQ(q->Size(), 1);
  auto first = q->Dequeue(QueueWait());
  producer.join();
  ASSERT_TRUE(enqueued.ok()) << enqueued;
  ExpectTensorEqual(first->at(0), AsScalar<int32_t>(1));
  auto second = q->Dequeue(QueueWait());
  ExpectTensorEqual(second->at(0), AsScalar<int32_t>(2));
}

TEST(QueueTest, ManyThroughASmallQueue) {
  auto q = MakeQueue(/*capacity=*/2, {PartialShape({2})});
  absl::StatusOr<Queue::Tuple> got;
  std::thread consumer([&] { got = q->DequeueMany(5, QueueWait()); });
  std::vector<int32_t> values;
  for (int i = 0; i < 10; ++i) values.push_back(i);
  EXPECT_TRUE(q->EnqueueMany({AsTensor<int32_t>(values, {5, 2})}, QueueWait()).ok());
  consumer.join();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectTensorEqual(got->at(0), AsTensor<int32_t>(values, {5, 2}));
}

TEST(QueueTest, CloseSemantics) {
  auto q = MakeQueue();
  ASSERT_TRUE(q->Enqueue(Int(1), QueueWait()).ok());
  ASSERT_TRUE(q->Enqueue(Int(2), QueueWait()).ok());
  q->Close(false);
  absl::Status s = q->Enqueue(Int(3), QueueWait());
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_NE(s.message().find("is closed"), std::string::npos) << s;
  // DequeueMany beyond what is left fails and leaves the elements.
  EXPECT_EQ(q->DequeueMany(3, QueueWait()).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(q->Size(), 2);
  auto two = q->DequeueMany(2, QueueWait());
  ASSERT_TRUE(two.ok()) << two.status();
  ExpectTensorEqual(two->at(0), AsTensor<int32_t>({1, 2}));
  EXPECT_EQ(q->Dequeue(QueueWait()).status().code(), absl::StatusCode::kOutOfRange);
}

// TensorFlow's DequeueUpTo: a closed queue gives what is left, then OUT_OF_RANGE.
TEST(QueueTest, DequeueUpToGivesTheRestOfAClosedQueue) {
  auto q = MakeQueue();
  for (int v : {1, 2, 3}) ASSERT_TRUE(q->Enqueue(Int(v), QueueWait()).ok());
  auto full = q->DequeueMany(2, QueueWait(), /*up_to=*/true);
  ASSERT_TRUE(full.ok()) << full.status();
  ExpectTensorEqual(full->at(0), AsTensor<int32_t>({1, 2}));
  q->Close(false);
  auto rest = q->DequeueMany(2, QueueWait(), /*up_to=*/true);
  ASSERT_TRUE(rest.ok()) << rest.status();
  ExpectTensorEqual(rest->at(0), AsTensor<int32_t>({3}));
  EXPECT_EQ(q->DequeueMany(2, QueueWait(), /*up_to=*/true).status().code(),
            absl::StatusCode::kOutOfRange);
}

// A blocked DequeueUpTo that holds some elements returns them when the queue closes.
TEST(QueueTest, CloseReleasesABlockedDequeueUpToWithWhatItHas) {
  auto q = MakeQueue();
  ASSERT_TRUE(q->Enqueue(Int(7), QueueWait()).ok());
  CountingClock clock;
  QueueWait wait;
  wait.clock = &clock;
  absl::StatusOr<Queue::Tuple> got;
  std::thread consumer([&] { got = q->DequeueMany(3, wait, /*up_to=*/true); });
  clock.AwaitWaits(1);
  q->Close(false);
  consumer.join();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectTensorEqual(got->at(0), AsTensor<int32_t>({7}));
}

TEST(QueueTest, CloseWakesBlockedDequeue) {
  auto q = MakeQueue();
  CountingClock clock;
  QueueWait wait;
  wait.clock = &clock;
  absl::StatusOr<Queue::Tuple> got;
  std::thread consumer([&] { got = q->Dequeue(wait); });
  clock.AwaitWaits(1);
  q->Close(false);
  consumer.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kOutOfRange);
}

TEST(QueueTest, CloseCancellingPendingEnqueues) {
  auto q = MakeQueue(/*capacity=*/1);
  ASSERT_TRUE(q->Enqueue(Int(1), QueueWait()).ok());
  CountingClock clock;
  QueueWait wait;
  wait.clock = &clock;
  absl::Status enqueued;
  std::thread producer([&] { enqueued = q->Enqueue(Int(2), wait); });
  clock.AwaitWaits(1);
  q->Close(/*cancel_pending_enqueues=*/true);
  producer.join();
  EXPECT_EQ(enqueued.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(q->Size(), 1);
}

TEST(QueueTest, CancellationWakesBlockedDequeue) {
  auto q = MakeQueue();
  CountingClock clock;
  CancellationManager cm;
  QueueWait wait;
  wait.clock = &clock;
  wait.cancellation = &cm;
  absl::StatusOr<Queue::Tuple> got;
  std::thread consumer([&] { got = q->Dequeue(wait); });
  clock.AwaitWaits(1);
  cm.StartCancel(absl::CancelledError("step cancelled"));
  consumer.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled);
  // An already-cancelled manager fails at once; the queue still works afterwards.
  EXPECT_EQ(q->Dequeue(wait).status().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(q->Enqueue(Int(5), QueueWait()).ok());
  EXPECT_TRUE(q->Dequeue(QueueWait()).ok());
}

TEST(QueueTest, DeadlineInThePast) {
  auto q = MakeQueue(/*capacity=*/1);
  QueueWait past;
  past.deadline = absl::InfinitePast();
  EXPECT_EQ(q->Dequeue(past).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(q->DequeueMany(1, past).status().code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(q->Enqueue(Int(1), past).ok());  // Room: no wait needed.
  EXPECT_EQ(q->Enqueue(Int(2), past).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(q->Dequeue(past).ok());
}

TEST(QueueTest, ValidationNamesTheComponent) {
  auto q = Queue::Create("q", {DT_FLOAT, DT_INT32}, {PartialShape({2}), PartialShape()});
  ASSERT_TRUE(q.ok());
  absl::Status s = (*q)->Enqueue({AsTensor<float>({1, 2}), AsScalar<float>(1)}, QueueWait());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("component 1"), std::string::npos) << s;
  s = (*q)->Enqueue({AsTensor<float>({1, 2, 3}), AsScalar<int32_t>(1)}, QueueWait());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("component 0"), std::string::npos) << s;
  s = (*q)->Enqueue({AsTensor<float>({1, 2})}, QueueWait());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = (*q)->EnqueueMany({AsTensor<float>({1, 2}, {1, 2}), AsTensor<int32_t>({1, 2})}, QueueWait());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("component 1"), std::string::npos) << s;
  EXPECT_EQ((*q)->Size(), 0);

  EXPECT_FALSE(Queue::Create("q", {}, {}).ok());
  EXPECT_FALSE(Queue::Create("q", {DT_FLOAT}, {PartialShape(), PartialShape()}).ok());
}

TEST(QueueTest, DequeueManyOfZeroAndUnequalShapes) {
  auto q = MakeQueue(-1, {PartialShape({3})});
  auto none = q->DequeueMany(0, QueueWait());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->at(0).shape(), TensorShape({0, 3}));
  EXPECT_EQ(q->DequeueMany(-1, QueueWait()).status().code(), absl::StatusCode::kInvalidArgument);

  auto loose = MakeQueue();
  ASSERT_TRUE(loose->Enqueue({AsTensor<int32_t>({1})}, QueueWait()).ok());
  ASSERT_TRUE(loose->Enqueue({AsTensor<int32_t>({1, 2})}, QueueWait()).ok());
  EXPECT_EQ(loose->DequeueMany(2, QueueWait()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(loose->Size(), 2);
}

std::shared_ptr<Queue> MakeShuffleQueue(int64_t capacity, int64_t min_after_dequeue,
                                        int64_t seed = 7) {
  QueueOptions options;
  options.kind = QueueOptions::Kind::kRandomShuffle;
  options.capacity = capacity;
  options.min_after_dequeue = min_after_dequeue;
  options.seed = seed;
  auto q = Queue::Create("shuffle", {DT_INT32}, {PartialShape::Scalar()}, options);
  EXPECT_TRUE(q.ok()) << q.status();
  return *q;
}

std::vector<int32_t> DrainInts(Queue* q) {
  std::vector<int32_t> out;
  while (true) {
    auto t = q->Dequeue(QueueWait());
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), absl::StatusCode::kOutOfRange) << t.status();
      return out;
    }
    out.push_back(t->at(0).scalar<int32_t>());
  }
}

// TensorFlow's RandomShuffleQueue: every element comes out once, in an order that is not
// the order of arrival, and the same seeds give the same order.
TEST(RandomShuffleQueueTest, EveryElementOnceInASeededRandomOrder) {
  std::vector<int32_t> in;
  for (int i = 0; i < 100; ++i) in.push_back(i);
  auto a = MakeShuffleQueue(-1, 0);
  auto b = MakeShuffleQueue(-1, 0);
  ASSERT_TRUE(a->EnqueueMany({AsTensor<int32_t>(in, {100})}, QueueWait()).ok());
  ASSERT_TRUE(b->EnqueueMany({AsTensor<int32_t>(in, {100})}, QueueWait()).ok());
  a->Close(false);
  b->Close(false);
  std::vector<int32_t> out_a = DrainInts(a.get());
  std::vector<int32_t> out_b = DrainInts(b.get());
  EXPECT_EQ(out_a, out_b);
  EXPECT_NE(out_a, in);  // A fair shuffle keeps the order once in 100! runs.
  std::sort(out_a.begin(), out_a.end());
  EXPECT_EQ(out_a, in);
}

// A dequeue leaves at least min_after_dequeue elements until the queue is closed; then
// the rest drains.
TEST(RandomShuffleQueueTest, MinAfterDequeueHoldsUntilClose) {
  auto q = MakeShuffleQueue(/*capacity=*/10, /*min_after_dequeue=*/3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q->Enqueue(Int(i), QueueWait()).ok());
  QueueWait past;
  past.deadline = absl::InfinitePast();
  EXPECT_EQ(q->Dequeue(past).status().code(), absl::StatusCode::kDeadlineExceeded);

  // A blocked DequeueMany of 2 is served once 5 are in (2 above the minimum).
  CountingClock clock;
  QueueWait wait;
  wait.clock = &clock;
  absl::StatusOr<Queue::Tuple> got;
  std::thread consumer([&] { got = q->DequeueMany(2, wait); });
  clock.AwaitWaits(1);
  ASSERT_TRUE(q->Enqueue(Int(3), QueueWait()).ok());
  ASSERT_TRUE(q->Enqueue(Int(4), QueueWait()).ok());
  consumer.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->at(0).shape(), TensorShape({2}));
  EXPECT_EQ(q->Size(), 3);

  q->Close(false);
  EXPECT_EQ(DrainInts(q.get()).size(), 3u);
}

TEST(RandomShuffleQueueTest, BadOptionsAreInvalid) {
  QueueOptions options;
  options.kind = QueueOptions::Kind::kRandomShuffle;
  options.min_after_dequeue = -1;
  auto s = Queue::Create("s", {DT_INT32}, {}, options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("RandomShuffleQueue 's'"), std::string::npos) << s;
  options.min_after_dequeue = 4;
  options.capacity = 4;
  s = Queue::Create("s", {DT_INT32}, {}, options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("min_after_dequeue 4"), std::string::npos) << s;
}

// TensorFlow's PaddingFIFOQueue: DequeueMany pads the dimensions of unknown size to the
// largest in the batch with zeros (empty strings), in order.
TEST(PaddingFIFOQueueTest, DequeueManyPadsToTheLargest) {
  QueueOptions options;
  options.kind = QueueOptions::Kind::kPaddingFifo;
  auto made = Queue::Create("pad", {DT_INT32, DT_STRING},
                            {PartialShape({-1, 2}), PartialShape({-1})}, options);
  ASSERT_TRUE(made.ok()) << made.status();
  std::shared_ptr<Queue> q = *made;
  ASSERT_TRUE(
      q->Enqueue({AsTensor<int32_t>({1, 2}, {1, 2}), AsTensor<std::string>({"a"})}, QueueWait())
          .ok());
  ASSERT_TRUE(
      q->Enqueue({AsTensor<int32_t>({3, 4, 5, 6, 7, 8}, {3, 2}), AsTensor<std::string>({"b", "c"})},
                 QueueWait())
          .ok());
  // A component of the wrong rank or a wrong known dimension is refused.
  EXPECT_EQ(
      q->Enqueue({AsTensor<int32_t>({1, 2, 3}, {1, 3}), AsTensor<std::string>({"x"})}, QueueWait())
          .code(),
      absl::StatusCode::kInvalidArgument);
  auto got = q->DequeueMany(2, QueueWait());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectTensorEqual(got->at(0), AsTensor<int32_t>({1, 2, 0, 0, 0, 0, 3, 4, 5, 6, 7, 8}, {2, 3, 2}));
  ExpectTensorEqual(got->at(1), AsTensor<std::string>({"a", "", "b", "c"}, {2, 2}));
  // None: the unknown dimensions are 0.
  auto none = q->DequeueMany(0, QueueWait());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->at(0).shape(), TensorShape({0, 0, 2}));

  // Every component needs a shape of known rank.
  EXPECT_EQ(Queue::Create("pad", {DT_INT32}, {}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Queue::Create("pad", {DT_INT32}, {PartialShape()}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

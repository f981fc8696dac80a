// TensorFlow's queue_runner_test.py scenarios as GoogleTest cases against DirectSession.
// TF counts enqueues with a variable's count_up_to, which fails OUT_OF_RANGE at its
// limit; here an enqueue op dequeues from a "source" queue filled with n elements and
// closed, which fails OUT_OF_RANGE after n runs in the same way.

#include "client/training/queue_runner.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "client/graph/ops.h"
#include "client/session/client_session.h"
#include "client/training/coordinator.h"
#include "core/resource_mgr.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class QueueRunnerTest : public ::testing::Test {
 protected:
  std::unique_ptr<ClientSession> NewClientSession() {
    SessionOptions options;
    options.resource_mgr = &resources_;
    absl::StatusOr<std::unique_ptr<ClientSession>> s = ClientSession::Create(root_, options);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }
  ClientSession* session() {
    if (session_ == nullptr) session_ = NewClientSession();
    return session_.get();
  }
  void Run(const Operation& op) {
    std::vector<Tensor> out;
    absl::Status s = session()->Run({}, {}, {op}, &out);
    ASSERT_TRUE(s.ok()) << s;
  }
  int Size(const Output& queue) {
    std::vector<Tensor> out;
    absl::Status s = session()->Run({ops::QueueSize(root_, queue)}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out[0].scalar<int32_t>() : -1;
  }
  // A queue of floats.
  Output Queue(const std::string& name, int64_t capacity) {
    ops::FIFOQueueAttrs attrs;
    attrs.capacity = capacity;
    attrs.shapes = {PartialShape::Scalar()};
    return ops::FIFOQueue(root_.WithOpName(name), {DT_FLOAT}, attrs);
  }
  // An enqueue op into `target` that takes its element from a new source queue holding
  // `n` elements, closed: it fails OUT_OF_RANGE after n runs (TF's count_up_to(n)).
  Operation EnqueueFromSource(const std::string& name, const Output& target, int n) {
    Output source = Queue(name + "_source", -1);
    std::vector<float> values(n);
    for (int i = 0; i < n; ++i) values[i] = static_cast<float>(i);
    Run(ops::QueueEnqueueMany(root_, source, {Tensor::FromVector(values)}));
    Run(ops::QueueClose(root_, source));
    return ops::QueueEnqueue(root_.WithOpName(name), target,
                             {ops::QueueDequeue(root_, source, {DT_FLOAT})[0]});
  }
  static void WaitAll(const std::vector<std::shared_ptr<ManagedThread>>& threads) {
    for (const auto& t : threads) t->WaitUntilFinished(Clock::Real(), absl::InfiniteFuture());
  }
  static std::vector<std::string> Names(const std::vector<std::shared_ptr<ManagedThread>>& ts) {
    std::vector<std::string> names;
    for (const auto& t : ts) names.push_back(t->name());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::unique_ptr<QueueRunner> NewRunner(const Output& queue, std::vector<Operation> enqueue) {
    absl::StatusOr<std::unique_ptr<QueueRunner>> runner =
        QueueRunner::Create(root_, queue, enqueue);
    EXPECT_TRUE(runner.ok()) << runner.status();
    return runner.ok() ? *std::move(runner) : nullptr;
  }
  // `runner` with enqueue op names replaced by `names` (ops that are not in the graph,
  // TF's _MockOp).
  static std::unique_ptr<QueueRunner> WithEnqueueOps(const QueueRunner& runner,
                                                     const std::vector<std::string>& names) {
    QueueRunnerDef def = runner.ToProto();
    def.clear_enqueue_op_name();
    for (const std::string& name : names) def.add_enqueue_op_name(name);
    return *QueueRunner::FromProto(def);
  }
  // Expects `queue` to hold `n` elements and to be closed.
  void ExpectDrainsAndIsClosed(const Output& queue, int n) {
    std::vector<Output> dequeue = ops::QueueDequeue(root_, queue, {DT_FLOAT});
    std::vector<Tensor> out;
    for (int i = 0; i < n; ++i) ASSERT_TRUE(session()->Run(dequeue, &out).ok());
    absl::Status s = session()->Run(dequeue, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
    EXPECT_THAT(s.message(), HasSubstr("is closed"));
  }

  Scope root_ = Scope::NewRootScope();
  ResourceMgr resources_;
  std::unique_ptr<ClientSession> session_;
};

TEST_F(QueueRunnerTest, Basic) {
  Output queue = Queue("queue", 10);
  Operation enqueue = EnqueueFromSource("count_up_to", queue, 3);
  auto runner = NewRunner(queue, {enqueue});
  auto threads = runner->CreateThreads(session(), nullptr, /*start=*/false);
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_THAT(Names(*threads), ElementsAre("QueueRunnerThread-queue-count_up_to"));
  for (const auto& t : *threads) t->Start();
  WaitAll(*threads);
  EXPECT_TRUE(runner->exceptions_raised().empty());
  // Three elements, and the last enqueue thread closed the queue.
  ExpectDrainsAndIsClosed(queue, 3);
}

TEST_F(QueueRunnerTest, ThenOpsRunAfterEachEnqueueAsTheirOwnSteps) {
  Output queue = Queue("queue", 10);
  Output out = Queue("out", 10);
  Operation enqueue = EnqueueFromSource("count_up_to", queue, 3);
  // Moves each element on: it would wait forever if it ran before its enqueue.
  Operation move = ops::QueueEnqueue(root_.WithOpName("move"), out,
                                     {ops::QueueDequeue(root_, queue, {DT_FLOAT})[0]});
  auto runner = QueueRunner::Create(root_, queue, {enqueue}, Operation(), Operation(),
                                    {absl::StatusCode::kOutOfRange}, {move});
  ASSERT_TRUE(runner.ok()) << runner.status();
  EXPECT_THAT((*runner)->then_op_names(), ElementsAre("move"));
  auto copy = QueueRunner::FromProto((*runner)->ToProto());
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_THAT((*copy)->then_op_names(), ElementsAre("move"));
  auto threads = (*runner)->CreateThreads(session());
  ASSERT_TRUE(threads.ok()) << threads.status();
  WaitAll(*threads);
  EXPECT_TRUE((*runner)->exceptions_raised().empty());
  EXPECT_EQ(Size(queue), 0);
  std::vector<Tensor> got;
  absl::Status s =
      session()->Run({ops::QueueDequeueMany(
                         root_, out, ops::Const(root_, Tensor::Scalar<int32_t>(3)), {DT_FLOAT})[0]},
                     &got);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(std::vector<float>(got[0].data<float>(), got[0].data<float>() + 3),
              ElementsAre(0, 1, 2));
}

TEST_F(QueueRunnerTest, TwoOps) {
  Output queue = Queue("queue", 100);
  Operation three = EnqueueFromSource("count_up_to_3", queue, 3);
  Operation thirty = EnqueueFromSource("count_up_to_30", queue, 30);
  auto runner = NewRunner(queue, {three, thirty});
  auto threads = runner->CreateThreads(session());
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_THAT(Names(*threads), ElementsAre("QueueRunnerThread-queue-count_up_to_3",
                                           "QueueRunnerThread-queue-count_up_to_30"));
  WaitAll(*threads);
  EXPECT_TRUE(runner->exceptions_raised().empty());
  ExpectDrainsAndIsClosed(queue, 33);
}

TEST_F(QueueRunnerTest, ExceptionsCaptured) {
  Output queue = Queue("queue", 10);
  auto runner = WithEnqueueOps(*NewRunner(queue, {ops::NoOp(root_)}), {"i fail", "so fail"});
  auto threads = runner->CreateThreads(session());
  ASSERT_TRUE(threads.ok()) << threads.status();
  WaitAll(*threads);
  std::vector<absl::Status> exceptions = runner->exceptions_raised();
  ASSERT_EQ(exceptions.size(), 2u);
  std::vector<std::string> messages = {std::string(exceptions[0].message()),
                                       std::string(exceptions[1].message())};
  std::sort(messages.begin(), messages.end());
  EXPECT_THAT(messages[0], HasSubstr("enqueue op 'i fail'"));
  EXPECT_THAT(messages[1], HasSubstr("enqueue op 'so fail'"));
  // The last thread closed the queue even though both failed: no dequeuer waits forever.
  ExpectDrainsAndIsClosed(queue, 0);
}

TEST_F(QueueRunnerTest, RealDequeueEnqueue) {
  Output q0 = Queue("q0", 3);
  Operation enqueue0 = ops::QueueEnqueue(root_, q0, {10.0f});
  Operation close0 = ops::QueueClose(root_, q0);
  Output q1 = Queue("q1", 30);
  Operation enqueue1 = ops::QueueEnqueue(root_, q1, {ops::QueueDequeue(root_, q0, {DT_FLOAT})[0]});
  std::vector<Output> dequeue1 = ops::QueueDequeue(root_, q1, {DT_FLOAT});
  auto runner = NewRunner(q1, {enqueue1});
  auto threads = runner->CreateThreads(session());
  ASSERT_TRUE(threads.ok()) << threads.status();
  // Enqueue 2 values, then close q0.
  Run(enqueue0);
  Run(enqueue0);
  Run(close0);
  WaitAll(*threads);
  // It terminated cleanly, the two values are in q1, and q1 is closed.
  EXPECT_TRUE(runner->exceptions_raised().empty());
  std::vector<Tensor> out;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(session()->Run(dequeue1, &out).ok());
    EXPECT_FLOAT_EQ(out[0].scalar<float>(), 10.0f);
  }
  absl::Status s = session()->Run(dequeue1, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_THAT(s.message(), HasSubstr("is closed"));
}

TEST_F(QueueRunnerTest, RespectCoordShouldStop) {
  Output queue = Queue("queue", 10);
  Operation enqueue = EnqueueFromSource("count_up_to", queue, 3);
  auto runner = NewRunner(queue, {enqueue});
  // The coordinator has stopped already: the runner finishes at once.
  Coordinator coord;
  ASSERT_TRUE(coord.RequestStop().ok());
  auto threads = runner->CreateThreads(session(), &coord, /*start=*/false);
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_THAT(Names(*threads), ElementsAre("QueueRunnerThread-queue-close_on_stop",
                                           "QueueRunnerThread-queue-count_up_to"));
  for (const auto& t : *threads) t->Start();
  EXPECT_TRUE(coord.Join().ok());
  EXPECT_TRUE(runner->exceptions_raised().empty());
  ExpectDrainsAndIsClosed(queue, 0);  // Nothing was enqueued; the cancel op closed it.
}

TEST_F(QueueRunnerTest, RequestStopOnException) {
  Output queue = Queue("queue", 10);
  auto runner = WithEnqueueOps(*NewRunner(queue, {ops::NoOp(root_)}), {"not an op"});
  Coordinator coord;
  ASSERT_TRUE(runner->CreateThreads(session(), &coord).ok());
  // The error is returned by Join, not kept by the runner.
  absl::Status s = coord.Join();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("QueueRunner for queue 'queue', enqueue op 'not an op'"));
  EXPECT_TRUE(runner->exceptions_raised().empty());
}

TEST_F(QueueRunnerTest, GracePeriod) {
  // The enqueue fills the queue and then blocks.
  Output queue = Queue("queue", 2);
  Operation enqueue = ops::QueueEnqueue(root_, queue, {10.0f});
  std::vector<Output> dequeue = ops::QueueDequeue(root_, queue, {DT_FLOAT});
  auto runner = NewRunner(queue, {enqueue});
  Coordinator coord;
  ASSERT_TRUE(runner->CreateThreads(session(), &coord).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session()->Run(dequeue, &out).ok());
  ASSERT_TRUE(coord.RequestStop().ok());
  // The stop runs the cancel op, which wakes the blocked enqueue: Join finds every
  // thread ended, and the CANCELLED of that enqueue, after the stop, is not an error.
  EXPECT_TRUE(coord.Join({}, absl::Seconds(60)).ok());
  EXPECT_TRUE(runner->exceptions_raised().empty());
}

TEST_F(QueueRunnerTest, MultipleSessions) {
  Output queue = Queue("queue", 10);
  Operation enqueue = EnqueueFromSource("count_up_to", queue, 3);
  auto runner = NewRunner(queue, {enqueue});
  std::unique_ptr<ClientSession> other = NewClientSession();
  Coordinator coord;
  // The threads are not started.
  auto threads = runner->CreateThreads(session(), &coord, /*start=*/false);
  auto other_threads = runner->CreateThreads(other.get(), &coord, /*start=*/false);
  ASSERT_TRUE(threads.ok() && other_threads.ok());
  EXPECT_EQ(threads->size(), 2u);
  EXPECT_EQ(other_threads->size(), 2u);
}

TEST_F(QueueRunnerTest, IgnoreMultiStarts) {
  Output queue = Queue("queue", 10);
  Operation enqueue = EnqueueFromSource("count_up_to", queue, 3);
  auto runner = NewRunner(queue, {enqueue});
  Coordinator coord;
  auto threads = runner->CreateThreads(session(), &coord, /*start=*/false);
  ASSERT_TRUE(threads.ok());
  EXPECT_EQ(threads->size(), 2u);
  auto again = runner->CreateThreads(session(), &coord, /*start=*/false);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST_F(QueueRunnerTest, Threads) {
  Output queue = Queue("queue", 10);
  Operation enqueue = EnqueueFromSource("count_up_to", queue, 3);
  auto runner = WithEnqueueOps(*NewRunner(queue, {enqueue}), {"count_up_to", "bad_op"});
  auto threads = runner->CreateThreads(session());
  ASSERT_TRUE(threads.ok());
  EXPECT_THAT(Names(*threads),
              ElementsAre("QueueRunnerThread-queue-bad_op", "QueueRunnerThread-queue-count_up_to"));
  WaitAll(*threads);
  std::vector<absl::Status> exceptions = runner->exceptions_raised();
  ASSERT_EQ(exceptions.size(), 1u);
  EXPECT_THAT(exceptions[0].message(), HasSubstr("'bad_op'"));

  // All threads ended: new ones can be created, and the list starts afresh.
  threads = runner->CreateThreads(session());
  ASSERT_TRUE(threads.ok());
  EXPECT_EQ(threads->size(), 2u);
  WaitAll(*threads);
  exceptions = runner->exceptions_raised();
  ASSERT_EQ(exceptions.size(), 1u);
  EXPECT_THAT(exceptions[0].message(), HasSubstr("'bad_op'"));
}

TEST_F(QueueRunnerTest, Name) {
  Output queue = ops::FIFOQueue(root_.NewSubScope("scope").WithOpName("queue"), {DT_FLOAT});
  auto runner = NewRunner(queue, {ops::NoOp(root_)});
  EXPECT_EQ(runner->name(), "scope/queue");
  // The close and cancel ops are made next to the queue.
  EXPECT_EQ(runner->close_op_name(), "scope/queue_Close");
  EXPECT_EQ(runner->cancel_op_name(), "scope/queue_Cancel");
  AddQueueRunner(root_.graph(), *runner);
  EXPECT_EQ(root_.graph()->GetCollection(GraphKeys::kQueueRunners).size(), 1u);
}

TEST_F(QueueRunnerTest, StartQueueRunners) {
  Output queue = Queue("queue", 10);
  Operation enqueue = EnqueueFromSource("count_up_to", queue, 3);
  AddQueueRunner(root_.graph(), *NewRunner(queue, {enqueue}));
  absl::StatusOr<StartedQueueRunners> started = StartQueueRunners(session());
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(started->runners.size(), 1u);
  EXPECT_THAT(Names(started->threads), ElementsAre("QueueRunnerThread-queue-count_up_to"));
  WaitAll(started->threads);
  EXPECT_TRUE(started->runners[0]->exceptions_raised().empty());
  ExpectDrainsAndIsClosed(queue, 3);
}

TEST_F(QueueRunnerTest, StartQueueRunnersWithACoordinator) {
  Output queue = Queue("queue", 10);
  Operation enqueue = EnqueueFromSource("count_up_to", queue, 3);
  AddQueueRunner(root_.graph(), *NewRunner(queue, {enqueue}));
  Coordinator coord;
  absl::StatusOr<StartedQueueRunners> started = StartQueueRunners(session(), &coord);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(started->threads.size(), 2u);
  // The enqueue thread ends at the end of input; the close-on-stop thread at the stop.
  started->threads[0]->WaitUntilFinished(Clock::Real(), absl::InfiniteFuture());
  ASSERT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join().ok());
  ExpectDrainsAndIsClosed(queue, 3);
}

// TF's testStartQueueRunnersRaisesIfNotASession: in C++ the types only let a null
// session through.
TEST_F(QueueRunnerTest, StartQueueRunnersNeedsASession) {
  Output queue = Queue("queue", 10);
  AddQueueRunner(root_.graph(), *NewRunner(queue, {ops::NoOp(root_)}));
  absl::StatusOr<StartedQueueRunners> started =
      StartQueueRunners(static_cast<ClientSession*>(nullptr));
  EXPECT_EQ(started.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(started.status().message(), HasSubstr("needs a session"));
  started = StartQueueRunners(static_cast<Session*>(nullptr), *root_.graph());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kInvalidArgument);
  auto runner = NewRunner(queue, {ops::NoOp(root_)});
  EXPECT_EQ(runner->CreateThreads(static_cast<Session*>(nullptr)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(QueueRunnerTest, StartQueueRunnersChecksTheCollection) {
  Output queue = Queue("queue", 10);
  QueueRunnerDef def = NewRunner(queue, {ops::NoOp(root_)})->ToProto();
  def.set_enqueue_op_name(0, "ghost");
  root_.graph()->AddToCollection(GraphKeys::kQueueRunners, def.SerializeAsString());
  absl::StatusOr<StartedQueueRunners> started = StartQueueRunners(session());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(started.status().message(), HasSubstr("'ghost'"));

  root_.graph()->SetCollection(GraphKeys::kQueueRunners, {"\xff not a proto"});
  started = StartQueueRunners(session());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(started.status().message(), HasSubstr("entry 0 of collection 'queue_runners'"));
}

TEST_F(QueueRunnerTest, QueueRunnerSerializationRoundTrip) {
  Output queue = Queue("queue", 10);
  Operation enqueue = ops::NoOp(root_.WithOpName("enqueue"));
  Operation close = ops::NoOp(root_.WithOpName("close"));
  Operation cancel = ops::NoOp(root_.WithOpName("cancel"));
  absl::StatusOr<std::unique_ptr<QueueRunner>> qr0 =
      QueueRunner::Create(root_, queue, {enqueue}, close, cancel,
                          {absl::StatusCode::kOutOfRange, absl::StatusCode::kCancelled});
  ASSERT_TRUE(qr0.ok()) << qr0.status();
  QueueRunnerDef proto = (*qr0)->ToProto();
  absl::StatusOr<std::unique_ptr<QueueRunner>> recon = QueueRunner::FromProto(proto);
  ASSERT_TRUE(recon.ok()) << recon.status();
  EXPECT_EQ((*recon)->name(), "queue");
  EXPECT_THAT((*recon)->enqueue_op_names(), ElementsAre("enqueue"));
  EXPECT_EQ((*recon)->close_op_name(), "close");
  EXPECT_EQ((*recon)->cancel_op_name(), "cancel");
  EXPECT_THAT((*recon)->queue_closed_codes(),
              ElementsAre(absl::StatusCode::kOutOfRange, absl::StatusCode::kCancelled));
  // TensorFlow's error codes and field numbers: the bytes are QueueRunnerDef's.
  EXPECT_THAT(proto.queue_closed_exception_types(), ElementsAre(11, 1));
  const auto* d = QueueRunnerDef::descriptor();
  EXPECT_EQ(d->FindFieldByName("queue_name")->number(), 1);
  EXPECT_EQ(d->FindFieldByName("enqueue_op_name")->number(), 2);
  EXPECT_EQ(d->FindFieldByName("close_op_name")->number(), 3);
  EXPECT_EQ(d->FindFieldByName("cancel_op_name")->number(), 4);
  EXPECT_EQ(d->FindFieldByName("queue_closed_exception_types")->number(), 5);

  // Descriptions written before the field existed mean OUT_OF_RANGE.
  proto.clear_queue_closed_exception_types();
  absl::StatusOr<std::unique_ptr<QueueRunner>> legacy = QueueRunner::FromProto(proto);
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  EXPECT_EQ((*legacy)->name(), "queue");
  EXPECT_THAT((*legacy)->enqueue_op_names(), ElementsAre("enqueue"));
  EXPECT_THAT((*legacy)->queue_closed_codes(), ElementsAre(absl::StatusCode::kOutOfRange));
}

TEST_F(QueueRunnerTest, CreateAndFromProtoRejectBadArguments) {
  Output queue = Queue("queue", 10);
  Operation noop = ops::NoOp(root_);
  EXPECT_EQ(QueueRunner::Create(root_, Output(), {noop}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(QueueRunner::Create(root_, queue, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(QueueRunner::Create(root_, queue, {Operation()}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      QueueRunner::Create(root_, queue, {noop}, {}, {}, {absl::StatusCode::kOk}).status().code(),
      absl::StatusCode::kInvalidArgument);
  Scope other = Scope::NewRootScope();
  absl::Status s = QueueRunner::Create(root_, queue, {ops::NoOp(other)}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("another graph"));

  QueueRunnerDef def = NewRunner(queue, {noop})->ToProto();
  QueueRunnerDef bad = def;
  bad.clear_enqueue_op_name();
  EXPECT_EQ(QueueRunner::FromProto(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = def;
  bad.add_queue_closed_exception_types(99);
  EXPECT_EQ(QueueRunner::FromProto(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = def;
  bad.clear_close_op_name();
  EXPECT_EQ(QueueRunner::FromProto(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(QueueRunnerTest, RunnerMayBeDestroyedWhileItsThreadsRun) {
  Output queue = Queue("queue", 1);
  Operation enqueue = ops::QueueEnqueue(root_, queue, {1.0f});
  Coordinator coord;
  {
    auto runner = NewRunner(queue, {enqueue});
    ASSERT_TRUE(runner->CreateThreads(session(), &coord).ok());
  }
  ASSERT_TRUE(coord.RequestStop().ok());
  EXPECT_TRUE(coord.Join({}, absl::Seconds(60)).ok());
}

}  // namespace
}  // namespace overseer

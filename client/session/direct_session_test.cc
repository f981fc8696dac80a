#include "client/session/direct_session.h"

#include <string>
#include <thread>
#include <vector>

#include "client/session/session_conformance.h"
#include "core/executor/test_kernels.h"
#include "core/node_def_util.h"
#include "core/resource_mgr.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/fake_clock.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

ResourceMgr* SharedResources() {
  static ResourceMgr* resources = new ResourceMgr();
  return resources;
}

INSTANTIATE_TEST_SUITE_P(Direct, SessionConformanceTest,
                         ::testing::Values(SessionConformanceParam{
                             "Direct",
                             [] {
                               SessionOptions options;
                               options.resource_mgr = SharedResources();
                               auto session = NewSession(options);
                               return session.ok() ? std::move(*session) : nullptr;
                             }}),
                         SessionConformanceParamName);

NodeDef* Add(GraphDef* g, const std::string& name, const std::string& op,
             const std::vector<std::string>& inputs = {}) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

std::unique_ptr<DirectSession> MakeSession(const GraphDef& g, SessionOptions options = {}) {
  options.resource_mgr = SharedResources();
  auto session = std::make_unique<DirectSession>(options);
  absl::Status s = session->Create(g);
  EXPECT_TRUE(s.ok()) << s;
  return session;
}

TEST(NewSessionTest, EmptyTargetIsADirectSession) {
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_NE(dynamic_cast<DirectSession*>(session->get()), nullptr);
}

// NOT_FOUND, as TensorFlow's lookup of a session factory for the target.
TEST(NewSessionTest, UnknownSchemeNamesTargetAndKnownSchemes) {
  SessionOptions options;
  options.target = "carrier-pigeon://coop:1";
  auto session = NewSession(options);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("carrier-pigeon://coop:1"));
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("\"\" (in-process)"));
}

TEST(NewSessionTest, RegisteredSchemesAreUsed) {
  int made = 0;
  RegisterSessionFactory(
      "test-scheme://",
      [&made](const SessionOptions& o) -> absl::StatusOr<std::unique_ptr<Session>> {
        ++made;
        return std::unique_ptr<Session>(std::make_unique<DirectSession>(o));
      });
  SessionOptions options;
  options.target = "test-scheme://somewhere";
  auto session = NewSession(options);
  ASSERT_TRUE(session.ok());
  EXPECT_EQ(made, 1);
  options.target = "other://x";
  auto error = NewSession(options);
  EXPECT_THAT(std::string(error.status().message()), HasSubstr("\"test-scheme://\""));
}

TEST(DirectSessionTest, CachesOneExecutorPerSignature) {
  GraphDef g;
  SetNodeAttr(Add(&g, "c", "TestConstInt"), "value", int64_t{1});
  Add(&g, "a", "TestAddOne", {"c"});
  auto session = MakeSession(g);
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(session->Run({}, {"a"}, {}, &out).ok());
  EXPECT_EQ(session->NumCachedExecutors(), 1);
  ASSERT_TRUE(session->Run({{"c", Tensor::Scalar<int32_t>(5)}}, {"a"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<int32_t>(), 6);
  EXPECT_EQ(session->NumCachedExecutors(), 2);
  // Failed signatures are not cached.
  EXPECT_FALSE(session->Run({}, {"nope"}, {}, &out).ok());
  EXPECT_EQ(session->NumCachedExecutors(), 2);
}

TEST(DirectSessionTest, StatefulKernelsAreSharedAcrossSignatures) {
  GraphDef g;
  Add(&g, "counter", "TestCounter");
  Add(&g, "plus", "TestAddOne", {"counter"});
  auto session = MakeSession(g);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"counter"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<int32_t>(), 0);
  ASSERT_TRUE(session->Run({}, {"plus"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<int32_t>(), 2);
}

TEST(DirectSessionTest, RunOptionsTimeoutCancelsABlockedStep) {
  GraphDef g;
  Add(&g, "blocked", "TestBlockUntilCancelled");
  auto session = MakeSession(g);
  RunOptions options;
  options.set_timeout_in_ms(30);
  std::vector<Tensor> out;
  absl::Status s = session->Run(options, {}, {"blocked"}, {}, &out, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.message(), "step exceeded timeout of 30 ms");
}

TEST(DirectSessionTest, OperationTimeoutIsTheDefaultStepTimeout) {
  GraphDef g;
  Add(&g, "blocked", "TestBlockUntilCancelled");
  SessionOptions options;
  options.config.set_operation_timeout_in_ms(20);
  auto session = MakeSession(g, options);
  std::vector<Tensor> out;
  absl::Status s = session->Run({}, {"blocked"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()), HasSubstr("20 ms"));
}

TEST(DirectSessionTest, StepTimeoutsRunOnTheSessionsClock) {
  GraphDef g;
  Add(&g, "blocked", "TestBlockUntilCancelled");
  // The clock jumps to the step timer's deadline at once: an hour-long timeout fires
  // now.
  test::FakeClock clock(test::FakeClock::Mode::kAutoAdvance);
  SessionOptions options;
  options.clock = &clock;
  auto session = MakeSession(g, options);
  RunOptions run_options;
  run_options.set_timeout_in_ms(3600 * 1000);
  std::vector<Tensor> out;
  const absl::Time start = clock.Now();
  absl::Status s = session->Run(run_options, {}, {"blocked"}, {}, &out, nullptr);
  EXPECT_EQ(s, absl::DeadlineExceededError("step exceeded timeout of 3600000 ms"));
  EXPECT_GE(clock.Now() - start, absl::Hours(1));
}

TEST(DirectSessionTest, IndependentNodesRunInParallel) {
  GraphDef g;
  NodeDef* a = Add(&g, "left", "TestRendezvous");
  SetNodeAttr(a, "key", "session/left");
  SetNodeAttr(a, "peer", "session/right");
  NodeDef* b = Add(&g, "right", "TestRendezvous");
  SetNodeAttr(b, "key", "session/right");
  SetNodeAttr(b, "peer", "session/left");
  SessionOptions options;
  options.config.set_inter_op_parallelism_threads(1);
  auto session = MakeSession(g, options);
  RunOptions run_options;
  run_options.set_timeout_in_ms(60000);  // Turns a deadlock into a failure.
  std::vector<Tensor> out;
  absl::Status s = session->Run(run_options, {}, {"left", "right"}, {}, &out, nullptr);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(DirectSessionTest, StepsBlockedOnEachOtherFromTwoThreadsFinish) {
  // One step waits for a signal that only another, concurrent step gives (a trainer
  // blocked on a dequeue while a queue runner enqueues).
  GraphDef g;
  NodeDef* a = Add(&g, "consumer", "TestRendezvous");
  SetNodeAttr(a, "key", "threads/consumer");
  SetNodeAttr(a, "peer", "threads/producer");
  NodeDef* b = Add(&g, "producer", "TestRendezvous");
  SetNodeAttr(b, "key", "threads/producer");
  SetNodeAttr(b, "peer", "threads/consumer");
  auto session = MakeSession(g);
  RunOptions run_options;
  run_options.set_timeout_in_ms(60000);  // Turns a deadlock into a failure.
  absl::Status consumer_status;
  std::thread consumer([&] {
    std::vector<Tensor> out;
    consumer_status = session->Run(run_options, {}, {"consumer"}, {}, &out, nullptr);
  });
  std::vector<Tensor> out;
  absl::Status s = session->Run(run_options, {}, {"producer"}, {}, &out, nullptr);
  consumer.join();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(consumer_status.ok()) << consumer_status;
}

// ConfigProto.isolate_session_state: each session has variables of its own, shared
// neither with another isolated session nor with the process's.
TEST(DirectSessionTest, IsolatedSessionsHaveTheirOwnVariables) {
  GraphDef g;
  NodeDef* v = Add(&g, "isolated_v", "VariableV2");
  SetNodeAttr(v, "dtype", DT_FLOAT);
  SetNodeAttr(v, "shape", TensorShape());
  NodeDef* one = Add(&g, "one", "Const");
  SetNodeAttr(one, "dtype", DT_FLOAT);
  SetNodeAttr(one, "value", Tensor::Scalar<float>(1));
  SetNodeAttr(Add(&g, "init", "Assign", {"isolated_v", "one"}), "T", DT_FLOAT);
  SetNodeAttr(Add(&g, "read", "Identity", {"isolated_v"}), "T", DT_FLOAT);
  SessionOptions options;
  options.config.set_isolate_session_state(true);
  DirectSession a(options);
  DirectSession b(options);
  ASSERT_TRUE(a.Create(g).ok());
  ASSERT_TRUE(b.Create(g).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(a.Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(a.Run({}, {"read"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 1);
  EXPECT_EQ(b.Run({}, {"read"}, {}, &out).code(), absl::StatusCode::kFailedPrecondition);
  DirectSession shared{SessionOptions()};
  ASSERT_TRUE(shared.Create(g).ok());
  EXPECT_EQ(shared.Run({}, {"read"}, {}, &out).code(), absl::StatusCode::kFailedPrecondition);
}

// ConfigProto's threads: sessions share one inter-op pool unless use_per_session_threads
// or inter_op_parallelism_threads asks for their own; intra_op_parallelism_threads gives
// the kernels (here a MatMul) an Eigen pool of that size.
TEST(DirectSessionTest, ThreadPoolsFollowTheConfig) {
  GraphDef g;
  NodeDef* x = Add(&g, "x", "Placeholder");
  SetNodeAttr(x, "dtype", DT_FLOAT);
  SetNodeAttr(Add(&g, "xx", "MatMul", {"x", "x"}), "T", DT_FLOAT);
  const std::vector<float> ones(256 * 256, 1.0f);
  const Tensor input = Tensor::FromVector<float>(ones, TensorShape({256, 256}));

  auto first = MakeSession(g);
  auto second = MakeSession(g);
  EXPECT_EQ(first->inter_op_pool(), second->inter_op_pool());
  SessionOptions own;
  own.config.set_use_per_session_threads(true);
  own.config.set_intra_op_parallelism_threads(1);
  auto own_session = MakeSession(g, own);
  EXPECT_NE(own_session->inter_op_pool(), first->inter_op_pool());
  EXPECT_EQ(own_session->intra_op_threads(), 1);
  SessionOptions sized;
  sized.config.set_inter_op_parallelism_threads(2);
  sized.config.set_intra_op_parallelism_threads(3);
  auto sized_session = MakeSession(g, sized);
  EXPECT_NE(sized_session->inter_op_pool(), first->inter_op_pool());
  EXPECT_EQ(sized_session->intra_op_threads(), 3);

  for (DirectSession* session : {first.get(), own_session.get(), sized_session.get()}) {
    std::vector<Tensor> out;
    absl::Status s = session->Run({{"x", input}}, {"xx"}, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(out[0].shape(), TensorShape({256, 256}));
    EXPECT_EQ(out[0].data<float>()[0], 256.0f);
    EXPECT_EQ(out[0].data<float>()[256 * 256 - 1], 256.0f);
  }
}

// ConfigProto.log_device_placement logs each node of a step's graph with its device
// when the graph is built; device_count is accepted (one CPU device whatever it asks).
TEST(DirectSessionTest, LogDevicePlacementAndDeviceCount) {
  GraphDef g;
  SetNodeAttr(Add(&g, "seven", "TestConstInt"), "value", int64_t{7});
  Add(&g, "eight", "TestAddOne", {"seven"});
  SessionOptions options;
  options.config.set_log_device_placement(true);
  (*options.config.mutable_device_count())["CPU"] = 1;
  (*options.config.mutable_device_count())["GPU"] = 0;
  auto session = MakeSession(g, options);
  std::vector<Tensor> out;
  ::testing::internal::CaptureStderr();
  absl::Status s = session->Run({}, {"eight"}, {}, &out);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<int32_t>(), 8);
  EXPECT_THAT(log,
              HasSubstr("seven: (TestConstInt): /job:localhost/replica:0/task:0/device:CPU:0"));
  EXPECT_THAT(log, HasSubstr("eight: (TestAddOne): /job:localhost/replica:0/task:0/device:CPU:0"));
  // Built once: a second run of the signature logs nothing.
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(session->Run({}, {"eight"}, {}, &out).ok());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(DirectSessionTest, RunBeforeCreateIsFailedPrecondition) {
  DirectSession session{SessionOptions()};
  std::vector<Tensor> out;
  EXPECT_EQ(session.Run({}, {"x"}, {}, &out).code(), absl::StatusCode::kFailedPrecondition);
  // Extend on an empty session sets the graph.
  GraphDef g;
  SetNodeAttr(Add(&g, "c", "TestConstInt"), "value", int64_t{3});
  ASSERT_TRUE(session.Extend(g).ok());
  ASSERT_TRUE(session.Run({}, {"c"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<int32_t>(), 3);
}

// The partial-run scenarios every session runs are in session_conformance.cc.

TEST(DirectSessionPartialRunTest, CloseCancelsAWaitingPartialRun) {
  GraphDef g;
  Add(&g, "blocked", "TestBlockUntilCancelled");
  SetNodeAttr(Add(&g, "unused", "Placeholder"), "dtype", DT_FLOAT);
  auto session = MakeSession(g);
  absl::StatusOr<std::string> h = session->PartialRunSetup({"unused"}, {"blocked"}, {});
  ASSERT_TRUE(h.ok()) << h.status();
  // A partial run left unfinished (no call at all) is cancelled by Close too.
  absl::StatusOr<std::string> idle = session->PartialRunSetup({"unused"}, {}, {});
  ASSERT_TRUE(idle.ok()) << idle.status();
  absl::Status waiting;
  std::thread fetcher([&] {
    std::vector<Tensor> out;
    waiting = session->PartialRun(*h, {}, {"blocked"}, &out);
  });
  // Close may come before or after the fetcher's call: either way the call fails.
  ASSERT_TRUE(session->Close().ok());
  fetcher.join();
  EXPECT_TRUE(absl::IsCancelled(waiting) || absl::IsFailedPrecondition(waiting)) << waiting;
  std::vector<Tensor> out;
  EXPECT_EQ(session->PartialRun(*idle, {}, {}, &out).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(DirectSessionPartialRunTest, SessionsWithoutPartialRunsSayUnimplemented) {
  class Minimal : public Session {
   public:
    absl::Status Create(const GraphDef&) override { return absl::OkStatus(); }
    absl::Status Extend(const GraphDef&) override { return absl::OkStatus(); }
    using Session::Run;
    absl::Status Run(const RunOptions&, const std::vector<std::pair<std::string, Tensor>>&,
                     const std::vector<std::string>&, const std::vector<std::string>&,
                     std::vector<Tensor>*, RunMetadata*) override {
      return absl::OkStatus();
    }
    absl::StatusOr<CallableHandle> MakeCallable(const CallableOptions&) override { return 0; }
    absl::Status RunCallable(CallableHandle, const std::vector<Tensor>&, std::vector<Tensor>*,
                             RunMetadata*) override {
      return absl::OkStatus();
    }
    absl::Status ReleaseCallable(CallableHandle) override { return absl::OkStatus(); }
    absl::Status Close() override { return absl::OkStatus(); }
    absl::StatusOr<std::vector<DeviceAttributes>> ListDevices() override {
      return std::vector<DeviceAttributes>();
    }
    absl::Status Reset(const std::vector<std::string>&) override { return absl::OkStatus(); }
  } minimal;
  EXPECT_EQ(minimal.PartialRunSetup({}, {}, {}).status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace overseer

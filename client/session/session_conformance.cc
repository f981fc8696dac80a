#include "client/session/session_conformance.h"

#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/node_def_util.h"
#include "core/tensor.h"
#include "gmock/gmock.h"

namespace overseer {

std::string SessionConformanceParamName(
    const ::testing::TestParamInfo<SessionConformanceParam>& info) {
  return info.param.name;
}

namespace {

using ::testing::HasSubstr;

// Builds GraphDefs by hand (the suite depends on nothing but Session).
class G {
 public:
  NodeDef* Op(const std::string& name, const std::string& op,
              const std::vector<std::string>& inputs = {}) {
    NodeDef* n = def_.add_node();
    n->set_name(name);
    n->set_op(op);
    for (const std::string& in : inputs) n->add_input(in);
    return n;
  }
  NodeDef* Const(const std::string& name, const Tensor& value) {
    NodeDef* n = Op(name, "Const");
    SetNodeAttr(n, "dtype", value.dtype());
    SetNodeAttr(n, "value", value);
    return n;
  }
  NodeDef* Placeholder(const std::string& name, DataType dtype,
                       const PartialShape& shape = PartialShape::Unknown()) {
    NodeDef* n = Op(name, "Placeholder");
    SetNodeAttr(n, "dtype", dtype);
    SetNodeAttr(n, "shape", shape);
    return n;
  }
  NodeDef* Binary(const std::string& name, const std::string& op, const std::string& x,
                  const std::string& y) {
    NodeDef* n = Op(name, op, {x, y});
    SetNodeAttr(n, "T", DT_FLOAT);
    return n;
  }
  NodeDef* Variable(const std::string& name) {
    NodeDef* n = Op(name, "VariableV2");
    SetNodeAttr(n, "dtype", DT_FLOAT);
    SetNodeAttr(n, "shape", TensorShape());
    return n;
  }
  const GraphDef& def() const { return def_; }

 private:
  GraphDef def_;
};

float F(const Tensor& t) { return t.scalar<float>(); }
Tensor S(float v) { return Tensor::Scalar<float>(v); }

// c = a + b with a = 2 (Const) and b a float scalar Placeholder; init = NoOp after c.
G AddGraph() {
  G g;
  g.Const("a", S(2));
  g.Placeholder("b", DT_FLOAT, PartialShape::Scalar());
  g.Binary("c", "Add", "a", "b");
  g.Op("init", "NoOp", {"^c"});
  return g;
}

// A variable `name` with `name`/init (= 1) and `name`/inc (+= 1), in `container`
// ("": the default one).
void AddCounterVariable(G* g, const std::string& name, const std::string& container = "") {
  SetNodeAttr(g->Variable(name), "container", container);
  g->Const(name + "/one", S(1));
  NodeDef* init = g->Op(name + "/init", "Assign", {name, name + "/one"});
  SetNodeAttr(init, "T", DT_FLOAT);
  NodeDef* inc = g->Op(name + "/inc", "AssignAdd", {name, name + "/one"});
  SetNodeAttr(inc, "T", DT_FLOAT);
}

// A FIFOQueue of float scalars named `name`.
void AddQueue(G* g, const std::string& name) {
  NodeDef* q = g->Op(name, "FIFOQueue");
  SetNodeAttr(q, "component_types", std::vector<DataType>{DT_FLOAT});
  SetNodeAttr(q, "capacity", int64_t{100});
}

NodeDef* AddEnqueue(G* g, const std::string& name, const std::string& queue,
                    const std::string& value) {
  NodeDef* e = g->Op(name, "QueueEnqueue", {queue, value});
  SetNodeAttr(e, "Tcomponents", std::vector<DataType>{DT_FLOAT});
  return e;
}

NodeDef* AddDequeue(G* g, const std::string& name, const std::string& queue) {
  NodeDef* d = g->Op(name, "QueueDequeue", {queue});
  SetNodeAttr(d, "component_types", std::vector<DataType>{DT_FLOAT});
  return d;
}

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& part) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(part));
}

TEST_P(SessionConformanceTest, FeedFetchAndTarget) {
  auto session = MakeSession();
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"b", S(3)}}, {"c"}, {}, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(F(out[0]), 5);
  // A target alone produces no outputs.
  absl::Status s = session->Run({{"b:0", S(1)}}, {}, {"init"}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(out.empty());
  // Fetching only the Const needs no feed.
  ASSERT_TRUE(session->Run({}, {"a:0"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 2);
}

TEST_P(SessionConformanceTest, FetchesTheSameTensorTwice) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"b", S(4)}}, {"c", "a", "c:0"}, {}, &out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(F(out[0]), 6);
  EXPECT_EQ(F(out[1]), 2);
  EXPECT_EQ(F(out[2]), 6);
}

TEST_P(SessionConformanceTest, FeedingANonPlaceholderOverridesIt) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"a:0", S(10)}, {"b", S(1)}}, {"c", "a"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 11);
  EXPECT_EQ(F(out[1]), 10);  // A fetched feed returns the fed value.
  // Feeding the sum itself skips its computation (and the placeholder it needs).
  ASSERT_TRUE(session->Run({{"c", S(-1)}}, {"c"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), -1);
}

TEST_P(SessionConformanceTest, MissingFeedIsInvalidArgument) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  std::vector<Tensor> out;
  ExpectError(session->Run({}, {"c"}, {}, &out), absl::StatusCode::kInvalidArgument, "'b'");
}

TEST_P(SessionConformanceTest, FeedsAreCheckedAgainstThePlaceholder) {
  G g = AddGraph();
  g.Placeholder("vec", DT_FLOAT, PartialShape({-1, 2}));
  SetNodeAttr(g.Op("vec_id", "Identity", {"vec"}), "T", DT_FLOAT);
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  std::vector<Tensor> out;
  ExpectError(session->Run({{"b", Tensor::Scalar<int32_t>(1)}}, {"c"}, {}, &out),
              absl::StatusCode::kInvalidArgument, "'b:0' has dtype int32");
  ExpectError(session->Run({{"vec", Tensor(DT_FLOAT, TensorShape({3}))}}, {"vec_id"}, {}, &out),
              absl::StatusCode::kInvalidArgument, "'vec");
  ASSERT_TRUE(
      session->Run({{"vec", Tensor(DT_FLOAT, TensorShape({3, 2}))}}, {"vec_id"}, {}, &out).ok());
  EXPECT_EQ(out[0].shape(), TensorShape({3, 2}));
}

TEST_P(SessionConformanceTest, UnknownFetchFeedOrTargetIsNamed) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  std::vector<Tensor> out;
  ExpectError(session->Run({{"b", S(1)}}, {"nope:0"}, {}, &out), absl::StatusCode::kInvalidArgument,
              "nope");
  ExpectError(session->Run({{"b", S(1)}}, {"c:7"}, {}, &out), absl::StatusCode::kInvalidArgument,
              "c:7");
  ExpectError(session->Run({{"b", S(1)}}, {}, {"ghost"}, &out), absl::StatusCode::kInvalidArgument,
              "ghost");
  ExpectError(session->Run({{"phantom:0", S(1)}}, {"a"}, {}, &out),
              absl::StatusCode::kInvalidArgument, "phantom");
}

// As TensorFlow's session: a Run before the graph has a node fails (Python's "The
// Session graph is empty."); Extend then makes it runnable.
TEST_P(SessionConformanceTest, RunOnAnEmptyGraphFails) {
  auto session = MakeSession();
  ASSERT_NE(session, nullptr);
  const absl::Status created = session->Create(GraphDef());
  ASSERT_TRUE(created.ok()) << created;
  std::vector<Tensor> out;
  ExpectError(session->Run({}, {}, {}, &out), absl::StatusCode::kFailedPrecondition,
              "The Session graph is empty");
  ASSERT_TRUE(session->Extend(AddGraph().def()).ok());
  EXPECT_TRUE(session->Run({}, {}, {}, &out).ok());
}

TEST_P(SessionConformanceTest, CreateValidatesAndHappensOnce) {
  auto session = MakeSession();
  G bad;
  bad.Op("x", "NoSuchOp");
  ExpectError(session->Create(bad.def()), absl::StatusCode::kInvalidArgument,
              "node 'x': unknown op 'NoSuchOp'");
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  EXPECT_EQ(session->Create(AddGraph().def()).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(SessionConformanceTest, ExtendThenRunNewNodes) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"b", S(1)}}, {"c"}, {}, &out).ok());
  G more;
  more.Binary("d", "Mul", "c", "a");
  ASSERT_TRUE(session->Extend(more.def()).ok());
  ASSERT_TRUE(session->Run({{"b", S(1)}}, {"d", "c"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 6);
  EXPECT_EQ(F(out[1]), 3);
  // Names must be new, and extensions are validated.
  G dup;
  dup.Const("a", S(5));
  ExpectError(session->Extend(dup.def()), absl::StatusCode::kInvalidArgument, "'a'");
  G dangling;
  dangling.Binary("e", "Add", "a", "missing");
  ExpectError(session->Extend(dangling.def()), absl::StatusCode::kInvalidArgument, "'e'");
  // A failed Extend leaves the graph as it was.
  ASSERT_TRUE(session->Run({{"b", S(2)}}, {"d"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 8);
}

TEST_P(SessionConformanceTest, VariablesPersistAcrossRuns) {
  G g;
  AddCounterVariable(&g, "conformance/persist");
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"conformance/persist/init"}, &out).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(session->Run({}, {}, {"conformance/persist/inc"}, &out).ok());
  }
  // Fetching a reference returns the variable's current value.
  ASSERT_TRUE(session->Run({}, {"conformance/persist"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 4);
  ASSERT_TRUE(session->Run({}, {"conformance/persist/inc"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 5);
}

TEST_P(SessionConformanceTest, VariablesAreSharedBetweenSessions) {
  G g;
  AddCounterVariable(&g, "conformance/shared");
  auto chief = MakeSession();
  auto other = MakeSession();
  ASSERT_TRUE(chief->Create(g.def()).ok());
  ASSERT_TRUE(other->Create(g.def()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(chief->Run({}, {}, {"conformance/shared/init"}, &out).ok());
  ASSERT_TRUE(other->Run({}, {}, {"conformance/shared/inc"}, &out).ok());
  ASSERT_TRUE(chief->Close().ok());
  // The variable outlives the session that initialised it.
  ASSERT_TRUE(other->Run({}, {"conformance/shared"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 2);
}

TEST_P(SessionConformanceTest, UninitialisedVariableIsFailedPrecondition) {
  G g;
  g.Variable("conformance/never_initialised");
  SetNodeAttr(g.Op("read", "Identity", {"conformance/never_initialised"}), "T", DT_FLOAT);
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  std::vector<Tensor> out;
  ExpectError(session->Run({}, {"read"}, {}, &out), absl::StatusCode::kFailedPrecondition,
              "conformance/never_initialised");
}

TEST_P(SessionConformanceTest, ListDevicesNamesCpuDevices) {
  auto session = MakeSession();
  absl::StatusOr<std::vector<DeviceAttributes>> devices = session->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_FALSE(devices->empty());
  for (const DeviceAttributes& device : *devices) {
    EXPECT_EQ(device.device_type(), "CPU") << device.name();
    EXPECT_THAT(device.name(), HasSubstr("/device:CPU:0"));
    EXPECT_NE(device.incarnation(), 0u) << device.name();
  }
  ASSERT_TRUE(session->Close().ok());
  EXPECT_EQ(session->ListDevices().status().code(), absl::StatusCode::kFailedPrecondition);
}

// TensorFlow's Session::Reset: the named containers are cleared for every session, the
// others kept; the resetting session is closed.
TEST_P(SessionConformanceTest, ResetClearsTheNamedContainers) {
  G g;
  AddCounterVariable(&g, "conformance/reset_kept");
  AddCounterVariable(&g, "conformance/reset_cleared", "conformance_reset");
  for (const char* name : {"conformance/reset_kept", "conformance/reset_cleared"}) {
    SetNodeAttr(g.Op(std::string(name) + "/read", "Identity", {name}), "T", DT_FLOAT);
  }
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(
      session->Run({}, {}, {"conformance/reset_kept/init", "conformance/reset_cleared/init"}, &out)
          .ok());
  ASSERT_TRUE(session->Reset({"conformance_reset"}).ok());
  ExpectError(session->Run({}, {"conformance/reset_kept/read"}, {}, &out),
              absl::StatusCode::kFailedPrecondition, "closed");
  EXPECT_EQ(session->Reset({}).code(), absl::StatusCode::kFailedPrecondition);

  auto after = MakeSession();
  ASSERT_TRUE(after->Create(g.def()).ok());
  ExpectError(after->Run({}, {"conformance/reset_cleared/read"}, {}, &out),
              absl::StatusCode::kFailedPrecondition, "conformance/reset_cleared");
  ASSERT_TRUE(after->Run({}, {"conformance/reset_kept/read"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 1);
  ASSERT_TRUE(after->Reset({}).ok());  // Every container.
  auto last = MakeSession();
  ASSERT_TRUE(last->Create(g.def()).ok());
  ExpectError(last->Run({}, {"conformance/reset_kept/read"}, {}, &out),
              absl::StatusCode::kFailedPrecondition, "conformance/reset_kept");
}

TEST_P(SessionConformanceTest, KernelErrorsNameNodeAndOp) {
  G g;
  g.Placeholder("x", DT_FLOAT);
  g.Placeholder("y", DT_FLOAT);
  g.Binary("sum", "Add", "x", "y");
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  std::vector<Tensor> out;
  absl::Status s = session->Run(
      {{"x", Tensor(DT_FLOAT, TensorShape({2}))}, {"y", Tensor(DT_FLOAT, TensorShape({3}))}},
      {"sum"}, {}, &out);
  ExpectError(s, absl::StatusCode::kInvalidArgument, "node 'sum' (op 'Add'): ");
}

TEST_P(SessionConformanceTest, ConcurrentRunsFromSeveralThreads) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        std::vector<Tensor> out;
        const float b = static_cast<float>(t * 1000 + i);
        absl::Status s = session->Run({{"b", S(b)}}, {"c"}, {}, &out);
        if (!s.ok() || out.size() != 1 || F(out[0]) != b + 2) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_P(SessionConformanceTest, TracingFillsStepStats) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  RunOptions options;
  options.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(options, {{"b", S(1)}}, {"c"}, {}, &out, &metadata).ok());
  int stats = 0;
  bool saw_c = false;
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    for (const auto& ns : dev.node_stats()) {
      ++stats;
      saw_c |= ns.node_name() == "c";
    }
  }
  EXPECT_GT(stats, 0);
  EXPECT_TRUE(saw_c);
}

// The trace levels differ: SOFTWARE_TRACE gives each node's span, its kernel's span
// within it and its thread; FULL_TRACE adds its outputs. output_partition_graphs gives
// the graphs that ran.
TEST_P(SessionConformanceTest, TraceLevelsAndPartitionGraphs) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  auto node_c = [](const RunMetadata& metadata) {
    NodeExecStats found;
    for (const auto& dev : metadata.step_stats().dev_stats()) {
      for (const auto& ns : dev.node_stats()) {
        if (ns.node_name() == "c") found = ns;
      }
    }
    return found;
  };
  RunOptions software;
  software.set_trace_level(RunOptions::SOFTWARE_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(software, {{"b", S(1)}}, {"c"}, {}, &out, &metadata).ok());
  NodeExecStats c = node_c(metadata);
  ASSERT_EQ(c.node_name(), "c");
  EXPECT_GT(c.all_start_micros(), 0);
  EXPECT_GT(c.thread_id(), 0u);
  EXPECT_LE(0, c.op_start_rel_micros());
  EXPECT_LE(c.op_start_rel_micros(), c.op_end_rel_micros());
  EXPECT_LE(c.op_end_rel_micros(), c.all_end_rel_micros());
  EXPECT_EQ(c.output_size(), 0);
  EXPECT_EQ(c.timeline_label().rfind("c = Add(", 0), 0u) << c.timeline_label();
  EXPECT_EQ(metadata.partition_graphs_size(), 0);

  RunOptions full;
  full.set_trace_level(RunOptions::FULL_TRACE);
  full.set_output_partition_graphs(true);
  metadata.Clear();
  ASSERT_TRUE(session->Run(full, {{"b", S(1)}}, {"c"}, {}, &out, &metadata).ok());
  c = node_c(metadata);
  ASSERT_EQ(c.output_size(), 1);
  EXPECT_EQ(c.output(0).slot(), 0);
  EXPECT_EQ(c.output(0).tensor_description().dtype(), DT_FLOAT);
  EXPECT_EQ(c.output(0).tensor_description().shape().dim_size(), 0);
  EXPECT_EQ(c.output(0).tensor_description().allocation_description().requested_bytes(), 4);
  ASSERT_GE(metadata.partition_graphs_size(), 1);
  bool has_c = false;
  for (const GraphDef& g : metadata.partition_graphs()) {
    for (const NodeDef& n : g.node()) {
      if (n.name() != "c") continue;
      has_c = true;
      EXPECT_EQ(n.op(), "Add");
      EXPECT_FALSE(n.device().empty());
    }
  }
  EXPECT_TRUE(has_c);
}

TEST_P(SessionConformanceTest, TimeoutCancelsAStepBlockedOnADequeue) {
  G g;
  AddQueue(&g, "conformance/timeout_q");
  AddDequeue(&g, "dequeue", "conformance/timeout_q");
  g.Const("seven", S(7));
  AddEnqueue(&g, "enqueue", "conformance/timeout_q", "seven");
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  RunOptions options;
  options.set_timeout_in_ms(50);
  std::vector<Tensor> out;
  absl::Status s = session->Run(options, {}, {"dequeue"}, {}, &out, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  // The cancelled dequeue took nothing: a later enqueue/dequeue pair still works.
  ASSERT_TRUE(session->Run({}, {}, {"enqueue"}, &out).ok());
  ASSERT_TRUE(session->Run(options, {}, {"dequeue"}, {}, &out, nullptr).ok());
  EXPECT_EQ(F(out[0]), 7);
}

TEST_P(SessionConformanceTest, IndependentBranchesRunInParallel) {
  // d1 blocks until e1 runs, e1 waits (control) for d2, and d2 for e2. Listed so that
  // running nodes one at a time in order would block forever on d1.
  G g;
  AddQueue(&g, "conformance/par_q1");
  AddQueue(&g, "conformance/par_q2");
  AddDequeue(&g, "d1", "conformance/par_q1");
  AddDequeue(&g, "d2", "conformance/par_q2");
  g.Const("one", S(1));
  g.Const("two", S(2));
  AddEnqueue(&g, "e1", "conformance/par_q1", "one")->add_input("^d2");
  AddEnqueue(&g, "e2", "conformance/par_q2", "two");
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  RunOptions options;
  options.set_timeout_in_ms(60000);  // Turns a deadlock into a failure.
  std::vector<Tensor> out;
  absl::Status s = session->Run(options, {}, {"d1", "d2"}, {"e1", "e2"}, &out, nullptr);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(F(out[0]), 1);
  EXPECT_EQ(F(out[1]), 2);
}

TEST_P(SessionConformanceTest, ProducerThreadFeedsABlockedConsumerStep) {
  G g;
  AddQueue(&g, "conformance/runner_q");
  g.Placeholder("item", DT_FLOAT, PartialShape::Scalar());
  AddEnqueue(&g, "enqueue", "conformance/runner_q", "item");
  AddDequeue(&g, "dequeue", "conformance/runner_q");
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  constexpr int kItems = 50;
  RunOptions options;
  options.set_timeout_in_ms(60000);
  float sum = 0;
  std::thread consumer([&] {
    for (int i = 0; i < kItems; ++i) {
      std::vector<Tensor> out;
      absl::Status s = session->Run(options, {}, {"dequeue"}, {}, &out, nullptr);
      if (!s.ok()) return;
      sum += F(out[0]);
    }
  });
  for (int i = 0; i < kItems; ++i) {
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({{"item", S(static_cast<float>(i))}}, {}, {"enqueue"}, &out).ok());
  }
  consumer.join();
  EXPECT_EQ(sum, kItems * (kItems - 1) / 2);
}

// A callable feeding b, fetching c (= 2 + b) and running a counter's increment.
CallableOptions AddCallable(const std::string& counter) {
  CallableOptions options;
  options.add_feed("b");
  options.add_fetch("c");
  options.add_target(counter + "/inc");
  return options;
}

TEST_P(SessionConformanceTest, CallableRunsManyTimes) {
  G g = AddGraph();
  AddCounterVariable(&g, "conformance/callable_runs");
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"conformance/callable_runs/init"}, &out).ok());
  absl::StatusOr<CallableHandle> handle =
      session->MakeCallable(AddCallable("conformance/callable_runs"));
  ASSERT_TRUE(handle.ok()) << handle.status();
  constexpr int kRuns = 50;
  for (int i = 0; i < kRuns; ++i) {
    absl::Status s = session->RunCallable(*handle, {S(static_cast<float>(i))}, &out, nullptr);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(F(out[0]), i + 2);
  }
  // Every run ran the target once.
  ASSERT_TRUE(session->Run({}, {"conformance/callable_runs"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 1 + kRuns);
  // Two callables of one session are independent; Run still works beside them.
  CallableOptions only_a;
  only_a.add_fetch("a:0");
  only_a.add_fetch("c");
  only_a.add_feed("b:0");
  absl::StatusOr<CallableHandle> other = session->MakeCallable(only_a);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(*other, *handle);
  ASSERT_TRUE(session->RunCallable(*other, {S(5)}, &out, nullptr).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(F(out[0]), 2);
  EXPECT_EQ(F(out[1]), 7);
  EXPECT_TRUE(session->ReleaseCallable(*handle).ok());
  EXPECT_TRUE(session->ReleaseCallable(*other).ok());
}

TEST_P(SessionConformanceTest, ReleasedOrUnknownCallableIsInvalidArgument) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  CallableOptions options;
  options.add_feed("b");
  options.add_fetch("c");
  absl::StatusOr<CallableHandle> handle = session->MakeCallable(options);
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->RunCallable(*handle, {S(1)}, &out, nullptr).ok());
  ASSERT_TRUE(session->ReleaseCallable(*handle).ok());
  ExpectError(session->RunCallable(*handle, {S(1)}, &out, nullptr),
              absl::StatusCode::kInvalidArgument, "callable");
  // Releasing twice is harmless; a handle never made is not.
  EXPECT_TRUE(session->ReleaseCallable(*handle).ok());
  EXPECT_EQ(session->ReleaseCallable(*handle + 1000).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(session->RunCallable(*handle + 1000, {S(1)}, &out, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(SessionConformanceTest, CallableFeedsAreCheckedByCountAndType) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  CallableOptions options;
  options.add_feed("b");
  options.add_fetch("c");
  absl::StatusOr<CallableHandle> handle = session->MakeCallable(options);
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> out;
  ExpectError(session->RunCallable(*handle, {}, &out, nullptr), absl::StatusCode::kInvalidArgument,
              "1 feeds, got 0");
  ExpectError(session->RunCallable(*handle, {S(1), S(2)}, &out, nullptr),
              absl::StatusCode::kInvalidArgument, "1 feeds, got 2");
  ExpectError(session->RunCallable(*handle, {Tensor::Scalar<int32_t>(1)}, &out, nullptr),
              absl::StatusCode::kInvalidArgument, "'b:0' has dtype int32");
  // The callable still works after the bad calls.
  ASSERT_TRUE(session->RunCallable(*handle, {S(3)}, &out, nullptr).ok());
  EXPECT_EQ(F(out[0]), 5);
}

TEST_P(SessionConformanceTest, MakeCallableChecksTheSignature) {
  auto session = MakeSession();
  CallableOptions options;
  options.add_fetch("c");
  // No graph yet.
  EXPECT_EQ(session->MakeCallable(options).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  // c needs the placeholder b.
  ExpectError(session->MakeCallable(options).status(), absl::StatusCode::kInvalidArgument, "'b'");
  CallableOptions unknown;
  unknown.add_fetch("nope:0");
  ExpectError(session->MakeCallable(unknown).status(), absl::StatusCode::kInvalidArgument, "nope");
  CallableOptions unknown_target;
  unknown_target.add_target("ghost");
  ExpectError(session->MakeCallable(unknown_target).status(), absl::StatusCode::kInvalidArgument,
              "ghost");
}

TEST_P(SessionConformanceTest, CallablesRunConcurrentlyAndSurviveExtend) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  CallableOptions options;
  options.add_feed("b");
  options.add_fetch("c");
  absl::StatusOr<CallableHandle> handle = session->MakeCallable(options);
  ASSERT_TRUE(handle.ok()) << handle.status();
  G more;
  more.Binary("d", "Mul", "c", "a");
  ASSERT_TRUE(session->Extend(more.def()).ok());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::vector<Tensor> out;
        const float b = static_cast<float>(t * 100 + i);
        absl::Status s = session->RunCallable(*handle, {S(b)}, &out, nullptr);
        if (!s.ok() || out.size() != 1 || F(out[0]) != b + 2) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_P(SessionConformanceTest, CallableRunOptionsApplyToEveryRun) {
  G g = AddGraph();
  AddQueue(&g, "conformance/callable_q");
  AddDequeue(&g, "dequeue", "conformance/callable_q");
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  CallableOptions traced;
  traced.add_feed("b");
  traced.add_fetch("c");
  traced.mutable_run_options()->set_trace_level(RunOptions::FULL_TRACE);
  absl::StatusOr<CallableHandle> handle = session->MakeCallable(traced);
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> out;
  RunMetadata metadata;
  ASSERT_TRUE(session->RunCallable(*handle, {S(1)}, &out, &metadata).ok());
  bool saw_c = false;
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    for (const auto& ns : dev.node_stats()) saw_c |= ns.node_name() == "c";
  }
  EXPECT_TRUE(saw_c);
  // A timeout in the options cancels a run blocked on an empty queue.
  CallableOptions blocked;
  blocked.add_fetch("dequeue");
  blocked.mutable_run_options()->set_timeout_in_ms(50);
  absl::StatusOr<CallableHandle> dequeue = session->MakeCallable(blocked);
  ASSERT_TRUE(dequeue.ok()) << dequeue.status();
  EXPECT_EQ(session->RunCallable(*dequeue, {}, &out, nullptr).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_P(SessionConformanceTest, CallablesEndWithTheSession) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  CallableOptions options;
  options.add_fetch("a");
  absl::StatusOr<CallableHandle> handle = session->MakeCallable(options);
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_TRUE(session->Close().ok());
  std::vector<Tensor> out;
  EXPECT_EQ(session->RunCallable(*handle, {}, &out, nullptr).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(session->MakeCallable(options).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(session->ReleaseCallable(*handle).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(SessionConformanceTest, CloseEndsTheSession) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(AddGraph().def()).ok());
  ASSERT_TRUE(session->Close().ok());
  std::vector<Tensor> out;
  EXPECT_EQ(session->Run({{"b", S(1)}}, {"c"}, {}, &out).code(),
            absl::StatusCode::kFailedPrecondition);
  G more;
  more.Const("z", S(0));
  EXPECT_EQ(session->Extend(more.def()).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(session->Close().ok());
}

// TensorFlow's session_partial_run_test, in C++: r1 = a + b and r2 = r1 * c, fed and
// fetched over several calls.
G PartialRunGraph() {
  G g;
  for (const char* name : {"a", "b", "c"}) g.Placeholder(name, DT_FLOAT);
  g.Binary("r1", "Add", "a", "b");
  g.Binary("r2", "Mul", "r1", "c");
  return g;
}

TEST_P(SessionConformanceTest, PartialRunFeedsAndFetchesOverSeveralCalls) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(PartialRunGraph().def()).ok());
  absl::StatusOr<std::string> h = session->PartialRunSetup({"a", "b", "c"}, {"r1", "r2"}, {});
  ASSERT_TRUE(h.ok()) << h.status();
  std::vector<Tensor> out;
  absl::Status s = session->PartialRun(*h, {{"a", S(1)}, {"b:0", S(2)}}, {"r1"}, &out);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(F(out[0]), 3.0f);
  // The second feed is computed from the first fetch.
  s = session->PartialRun(*h, {{"c", S(F(out[0]) * 17)}}, {"r2:0"}, &out);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(F(out[0]), 153.0f);
  // The last feed and fetch ended the partial run.
  s = session->PartialRun(*h, {}, {"r1"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("no partial run with handle"));
  // The same as one Run.
  ASSERT_TRUE(session->Run({{"a", S(1)}, {"b", S(2)}, {"c", S(51)}}, {"r2"}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 153.0f);
}

TEST_P(SessionConformanceTest, ManyPartialRunsInterleave) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(PartialRunGraph().def()).ok());
  std::vector<std::string> handles;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<std::string> h = session->PartialRunSetup({"a", "b", "c"}, {"r1", "r2"}, {});
    ASSERT_TRUE(h.ok()) << h.status();
    handles.push_back(*h);
  }
  std::vector<Tensor> out;
  for (int i = 0; i < 10; ++i) {
    absl::Status s = session->PartialRun(handles[i], {{"a", S(i)}, {"b", S(1)}}, {"r1"}, &out);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(F(out[0]), i + 1.0f);
  }
  // Finished in the reverse order, from two threads.
  std::vector<absl::Status> status(10);
  std::vector<float> r2(10);
  auto finish = [&](int from, int to) {
    for (int i = to - 1; i >= from; --i) {
      std::vector<Tensor> o;
      status[i] = session->PartialRun(handles[i], {{"c", S(2)}}, {"r2"}, &o);
      if (status[i].ok()) r2[i] = F(o[0]);
    }
  };
  std::thread other(finish, 0, 5);
  finish(5, 10);
  other.join();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(status[i].ok()) << i << ": " << status[i];
    EXPECT_EQ(r2[i], 2.0f * (i + 1)) << i;
  }
}

TEST_P(SessionConformanceTest, PartialRunFeedsAndFetchesFollowTheSetup) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(PartialRunGraph().def()).ok());
  absl::StatusOr<std::string> h = session->PartialRunSetup({"a", "b", "c"}, {"r1", "r2"}, {});
  ASSERT_TRUE(h.ok()) << h.status();
  std::vector<Tensor> out;
  auto expect_invalid = [](const absl::Status& s, const std::string& text) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(text));
  };
  // A fetch that needs a feed not given yet could never be computed.
  expect_invalid(session->PartialRun(*h, {{"a", S(1)}}, {"r2"}, &out),
                 "fetch 'r2' cannot be computed from the feeds given so far: it needs 'b:0', "
                 "'c:0'");
  expect_invalid(session->PartialRun(*h, {}, {"r1"}, &out),
                 "fetch 'r1' cannot be computed from the feeds given so far: it needs 'a:0', "
                 "'b:0'");
  expect_invalid(session->PartialRun(*h, {{"r1", S(1)}}, {}, &out),
                 "feed 'r1' was not specified in PartialRunSetup");
  expect_invalid(session->PartialRun(*h, {{"a", Tensor::Scalar<int32_t>(1)}}, {}, &out), "a:0");
  // The failed calls lost nothing.
  ASSERT_TRUE(session->PartialRun(*h, {{"a", S(1)}}, {}, &out).ok());
  expect_invalid(session->PartialRun(*h, {{"a", S(1)}}, {}, &out),
                 "feed 'a' has already been fed in this partial run");
  expect_invalid(session->PartialRun(*h, {}, {"c"}, &out),
                 "fetch 'c' was not specified in PartialRunSetup");
  ASSERT_TRUE(session->PartialRun(*h, {{"b", S(4)}}, {"r1"}, &out).ok());
  EXPECT_EQ(F(out[0]), 5.0f);
  expect_invalid(session->PartialRun(*h, {}, {"r1:0"}, &out),
                 "fetch 'r1:0' has already been fetched in this partial run");
  expect_invalid(session->PartialRun("no-such-handle", {}, {}, &out),
                 "no partial run with handle 'no-such-handle'");
  ASSERT_TRUE(session->PartialRun(*h, {{"c", S(3)}}, {"r2"}, &out).ok());
  EXPECT_EQ(F(out[0]), 15.0f);

  // Setup errors name the tensor, as Run's do.
  expect_invalid(session->PartialRunSetup({"a"}, {"nope"}, {}).status(), "nope");
  expect_invalid(session->PartialRunSetup({"a", "b"}, {"r2"}, {}).status(), "'c'");
  expect_invalid(session->PartialRunSetup({"a", "b"}, {"r1", "r1:0"}, {}).status(),
                 "fetch 'r1:0' is named twice");
}

TEST_P(SessionConformanceTest, PartialRunTargetsRunBeforeTheLastCallReturns) {
  const std::string v = absl::StrCat("partial_run_v_", GetParam().name);
  G g;
  g.Variable(v);
  g.Const("zero", S(0));
  g.Binary("init", "Assign", v, "zero");
  for (const char* name : {"a", "b"}) g.Placeholder(name, DT_FLOAT);
  g.Binary("inc", "AssignAdd", v, "a");
  g.Binary("bb", "Add", "b", "b");
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  ASSERT_TRUE(session->Run({}, {}, {"init"}, nullptr).ok());
  absl::StatusOr<std::string> h = session->PartialRunSetup({"a", "b"}, {"bb"}, {"inc"});
  ASSERT_TRUE(h.ok()) << h.status();
  std::vector<Tensor> out;
  ASSERT_TRUE(session->PartialRun(*h, {{"b", S(2)}}, {"bb"}, &out).ok());
  EXPECT_EQ(F(out[0]), 4.0f);
  ASSERT_TRUE(session->PartialRun(*h, {{"a", S(5)}}, {}, &out).ok());
  ASSERT_TRUE(session->Run({}, {v}, {}, &out).ok());
  EXPECT_EQ(F(out[0]), 5.0f);
}

TEST_P(SessionConformanceTest, AKernelErrorEndsThePartialRun) {
  G g;
  g.Placeholder("a", DT_FLOAT);
  g.Placeholder("b", DT_FLOAT);
  g.Binary("sum", "Add", "a", "b");
  g.Const("three", Tensor::FromVector<int32_t>({3}));
  SetNodeAttr(g.Op("bad", "Reshape", {"sum", "three"}), "T", DT_FLOAT);
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(g.def()).ok());
  absl::StatusOr<std::string> h = session->PartialRunSetup({"a", "b"}, {"bad", "sum"}, {});
  ASSERT_TRUE(h.ok()) << h.status();
  std::vector<Tensor> out;
  absl::Status s = session->PartialRun(*h, {{"a", S(1)}, {"b", S(2)}}, {"bad"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad"));
  s = session->PartialRun(*h, {}, {"sum"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("no partial run with handle"));
}

TEST_P(SessionConformanceTest, CloseEndsUnfinishedPartialRuns) {
  auto session = MakeSession();
  ASSERT_TRUE(session->Create(PartialRunGraph().def()).ok());
  absl::StatusOr<std::string> started = session->PartialRunSetup({"a", "b", "c"}, {"r1", "r2"}, {});
  absl::StatusOr<std::string> idle = session->PartialRunSetup({"a", "b", "c"}, {"r2"}, {});
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_TRUE(idle.ok()) << idle.status();
  std::vector<Tensor> out;
  // Its step now runs, waiting for c.
  ASSERT_TRUE(session->PartialRun(*started, {{"a", S(1)}, {"b", S(2)}}, {"r1"}, &out).ok());
  ASSERT_TRUE(session->Close().ok());
  EXPECT_EQ(session->PartialRun(*started, {{"c", S(1)}}, {"r2"}, &out).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(session->PartialRun(*idle, {}, {}, &out).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace overseer

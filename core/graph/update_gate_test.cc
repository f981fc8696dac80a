#include "core/graph/update_gate.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "core/graph/validate.h"
#include "core/node_def_util.h"
#include "core/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::ElementsAre;
using Keys = std::shared_ptr<const std::vector<std::string>>;

Keys MakeKeys(std::vector<std::string> keys) {
  return std::make_shared<const std::vector<std::string>>(std::move(keys));
}

// A graph built node by node (TextFormat's parser trips ThreadSanitizer in the
// system's uninstrumented libprotobuf).
class GraphMaker {
 public:
  NodeDef* Add(const std::string& name, const std::string& op, std::vector<std::string> inputs) {
    NodeDef* n = def_.add_node();
    n->set_name(name);
    n->set_op(op);
    for (const std::string& in : inputs) n->add_input(in);
    return n;
  }
  void Variable(const std::string& name, const std::string& container = "",
                const std::string& shared_name = "") {
    NodeDef* n = Add(name, "VariableV2", {});
    SetNodeAttr(n, "dtype", DT_FLOAT);
    SetNodeAttr(n, "shape", TensorShape({2}));
    if (!container.empty()) SetNodeAttr(n, "container", container);
    if (!shared_name.empty()) SetNodeAttr(n, "shared_name", shared_name);
  }
  void Const(const std::string& name, Tensor value) {
    NodeDef* n = Add(name, "Const", {});
    SetNodeAttr(n, "dtype", value.dtype());
    SetNodeAttr(n, "value", value);
  }
  std::unique_ptr<Graph> Build() {
    auto validated = ValidateAndIndexGraph(def_);
    EXPECT_TRUE(validated.ok()) << validated.status();
    return validated.ok() ? std::move(validated->graph) : nullptr;
  }

 private:
  GraphDef def_;
};

// w, v (container "c", shared_name "shared_v") and a Const "one".
GraphMaker Variables() {
  GraphMaker g;
  g.Variable("w");
  g.Variable("v", "c", "shared_v");
  Tensor one(DT_FLOAT, TensorShape({2}));
  one.data<float>()[0] = one.data<float>()[1] = 1;
  g.Const("one", one);
  return g;
}

TEST(StepVariableAccessTest, WritesFollowRefOutputsAndReadsAreNotWrites) {
  GraphMaker maker = Variables();
  SetNodeAttr(maker.Add("assign", "Assign", {"w", "one"}), "T", DT_FLOAT);
  SetNodeAttr(maker.Add("add", "AssignAdd", {"assign", "one"}), "T", DT_FLOAT);
  SetNodeAttr(maker.Add("initialized", "IsVariableInitialized", {"v"}), "dtype", DT_FLOAT);
  SetNodeAttr(maker.Add("read", "Identity", {"v"}), "T", DT_FLOAT);
  auto g = maker.Build();
  ASSERT_NE(g, nullptr);
  std::vector<std::string> devices(g->num_nodes(), "/job:ps/task:0");
  VariableAccess access = StepVariableAccess(*g, devices);
  EXPECT_THAT(access.written, ElementsAre("/job:ps/task:0||w"));
  EXPECT_THAT(access.touched, ElementsAre("/job:ps/task:0|c|shared_v", "/job:ps/task:0||w"));
  EXPECT_FALSE(access.snapshot);
}

TEST(StepVariableAccessTest, FindsTheSnapshot) {
  GraphMaker maker = Variables();
  maker.Const("id", Tensor::Scalar<std::string>("s"));
  Tensor names(DT_STRING, TensorShape({2}));
  names.data<std::string>()[0] = "w";
  names.data<std::string>()[1] = "v";
  maker.Const("names", names);
  NodeDef* snapshot = maker.Add("snapshot", "CheckpointSnapshot", {"id", "names", "w", "v"});
  SetNodeAttr(snapshot, "shard_id", int64_t{0});
  SetNodeAttr(snapshot, "dtypes", std::vector<DataType>{DT_FLOAT, DT_FLOAT});
  auto g = maker.Build();
  ASSERT_NE(g, nullptr);
  std::vector<std::string> devices(g->num_nodes(), "/job:ps/task:1");
  VariableAccess access = StepVariableAccess(*g, devices);
  EXPECT_TRUE(access.snapshot);
  EXPECT_TRUE(access.written.empty());
  EXPECT_THAT(access.touched, ElementsAre("/job:ps/task:1|c|shared_v", "/job:ps/task:1||w"));
}

TEST(UpdateGateTest, SnapshotWaitsForWritersAndHoldsNewOnes) {
  std::atomic<int> entered{0};
  UpdateGate gate(absl::Seconds(30), [&](absl::Duration waited, bool in) {
    EXPECT_GE(waited, absl::ZeroDuration());
    if (in) ++entered;
  });
  Keys w = MakeKeys({"w"});
  Keys other = MakeKeys({"x"});
  gate.EnterWriterBlocking(w);

  std::atomic<bool> snapshotted{false};
  std::thread snapshot([&] {
    ASSERT_TRUE(gate.EnterSnapshot(MakeKeys({"v", "w"})).ok());
    snapshotted = true;
  });
  // The snapshot now waits for the writer; a new writer of w waits for the snapshot.
  std::atomic<bool> second_ran{false};
  while (true) {
    gate.EnterWriter(w, [&] { second_ran = true; });
    if (!second_ran) break;  // Held: the snapshot has registered.
    gate.ExitWriter(w);      // Entered before the snapshot registered; try again.
    second_ran = false;
  }
  EXPECT_EQ(gate.waiting_writers(), 1);
  // A writer of another variable is not held.
  bool other_ran = false;
  gate.EnterWriter(other, [&] { other_ran = true; });
  EXPECT_TRUE(other_ran);
  gate.ExitWriter(other);
  EXPECT_FALSE(snapshotted);

  gate.ExitWriter(w);  // The first writer ends: the snapshot runs.
  snapshot.join();
  EXPECT_TRUE(snapshotted);
  EXPECT_EQ(entered, 1);
  EXPECT_FALSE(second_ran);
  gate.ExitSnapshot();  // Releases the held writer on this thread.
  EXPECT_TRUE(second_ran);
  EXPECT_EQ(gate.waiting_writers(), 0);
  gate.ExitWriter(w);
}

TEST(UpdateGateTest, SnapshotGivesUpAfterItsWaitAndReleasesTheWriters) {
  std::vector<bool> observed;  // Each snapshot's outcome, in order (one thread at a time).
  absl::Duration gave_up_after;
  UpdateGate gate(absl::Milliseconds(50), [&](absl::Duration waited, bool entered) {
    if (!entered) gave_up_after = waited;
    observed.push_back(entered);
  });
  Keys w = MakeKeys({"w"});
  gate.EnterWriterBlocking(w);  // Never exits before the snapshot's wait ends.
  absl::Notification held;
  std::thread snapshot([&] {
    absl::Status s = gate.EnterSnapshot(w);
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("variable w"));
  });
  snapshot.join();
  bool ran = false;
  gate.EnterWriter(w, [&] { ran = true; });
  EXPECT_TRUE(ran);
  gate.ExitWriter(w);
  gate.ExitWriter(w);
  // And the gate works again.
  EXPECT_TRUE(gate.EnterSnapshot(w).ok());
  gate.ExitSnapshot();
  EXPECT_THAT(observed, ElementsAre(false, true));
  EXPECT_GE(gave_up_after, absl::Milliseconds(50));
}

TEST(UpdateGateTest, ConcurrentWritersAndSnapshotsNeverOverlap) {
  UpdateGate gate;
  Keys w = MakeKeys({"w"});
  std::atomic<int> writers{0};
  std::atomic<bool> overlap{false};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      while (!stop) {
        gate.EnterWriterBlocking(w);
        ++writers;
        std::this_thread::yield();
        --writers;
        gate.ExitWriter(w);
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(gate.EnterSnapshot(w).ok());
    if (writers.load() != 0) overlap = true;
    std::this_thread::yield();
    if (writers.load() != 0) overlap = true;
    gate.ExitSnapshot();
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overlap);
}

}  // namespace
}  // namespace overseer

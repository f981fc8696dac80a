#include "core/graph/update_gate.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "core/graph/validate.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::ElementsAre;
using Keys = std::shared_ptr<const std::vector<std::string>>;

Keys MakeKeys(std::vector<std::string> keys) {
  return std::make_shared<const std::vector<std::string>>(std::move(keys));
}

std::unique_ptr<Graph> Parse(const std::string& text) {
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  auto validated = ValidateAndIndexGraph(def);
  EXPECT_TRUE(validated.ok()) << validated.status();
  return std::move(validated->graph);
}

constexpr char kVariables[] = R"pb(
  node {
    name: "w"
    op: "VariableV2"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value { shape { dim { size: 2 } } }
    }
  }
  node {
    name: "v"
    op: "VariableV2"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value { shape { dim { size: 2 } } }
    }
    attr {
      key: "container"
      value { s: "c" }
    }
    attr {
      key: "shared_name"
      value { s: "shared_v" }
    }
  }
  node {
    name: "one"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape { dim { size: 2 } }
          float_val: 1
        }
      }
    }
  }
)pb";

TEST(StepVariableAccessTest, WritesFollowRefOutputsAndReadsAreNotWrites) {
  auto g = Parse(std::string(kVariables) + R"pb(
    node {
      name: "assign"
      op: "Assign"
      input: "w"
      input: "one"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "add"
      op: "AssignAdd"
      input: "assign"
      input: "one"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "initialized"
      op: "IsVariableInitialized"
      input: "v"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "read"
      op: "Identity"
      input: "v"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  std::vector<std::string> devices(g->num_nodes(), "/job:ps/task:0");
  VariableAccess access = StepVariableAccess(*g, devices);
  EXPECT_THAT(access.written, ElementsAre("/job:ps/task:0||w"));
  EXPECT_THAT(access.touched, ElementsAre("/job:ps/task:0|c|shared_v", "/job:ps/task:0||w"));
  EXPECT_FALSE(access.snapshot);
}

TEST(StepVariableAccessTest, FindsTheSnapshot) {
  auto g = Parse(std::string(kVariables) + R"pb(
    node {
      name: "id"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_STRING }
      }
      attr {
        key: "value"
        value { tensor { dtype: DT_STRING string_val: "s" } }
      }
    }
    node {
      name: "names"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_STRING }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_STRING
            tensor_shape { dim { size: 2 } }
            string_val: "w"
            string_val: "v"
          }
        }
      }
    }
    node {
      name: "snapshot"
      op: "CheckpointSnapshot"
      input: "id"
      input: "names"
      input: "w"
      input: "v"
      attr {
        key: "shard_id"
        value { i: 0 }
      }
      attr {
        key: "dtypes"
        value { list { type: DT_FLOAT type: DT_FLOAT } }
      }
    }
  )pb");
  std::vector<std::string> devices(g->num_nodes(), "/job:ps/task:1");
  VariableAccess access = StepVariableAccess(*g, devices);
  EXPECT_TRUE(access.snapshot);
  EXPECT_TRUE(access.written.empty());
  EXPECT_THAT(access.touched, ElementsAre("/job:ps/task:1|c|shared_v", "/job:ps/task:1||w"));
}

TEST(UpdateGateTest, SnapshotWaitsForWritersAndHoldsNewOnes) {
  UpdateGate gate;
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
    gate.ExitWriter(*w);     // Entered before the snapshot registered; try again.
    second_ran = false;
  }
  EXPECT_EQ(gate.waiting_writers(), 1);
  // A writer of another variable is not held.
  bool other_ran = false;
  gate.EnterWriter(other, [&] { other_ran = true; });
  EXPECT_TRUE(other_ran);
  gate.ExitWriter(*other);
  EXPECT_FALSE(snapshotted);

  gate.ExitWriter(*w);  // The first writer ends: the snapshot runs.
  snapshot.join();
  EXPECT_TRUE(snapshotted);
  EXPECT_FALSE(second_ran);
  gate.ExitSnapshot();  // Releases the held writer on this thread.
  EXPECT_TRUE(second_ran);
  EXPECT_EQ(gate.waiting_writers(), 0);
  gate.ExitWriter(*w);
}

TEST(UpdateGateTest, SnapshotGivesUpAfterItsWaitAndReleasesTheWriters) {
  UpdateGate gate(absl::Milliseconds(50));
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
  gate.ExitWriter(*w);
  gate.ExitWriter(*w);
  // And the gate works again.
  EXPECT_TRUE(gate.EnterSnapshot(w).ok());
  gate.ExitSnapshot();
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
        gate.ExitWriter(*w);
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

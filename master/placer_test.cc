#include "master/placer.h"

#include "core/graph/prune.h"
#include "core/graph/validate.h"
#include "gtest/gtest.h"
#include "master/placement_test_util.h"

namespace overseer {
namespace {

using test::AddBinary;
using test::AddConst;
using test::AddVariable;

const std::vector<std::string> kDevices = {
    "/job:ps/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:1/device:CPU:0",
    "/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"};
const char kWorker0[] = "/job:worker/replica:0/task:0/device:CPU:0";

absl::StatusOr<std::vector<std::string>> Place(GraphDef g,
                                               const std::string& default_device = kWorker0) {
  auto v = ValidateAndIndexGraph(std::move(g));
  if (!v.ok()) return v.status();
  return PlaceGraph(*v->graph, kDevices, default_device);
}

TEST(PlacerTest, UnconstrainedNodesGoToTheDefaultDevice) {
  GraphDef g;
  AddConst(&g, "a", 1);
  AddConst(&g, "b", 2);
  AddBinary(&g, "c", "Add", "a", "b");
  auto p = Place(g);
  ASSERT_TRUE(p.ok()) << p.status();
  for (const auto& d : *p) EXPECT_EQ(d, kWorker0);
}

TEST(PlacerTest, PartialNamesPickAMatchingDevice) {
  GraphDef g;
  AddConst(&g, "a", 1, "/job:ps");
  AddConst(&g, "b", 2, "/job:ps/task:1");
  AddConst(&g, "c", 3, "/device:CPU:0");
  AddConst(&g, "d", 4, "/job:worker/task:1/device:CPU:0");
  auto p = Place(g);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[0], kDevices[0]);
  EXPECT_EQ((*p)[1], kDevices[1]);
  EXPECT_EQ((*p)[2], kWorker0);  // Prefers the default task.
  EXPECT_EQ((*p)[3], kDevices[3]);
}

TEST(PlacerTest, VariableUsersAreColocatedThroughRefEdges) {
  GraphDef g;
  AddVariable(&g, "w", "/job:ps/task:1");
  AddConst(&g, "init", 1);
  AddBinary(&g, "assign", "Assign", "w", "init");
  AddBinary(&g, "read", "Add", "w", "init");  // Reads the value: not colocated.
  auto v = ValidateAndIndexGraph(g);
  ASSERT_TRUE(v.ok()) << v.status();
  auto p = PlaceGraph(*v->graph, kDevices, kWorker0);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[v->graph->FindNode("assign")], kDevices[1]);
  EXPECT_EQ((*p)[v->graph->FindNode("init")], kWorker0);
  EXPECT_EQ((*p)[v->graph->FindNode("read")], kWorker0);
}

TEST(PlacerTest, ClassAttrColocates) {
  GraphDef g;
  AddConst(&g, "a", 1, "/job:ps/task:1");
  NodeDef* b = AddConst(&g, "b", 2);
  (*b->mutable_attr())["_class"].mutable_list()->add_s("loc:@a");
  NodeDef* c = AddConst(&g, "c", 3);
  (*c->mutable_attr())["_class"].mutable_list()->add_s("loc:@pruned_away");
  auto p = Place(g);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[1], kDevices[1]);
  EXPECT_EQ((*p)[2], kWorker0);
}

TEST(PlacerTest, UnknownDeviceIsInvalidArgumentNamingTheNode) {
  GraphDef g;
  AddConst(&g, "a", 1, "/job:ps/task:7");
  auto p = Place(g);
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("'a'"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("/job:ps/task:7"), std::string::npos) << p.status();

  GraphDef bad;
  AddConst(&bad, "x", 1, "/jobb:ps");
  p = Place(bad);
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("'x'"), std::string::npos) << p.status();
}

// TensorFlow's allow_soft_placement: a device type no task has falls back to the named
// task's device; the job and task still hold.
TEST(PlacerTest, SoftPlacementDropsOnlyTheDeviceType) {
  GraphDef g;
  AddConst(&g, "gpu", 1, "/job:worker/task:1/device:GPU:0");
  auto hard = Place(g);
  ASSERT_EQ(hard.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(hard.status().message().find("'gpu'"), std::string::npos) << hard.status();
  auto v = ValidateAndIndexGraph(g);
  ASSERT_TRUE(v.ok()) << v.status();
  auto soft = PlaceGraph(*v->graph, kDevices, kWorker0, /*allow_soft_placement=*/true);
  ASSERT_TRUE(soft.ok()) << soft.status();
  EXPECT_EQ((*soft)[0], kDevices[3]);

  GraphDef missing_task;
  AddConst(&missing_task, "far", 1, "/job:ps/task:7/device:GPU:0");
  auto w = ValidateAndIndexGraph(missing_task);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(PlaceGraph(*w->graph, kDevices, kWorker0, true).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PlacerTest, ColocationConflictIsInvalidArgument) {
  GraphDef g;
  AddVariable(&g, "w", "/job:ps/task:0");
  AddConst(&g, "init", 1);
  AddBinary(&g, "assign", "Assign", "w", "init", "/job:worker");
  auto p = Place(g);
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("assign"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("'w'"), std::string::npos) << p.status();
}

TEST(PlacerTest, FeedNodesGoToTheDefaultDevice) {
  GraphDef g;
  AddConst(&g, "a", 1, "/job:ps/task:0");
  AddBinary(&g, "b", "Add", "a", "a", "/job:ps/task:0");
  auto v = ValidateAndIndexGraph(g);
  ASSERT_TRUE(v.ok());
  auto pruned = PruneGraph(*v->graph, {"a:0"}, {"b:0"}, {});
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  auto p = PlaceGraph(*pruned->graph, kDevices, kWorker0);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[pruned->feed_nodes[0]], kWorker0);
  EXPECT_EQ((*p)[pruned->fetches[0].node], kDevices[0]);
}

}  // namespace
}  // namespace overseer

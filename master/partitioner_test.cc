#include "master/partitioner.h"

#include "absl/container/flat_hash_map.h"
#include "core/cluster/rendezvous_key.h"
#include "core/graph/validate.h"
#include "core/node_def_util.h"
#include "gtest/gtest.h"
#include "master/placement_test_util.h"
#include "master/placer.h"

namespace overseer {
namespace {

using test::AddBinary;
using test::AddConst;
using test::AddVariable;

const char kPs0[] = "/job:ps/replica:0/task:0/device:CPU:0";
const char kWorker0[] = "/job:worker/replica:0/task:0/device:CPU:0";
const char kPsTask[] = "/job:ps/replica:0/task:0";
const char kWorkerTask[] = "/job:worker/replica:0/task:0";

uint64_t Incarnation(const std::string& device) { return device == kPs0 ? 0x11 : 0x22; }

struct Step {
  std::unique_ptr<Graph> full;
  PrunedGraph pruned;
  PartitionedGraph parts;
};

absl::StatusOr<Step> Partition(GraphDef g, const std::vector<std::string>& feeds,
                               const std::vector<std::string>& fetches,
                               const std::vector<std::string>& targets) {
  Step s;
  auto v = ValidateAndIndexGraph(std::move(g));
  if (!v.ok()) return v.status();
  s.full = std::move(v->graph);
  auto pruned = PruneGraph(*s.full, feeds, fetches, targets);
  if (!pruned.ok()) return pruned.status();
  s.pruned = std::move(*pruned);
  auto devices = PlaceGraph(*s.pruned.graph, {kPs0, kWorker0}, kWorker0);
  if (!devices.ok()) return devices.status();
  PartitionOptions options;
  options.incarnation = Incarnation;
  options.feed_names = feeds;
  options.fetch_names = fetches;
  auto parts = PartitionGraph(s.pruned, *devices, options);
  if (!parts.ok()) return parts.status();
  s.parts = std::move(*parts);
  return s;
}

absl::flat_hash_map<std::string, const NodeDef*> ByName(const GraphDef& g) {
  absl::flat_hash_map<std::string, const NodeDef*> m;
  for (const NodeDef& n : g.node()) m[n.name()] = &n;
  return m;
}

std::vector<const NodeDef*> OfOp(const GraphDef& g, const std::string& op) {
  std::vector<const NodeDef*> out;
  for (const NodeDef& n : g.node()) {
    if (n.op() == op) out.push_back(&n);
  }
  return out;
}

std::string KeyOf(const NodeDef& n) {
  return MakeRendezvousKey(GetNodeAttrOr<std::string>(n, "send_device", ""),
                           GetNodeAttrOr<int64_t>(n, "send_device_incarnation", 0),
                           GetNodeAttrOr<std::string>(n, "recv_device", ""),
                           GetNodeAttrOr<std::string>(n, "tensor_name", ""));
}

TEST(PartitionerTest, SingleTaskNeedsNoSendRecvExceptForFetches) {
  GraphDef g;
  AddConst(&g, "a", 1);
  AddBinary(&g, "b", "Add", "a", "a");
  auto s = Partition(g, {}, {"b:0"}, {});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->parts.partitions.size(), 1u);
  const GraphDef& w = s->parts.partitions.at(kWorkerTask);
  EXPECT_TRUE(OfOp(w, kRecvOp).empty());
  auto sends = OfOp(w, kSendOp);
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_TRUE(GetNodeAttrOr<bool>(*sends[0], "client_terminated", false));
  EXPECT_EQ(sends[0]->input(0), "b");
  ASSERT_EQ(s->parts.fetches.size(), 1u);
  EXPECT_EQ(s->parts.fetches[0].task, kWorkerTask);
  EXPECT_EQ(s->parts.fetches[0].key, KeyOf(*sends[0]));
  EXPECT_EQ(s->parts.fetches[0].key, MakeRendezvousKey(kWorker0, 0x22, kWorker0, "b:0"));
  for (const NodeDef& n : w.node()) EXPECT_EQ(n.device(), kWorker0) << n.name();
}

TEST(PartitionerTest, CrossTaskDataEdgeGetsOneSendRecvPair) {
  GraphDef g;
  AddVariable(&g, "w", "/job:ps");
  AddConst(&g, "one", 1);
  AddBinary(&g, "assign", "Assign", "w", "one");
  AddBinary(&g, "x", "Mul", "w", "one");
  AddBinary(&g, "y", "Add", "w", "x");  // Reads w again: still one pair.
  auto s = Partition(g, {}, {"y:0"}, {"assign"});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->parts.partitions.size(), 2u);
  const GraphDef& ps = s->parts.partitions.at(kPsTask);
  const GraphDef& wk = s->parts.partitions.at(kWorkerTask);
  // one -> assign (ps) and w -> x, y (worker) cross the tasks.
  auto ps_sends = OfOp(ps, kSendOp), ps_recvs = OfOp(ps, kRecvOp);
  auto wk_sends = OfOp(wk, kSendOp), wk_recvs = OfOp(wk, kRecvOp);
  ASSERT_EQ(ps_sends.size(), 1u);
  ASSERT_EQ(ps_recvs.size(), 1u);
  ASSERT_EQ(wk_recvs.size(), 1u);
  ASSERT_EQ(wk_sends.size(), 2u);  // one -> ps, and the fetch of y.
  EXPECT_EQ(KeyOf(*ps_sends[0]), KeyOf(*wk_recvs[0]));
  EXPECT_EQ(GetNodeAttrOr<int64_t>(*ps_sends[0], "send_device_incarnation", 0), 0x11);
  EXPECT_EQ(GetNodeAttrOr<DataType>(*ps_sends[0], "T", DT_INVALID), DT_FLOAT);  // Not a ref.
  auto wk_nodes = ByName(wk);
  EXPECT_EQ(wk_nodes.at("x")->input(0), wk_recvs[0]->name());
  EXPECT_EQ(wk_nodes.at("y")->input(0), wk_recvs[0]->name());
  EXPECT_EQ(wk_nodes.at("y")->input(1), "x");
  auto ps_nodes = ByName(ps);
  EXPECT_EQ(ps_nodes.at("assign")->input(0), "w");
  EXPECT_EQ(ps_nodes.at("assign")->input(1), ps_recvs[0]->name());
  EXPECT_EQ(ps_nodes.at("assign")->device(), kPs0);
}

TEST(PartitionerTest, CrossTaskControlEdgeSendsADummyConst) {
  GraphDef g;
  AddConst(&g, "a", 1, "/job:ps");
  NodeDef* b = AddConst(&g, "b", 2);
  b->add_input("^a");
  auto s = Partition(g, {}, {"b:0"}, {});
  ASSERT_TRUE(s.ok()) << s.status();
  const GraphDef& ps = s->parts.partitions.at(kPsTask);
  const GraphDef& wk = s->parts.partitions.at(kWorkerTask);
  auto sends = OfOp(ps, kSendOp);
  ASSERT_EQ(sends.size(), 1u);
  auto ps_nodes = ByName(ps);
  const NodeDef* dummy = ps_nodes.at(sends[0]->input(0));
  EXPECT_EQ(dummy->op(), "Const");
  EXPECT_EQ(dummy->input(0), "^a");
  auto recvs = OfOp(wk, kRecvOp);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(KeyOf(*sends[0]), KeyOf(*recvs[0]));
  EXPECT_EQ(ByName(wk).at("b")->input(0), "^" + recvs[0]->name());
}

TEST(PartitionerTest, ControlEdgesFromOneTaskToANodeShareOneSendRecvPair) {
  // As an optimizer's update group on the worker waits for every apply on the ps.
  GraphDef g;
  AddConst(&g, "a", 1, "/job:ps");
  AddConst(&g, "b", 2, "/job:ps");
  AddConst(&g, "c", 3, "/job:ps");
  NodeDef* group = AddConst(&g, "group", 4);
  for (const char* input : {"^a", "^b", "^c"}) group->add_input(input);
  NodeDef* again = AddConst(&g, "again", 5);  // The same three: the same pair.
  for (const char* input : {"^c", "^a", "^b"}) again->add_input(input);
  NodeDef* one = AddConst(&g, "one", 6);  // One edge alone keeps its own pair.
  one->add_input("^a");
  auto s = Partition(g, {}, {"group:0", "again:0", "one:0"}, {});
  ASSERT_TRUE(s.ok()) << s.status();
  const GraphDef& ps = s->parts.partitions.at(kPsTask);
  const GraphDef& wk = s->parts.partitions.at(kWorkerTask);
  auto sends = OfOp(ps, kSendOp);
  auto recvs = OfOp(wk, kRecvOp);
  ASSERT_EQ(sends.size(), 2u);
  ASSERT_EQ(recvs.size(), 2u);
  auto ps_nodes = ByName(ps);
  auto wk_nodes = ByName(wk);
  const NodeDef* group_recv = wk_nodes.at(wk_nodes.at("group")->input(0).substr(1));
  ASSERT_EQ(wk_nodes.at("group")->input_size(), 1);
  EXPECT_EQ(wk_nodes.at("again")->input_size(), 1);
  EXPECT_EQ(wk_nodes.at("again")->input(0), wk_nodes.at("group")->input(0));
  // The group's dummy waits for all three; its pair is not the single edge's.
  const NodeDef* group_send = nullptr;
  for (const NodeDef* send : sends) {
    if (KeyOf(*send) == KeyOf(*group_recv)) group_send = send;
  }
  ASSERT_NE(group_send, nullptr);
  const NodeDef* dummy = ps_nodes.at(group_send->input(0));
  EXPECT_EQ(dummy->op(), "Const");
  ASSERT_EQ(dummy->input_size(), 3);
  EXPECT_EQ(dummy->input(0), "^a");
  EXPECT_EQ(dummy->input(1), "^b");
  EXPECT_EQ(dummy->input(2), "^c");
  EXPECT_NE(wk_nodes.at("one")->input(0), wk_nodes.at("group")->input(0));
}

TEST(PartitionerTest, FeedsBecomeClientTerminatedRecvs) {
  GraphDef g;
  AddConst(&g, "a", 1);
  AddBinary(&g, "b", "Add", "a", "a", "/job:ps");
  auto s = Partition(g, {"a:0"}, {"b:0", "a:0", "b:0"}, {});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->parts.feeds.size(), 1u);
  EXPECT_EQ(s->parts.feeds[0].task, kWorkerTask);
  EXPECT_EQ(s->parts.feeds[0].key, MakeRendezvousKey(kWorker0, 0x22, kWorker0, "a:0"));
  const GraphDef& wk = s->parts.partitions.at(kWorkerTask);
  int client_recvs = 0;
  for (const NodeDef* r : OfOp(wk, kRecvOp)) {
    if (GetNodeAttrOr<bool>(*r, "client_terminated", false)) {
      ++client_recvs;
      EXPECT_EQ(KeyOf(*r), s->parts.feeds[0].key);
    }
  }
  EXPECT_EQ(client_recvs, 1);
  ASSERT_EQ(s->parts.fetches.size(), 3u);
  EXPECT_EQ(s->parts.fetches[0].task, kPsTask);
  EXPECT_EQ(s->parts.fetches[1].task, kWorkerTask);
  EXPECT_EQ(s->parts.fetches[2].key, s->parts.fetches[0].key);
  EXPECT_EQ(OfOp(s->parts.partitions.at(kPsTask), kSendOp).size(), 1u);
}

}  // namespace
}  // namespace overseer

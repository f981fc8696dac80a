#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/cluster/rendezvous_key.h"
#include "core/executor/executor.h"
#include "core/executor/thread_pool.h"
#include "core/graph/validate.h"
#include "core/kernels/testing/kernel_test_util.h"
#include "core/node_def_util.h"
#include "core/rendezvous.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

constexpr char kPs[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorker[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr int64_t kIncarnation = 0x5eed;

void SetEdgeAttrs(NodeDef* n, DataType dtype, const std::string& tensor_name) {
  SetNodeAttr(n, "T", dtype);
  SetNodeAttr(n, "tensor_name", tensor_name);
  SetNodeAttr(n, "send_device", std::string(kPs));
  SetNodeAttr(n, "send_device_incarnation", kIncarnation);
  SetNodeAttr(n, "recv_device", std::string(kWorker));
}

void SetEdgeAttrs(test::KernelRunner* runner, DataType dtype, const std::string& tensor_name) {
  runner->Attr("T", dtype)
      .Attr("tensor_name", tensor_name)
      .Attr("send_device", std::string(kPs))
      .Attr("send_device_incarnation", kIncarnation)
      .Attr("recv_device", std::string(kWorker));
}

RendezvousKey Key(const std::string& tensor_name) {
  return *RendezvousKey::Parse(MakeRendezvousKey(kPs, kIncarnation, kWorker, tensor_name));
}

TEST(SendRecvKernelTest, SendDeliversUnderTheKeyItsAttrsName) {
  auto rendezvous = LocalRendezvous::Create();
  test::KernelRunner send("_Send");
  SetEdgeAttrs(&send, DT_FLOAT, "x:0");
  send.set_rendezvous(rendezvous.get());
  ASSERT_TRUE(send.Run({test::Value(test::AsScalar<float>(4))}).ok());
  absl::StatusOr<Tensor> got = rendezvous->Recv(Key("x:0"), {});
  ASSERT_TRUE(got.ok()) << got.status();
  test::ExpectTensorEqual(*got, test::AsScalar<float>(4));
}

TEST(SendRecvKernelTest, RecvOutputsTheSentTensor) {
  auto rendezvous = LocalRendezvous::Create();
  ASSERT_TRUE(rendezvous->Send(Key("y:0"), test::AsTensor<int32_t>({1, 2, 3})).ok());
  test::KernelRunner recv("_Recv");
  SetEdgeAttrs(&recv, DT_INT32, "y:0");
  recv.set_rendezvous(rendezvous.get());
  auto out = recv.Run({});
  ASSERT_TRUE(out.ok()) << out.status();
  test::ExpectTensorEqual(out->at(0), test::AsTensor<int32_t>({1, 2, 3}));
}

TEST(SendRecvKernelTest, RecvOfTheWrongDtypeIsInvalid) {
  auto rendezvous = LocalRendezvous::Create();
  ASSERT_TRUE(rendezvous->Send(Key("z:0"), test::AsScalar<int32_t>(1)).ok());
  test::KernelRunner recv("_Recv");
  SetEdgeAttrs(&recv, DT_FLOAT, "z:0");
  recv.set_rendezvous(rendezvous.get());
  absl::Status s = recv.Run({}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s;
}

TEST(SendRecvKernelTest, WithoutARendezvousFailsPrecondition) {
  test::KernelRunner recv("_Recv");
  SetEdgeAttrs(&recv, DT_FLOAT, "w:0");
  EXPECT_EQ(recv.Run({}).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(SendRecvKernelTest, RecvStopsAtTheStepDeadline) {
  auto rendezvous = LocalRendezvous::Create();
  test::KernelRunner recv("_Recv");
  SetEdgeAttrs(&recv, DT_FLOAT, "never:0");
  recv.set_rendezvous(rendezvous.get());
  recv.set_deadline(absl::Now() - absl::Seconds(1));
  EXPECT_EQ(recv.Run({}).status().code(), absl::StatusCode::kDeadlineExceeded);
}

// Two executors (the two partitions of one step) joined by one rendezvous.
TEST(SendRecvKernelTest, TwoPartitionsExchangeATensorThroughTheExecutor) {
  GraphDef producer;
  NodeDef* c = producer.add_node();
  c->set_name("c");
  c->set_op("Const");
  SetNodeAttr(c, "dtype", DT_FLOAT);
  SetNodeAttr(c, "value", test::AsTensor<float>({1.5f, -2.0f}));
  NodeDef* send = producer.add_node();
  send->set_name("c/_send");
  send->set_op("_Send");
  send->add_input("c");
  SetEdgeAttrs(send, DT_FLOAT, "c:0");

  GraphDef consumer;
  NodeDef* recv = consumer.add_node();
  recv->set_name("c/_recv");
  recv->set_op("_Recv");
  SetEdgeAttrs(recv, DT_FLOAT, "c:0");
  NodeDef* neg = consumer.add_node();
  neg->set_name("neg");
  neg->set_op("Neg");
  neg->add_input("c/_recv");
  SetNodeAttr(neg, "T", DT_FLOAT);

  ThreadPool pool(DefaultMinThreads());
  KernelCache kernels;
  auto build = [&](GraphDef def, std::vector<std::string> fetches,
                   std::vector<std::string> targets) -> std::unique_ptr<Executor> {
    auto validated = ValidateAndIndexGraph(std::move(def));
    EXPECT_TRUE(validated.ok()) << validated.status();
    auto pruned = PruneGraph(*validated->graph, {}, fetches, targets);
    EXPECT_TRUE(pruned.ok()) << pruned.status();
    auto executor = Executor::Create(std::move(*pruned), &kernels, &pool);
    EXPECT_TRUE(executor.ok()) << executor.status();
    return std::move(*executor);
  };
  std::unique_ptr<Executor> producer_exec = build(producer, {}, {"c/_send"});
  std::unique_ptr<Executor> consumer_exec = build(consumer, {"neg:0"}, {});

  auto rendezvous = LocalRendezvous::Create();
  ResourceMgr resources;
  ExecutorRunArgs args;
  args.resource_mgr = &resources;
  args.clock = Clock::Real();
  args.rendezvous = rendezvous.get();
  std::vector<Tensor> fetched;
  absl::Status consumer_status;
  std::thread consumer_thread([&] { consumer_status = consumer_exec->Run(args, &fetched); });
  ASSERT_TRUE(producer_exec->Run(args, nullptr).ok());
  consumer_thread.join();
  ASSERT_TRUE(consumer_status.ok()) << consumer_status;
  test::ExpectTensorEqual(fetched.at(0), test::AsTensor<float>({-1.5f, 2.0f}));
}

}  // namespace
}  // namespace overseer

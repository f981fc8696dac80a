// Requests that ask a server for more memory than a tensor can hold or the process may
// spend, sent to a real cluster (a master, a ps and a worker, each its own process):
// every one fails its step with INVALID_ARGUMENT or RESOURCE_EXHAUSTED naming the node,
// and every server keeps serving. Before, a Fill of 2^33 floats aborted the worker
// ("out of memory allocating 34359738368 bytes"), as did a feed of shape [2^61] with no
// values, and a float Const of shape [2^62] got a 0-byte buffer (the byte size wrapped)
// that crashed the task which read it. A remote graph may not use the files of a
// server's host as checkpoint locations. And RecvTensor calls for a step that never
// comes end (before, each held a server thread for as long as its caller waited).

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "client/graph/ops.h"
#include "client/graph/scope.h"
#include "client/session/grpc_session.h"
#include "client/session/session.h"
#include "core/cluster/rendezvous_key.h"
#include "core/rpc/grpc_status.h"
#include "gtest/gtest.h"
#include "master/rpc/grpc_master.h"
#include "proto/master.pb.h"
#include "proto/worker.pb.h"
#include "testing/local_cluster.h"
#include "worker/rpc/grpc_worker.h"

namespace overseer {
namespace {

constexpr int64_t kBudget = int64_t{1} << 30;  // The servers' --tensor_memory_budget_bytes.
// The workers' --recv_wait_for_step_seconds: long enough that the RunGraph of a real
// step reaches every task in time on a loaded machine.
constexpr int kRecvWaitForStepSeconds = 5;

class HostileRequestsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    test::LocalClusterOptions options;
    options.worker_flags = {
        "--tensor_memory_budget_bytes=" + std::to_string(kBudget),
        "--recv_wait_for_step_seconds=" + std::to_string(kRecvWaitForStepSeconds)};
    options.master_flags = {"--tensor_memory_budget_bytes=" + std::to_string(kBudget)};
    auto cluster = test::LocalCluster::Start(std::move(options));
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  // A session on the cluster with `graph` created, or the creation's error.
  absl::StatusOr<std::unique_ptr<Session>> Created(const GraphDef& graph) {
    SessionOptions options;
    options.target = cluster_->master_target();
    options.config.set_operation_timeout_in_ms(60000);
    auto session = GrpcSession::Connect(options);
    if (!session.ok()) return session.status();
    absl::Status created = (*session)->Create(graph);
    if (!created.ok()) return created;
    return std::unique_ptr<Session>(*std::move(session));
  }

  // The same for the graph `scope` built.
  absl::StatusOr<std::unique_ptr<Session>> Created(const Scope& scope) {
    GraphDef graph;
    absl::Status built = scope.ToGraphDef(&graph);
    if (!built.ok()) return built;
    return Created(graph);
  }

  // Every server is still running and a step over the ps and the worker still works.
  void ExpectServing() {
    EXPECT_TRUE(cluster_->IsRunning("worker", 0)) << cluster_->Log("worker", 0);
    EXPECT_TRUE(cluster_->IsRunning("ps", 0)) << cluster_->Log("ps", 0);
    EXPECT_TRUE(cluster_->IsRunning("master", 0)) << cluster_->Log("master", 0);
    Scope root = Scope::NewRootScope();
    Output c = ops::Const(root.WithDevice("/job:worker/task:0").WithOpName("c"), 2.0f);
    ops::Add(root.WithDevice("/job:ps/task:0").WithOpName("sum"), c, 1.0f);
    auto session = Created(root);
    ASSERT_TRUE(session.ok()) << session.status();
    std::vector<Tensor> out;
    absl::Status good = (*session)->Run({}, {"sum:0"}, {}, &out);
    ASSERT_TRUE(good.ok()) << good;
    EXPECT_EQ(out[0].scalar<float>(), 3.0f);
  }

  // `status` failed with `code` and names `node`, and the servers keep serving.
  void ExpectRefusedAndServing(const absl::Status& status, absl::StatusCode code,
                               const std::string& node) {
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), node)) << status;
    ExpectServing();
  }

  static test::LocalCluster* cluster_;
};

test::LocalCluster* HostileRequestsTest::cluster_ = nullptr;

// The first request: d = Const int64 [2^33], v = 1.0, f = Fill(d, v) on the
// worker, fetched. 32 GiB is beyond the budget.
TEST_F(HostileRequestsTest, AFillBeyondTheMemoryBudgetIsResourceExhausted) {
  Scope worker = Scope::NewRootScope().WithDevice("/job:worker/task:0");
  Output d = ops::Const(worker.WithOpName("d"), Tensor::FromVector<int64_t>({int64_t{1} << 33}));
  Output v = ops::Const(worker.WithOpName("v"), 1.0f);
  ops::Fill(worker.WithOpName("f"), d, v);
  auto session = Created(worker);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  absl::Status s = (*session)->Run({}, {"f:0"}, {}, &out);
  ExpectRefusedAndServing(s, absl::StatusCode::kResourceExhausted, "f");
  EXPECT_TRUE(absl::StrContains(s.message(), "memory budget")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "[8589934592]")) << s;
}

// A tensor computed from small inputs can be enormous: the outer product of two
// [2^20] vectors holds 2^40 floats.
TEST_F(HostileRequestsTest, AnOuterProductBeyondTheBudgetIsResourceExhausted) {
  Scope worker = Scope::NewRootScope().WithDevice("/job:worker/task:0");
  Output column = ops::Fill(worker.WithOpName("column"),
                            ops::Const(worker, Tensor::FromVector<int64_t>({1 << 20, 1})), 1.0f);
  Output row = ops::Fill(worker.WithOpName("row"),
                         ops::Const(worker, Tensor::FromVector<int64_t>({1, 1 << 20})), 1.0f);
  ops::MatMul(worker.WithOpName("outer"), column, row);
  auto session = Created(worker);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  absl::Status s = (*session)->Run({}, {"outer:0"}, {}, &out);
  ExpectRefusedAndServing(s, absl::StatusCode::kResourceExhausted, "outer");
}

// A float Const of shape [2^62] with no values: its byte size (2^64) wrapped to 0.
TEST_F(HostileRequestsTest, AConstWhoseByteSizeOverflowsIsInvalidArgument) {
  GraphDef graph;
  NodeDef* node = graph.add_node();
  node->set_name("huge");
  node->set_op("Const");
  node->set_device("/job:worker/task:0");
  (*node->mutable_attr())["dtype"].set_type(DT_FLOAT);
  TensorProto* value = (*node->mutable_attr())["value"].mutable_tensor();
  value->set_dtype(DT_FLOAT);
  value->mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 62);
  NodeDef* add = graph.add_node();
  add->set_name("use");
  add->set_op("Neg");
  add->set_device("/job:ps/task:0");
  add->add_input("huge");
  (*add->mutable_attr())["T"].set_type(DT_FLOAT);
  auto session = Created(graph);
  absl::Status s = session.status();
  if (session.ok()) {  // Refused when the step builds the kernel, if not at creation.
    std::vector<Tensor> out;
    s = (*session)->Run({}, {"use:0"}, {}, &out);
  }
  ExpectRefusedAndServing(s, absl::StatusCode::kInvalidArgument, "huge");
  EXPECT_TRUE(absl::StrContains(s.message(), "2^62 bytes")) << s;
}

// A dtype that no enum value names (proto3 enums carry any int32): a Const's dtype attr
// and its value's dtype of 10^9. Naming it in the error used to recurse once per 100
// (10^7 frames) and crash the master with a stack overflow (found by
// //core:tensor_proto_fuzz).
TEST_F(HostileRequestsTest, AnUnknownDtypeIsInvalidArgument) {
  GraphDef graph;
  NodeDef* node = graph.add_node();
  node->set_name("odd");
  node->set_op("Const");
  node->set_device("/job:worker/task:0");
  (*node->mutable_attr())["dtype"].set_type(static_cast<DataType>(1000000000));
  TensorProto* value = (*node->mutable_attr())["value"].mutable_tensor();
  value->set_dtype(static_cast<DataType>(1000000000));
  auto session = Created(graph);
  absl::Status s = session.status();
  if (session.ok()) {
    std::vector<Tensor> out;
    s = (*session)->Run({}, {"odd:0"}, {}, &out);
  }
  ExpectRefusedAndServing(s, absl::StatusCode::kInvalidArgument, "odd");
}

// A feed of shape [2^61] with no values, sent as a TensorProto straight to the master
// (a client library would not build it), for an unknown-rank Placeholder on the worker.
TEST_F(HostileRequestsTest, AFeedTooLargeForATensorIsInvalidArgument) {
  Scope worker = Scope::NewRootScope().WithDevice("/job:worker/task:0");
  Output x = ops::Placeholder(worker.WithOpName("x"), DT_FLOAT);
  ops::Neg(worker.WithOpName("neg"), x);
  GraphDef graph;
  ASSERT_TRUE(worker.ToGraphDef(&graph).ok());

  GrpcMaster master(NewMasterChannel(cluster_->master_address()), absl::Seconds(60));
  CreateSessionRequest create;
  *create.mutable_graph_def() = graph;
  CreateSessionResponse created;
  ASSERT_TRUE(master.CreateSession(create, &created).ok());

  RunStepRequest request;
  request.set_session_handle(created.session_handle());
  NamedTensorProto* feed = request.add_feed();
  feed->set_name("x:0");
  feed->mutable_tensor()->set_dtype(DT_FLOAT);
  feed->mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 61);
  request.add_fetch("neg:0");
  RunStepResponse response;
  absl::Status s = master.RunStep(request, &response);
  ExpectRefusedAndServing(s, absl::StatusCode::kInvalidArgument, "feed 'x:0'");
  EXPECT_TRUE(absl::StrContains(s.message(), "2^62 bytes")) << s;
}

// An error that echoes a 1 MB input is cut to fit gRPC's trailing metadata: the client
// sees the real error, not RESOURCE_EXHAUSTED about the size of the metadata.
TEST_F(HostileRequestsTest, AnErrorEchoingAHugeNameKeepsItsCode) {
  Scope worker = Scope::NewRootScope().WithDevice("/job:worker/task:0");
  ops::Const(worker.WithOpName("c"), 1.0f);
  auto session = Created(worker);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  absl::Status s = (*session)->Run({}, {std::string(1 << 20, 'n') + ":0"}, {}, &out);
  EXPECT_TRUE(s.code() == absl::StatusCode::kNotFound ||
              s.code() == absl::StatusCode::kInvalidArgument)
      << s.ToString().substr(0, 300);
  EXPECT_LE(s.message().size(), kMaxGrpcErrorMessageBytes);
  EXPECT_TRUE(absl::StrContains(s.message(), "bytes, cut)")) << s.message().substr(0, 300);
  ExpectServing();
}

// The servers run without --checkpoint_roots: a remote graph's save or restore kernel
// on the ps may not use a directory of the ps host. Before, a restore read tensors from
// any directory, opening it deleted files it took for its own leftovers, and a save
// created the directories of any path.
TEST_F(HostileRequestsTest, ALocalCheckpointLocationOnAServerIsPermissionDenied) {
  const std::string outside = std::string(std::getenv("TEST_TMPDIR")) + "/host_files";
  std::filesystem::create_directories(outside);
  std::ofstream(outside + "/notes.tempstate") << "not the store's";
  std::ofstream(outside + "/model.ckpt-1.data-00000-of-00001") << "no index next to it";

  Scope ps = Scope::NewRootScope().WithDevice("/job:ps/task:0");
  ops::Const(ps.WithOpName("location"), outside);
  ops::Const(ps.WithOpName("new_location"), outside + "/made/here");
  ops::Const(ps.WithOpName("checkpoint"), std::string("model.ckpt-1"));
  ops::Const(ps.WithOpName("names"), Tensor::FromVector<std::string>({"w"}));
  ops::Const(ps.WithOpName("w"), 1.0f);
  GraphDef graph;
  ASSERT_TRUE(ps.ToGraphDef(&graph).ok()) << ps.status();
  NodeDef* restore = graph.add_node();
  restore->set_name("restore");
  restore->set_op("CheckpointRestore");
  restore->set_device("/job:ps/task:0");
  for (const char* input : {"location", "checkpoint", "names"}) restore->add_input(input);
  (*restore->mutable_attr())["dtypes"].mutable_list()->add_type(DT_FLOAT);
  NodeDef* save = graph.add_node();
  save->set_name("save");
  save->set_op("CheckpointSaveShard");
  save->set_device("/job:ps/task:0");
  for (const char* input : {"new_location", "checkpoint", "names", "w"}) save->add_input(input);
  (*save->mutable_attr())["dtypes"].mutable_list()->add_type(DT_FLOAT);
  (*save->mutable_attr())["shard_id"].set_i(0);
  auto session = Created(graph);
  ASSERT_TRUE(session.ok()) << session.status();

  std::vector<Tensor> out;
  absl::Status restored = (*session)->Run({}, {"restore:0"}, {}, &out);
  ExpectRefusedAndServing(restored, absl::StatusCode::kPermissionDenied, "restore");
  EXPECT_TRUE(absl::StrContains(restored.message(), "--checkpoint_roots")) << restored;
  absl::Status saved = (*session)->Run({}, {}, {"save"}, &out);
  ExpectRefusedAndServing(saved, absl::StatusCode::kPermissionDenied, "save");

  EXPECT_FALSE(std::filesystem::exists(outside + "/made")) << "the save created directories";
  EXPECT_TRUE(std::filesystem::exists(outside + "/notes.tempstate"));
  EXPECT_TRUE(std::filesystem::exists(outside + "/model.ckpt-1.data-00000-of-00001"));
}

// Callers that are no peers ask the ps, with no deadline of their own, for a tensor of
// a step that no master ever runs: each call ends DEADLINE_EXCEEDED after the ps's
// --recv_wait_for_step_seconds, and the ps keeps serving real steps.
TEST_F(HostileRequestsTest, RecvTensorsForAStepThatNeverComesEnd) {
  GrpcWorker ps(NewWorkerChannel(cluster_->cluster().jobs().at("ps")[0]));
  GetStatusResponse ps_status;
  ASSERT_TRUE(ps.GetStatus(GetStatusRequest(), &ps_status).ok());
  constexpr int kCalls = 40;
  std::vector<absl::Status> ended(kCalls);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      RecvTensorRequest request;  // timeout_in_ms 0: wait as long as the ps lets it.
      request.set_step_id(int64_t{1} << 50 | i);
      request.set_rendezvous_key(MakeRendezvousKey(
          "/job:ps/replica:0/task:0/device:CPU:0", ps_status.incarnation(),
          "/job:worker/replica:0/task:0/device:CPU:0", "edge_" + std::to_string(i)));
      Tensor ignored;
      ended[i] = ps.RecvTensor(request, nullptr, &ignored);
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (const absl::Status& status : ended) {
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), "no RunGraph of step")) << status;
  }
  ExpectServing();
}

}  // namespace
}  // namespace overseer

// Concurrency on one master_server over a real cluster (LocalCluster: a master, a ps
// and a worker): racing ExtendSession calls on one graph version, and several clients
// running steps at once.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/barrier.h"
#include "client/graph/ops.h"
#include "client/graph/scope.h"
#include "client/graph/variables.h"
#include "client/session/session.h"
#include "gtest/gtest.h"
#include "master/rpc/grpc_master.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

// "counter" (float, on the ps) with its initializer "counter/Assign" and "inc" adding
// 1 to it; "x" (float [], fed on the worker) and "y" = x * 2 on the ps.
GraphDef SharedGraph() {
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0");
  Scope worker = root.WithDevice("/job:worker/task:0");
  Variable counter = MakeVariable(ps.WithOpName("counter"), 0.0f);
  ops::AssignAdd(ps.WithOpName("inc"), counter.ref, 1.0f, /*use_locking=*/true);
  Output x = ops::Placeholder(worker.WithOpName("x"), DT_FLOAT, PartialShape({}));
  ops::Mul(ps.WithOpName("y"), x, 2.0f);
  GraphDef def;
  EXPECT_TRUE(root.ToGraphDef(&def).ok()) << root.status();
  return def;
}

class MasterConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = test::LocalCluster::Start(test::LocalClusterOptions());
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }
  std::unique_ptr<test::LocalCluster> cluster_;
};

// Every call extends version v with a node of its own; exactly one wins and the others
// are FAILED_PRECONDITION (the graph moved on), as MasterInterface::ExtendSession says.
TEST_F(MasterConcurrencyTest, OneOfManyConcurrentExtendsOnAVersionWins) {
  constexpr int kCalls = 100;
  const std::string address = cluster_->master_address();
  GrpcMaster master(NewMasterChannel(address), absl::Seconds(60));
  CreateSessionRequest create;
  *create.mutable_graph_def() = SharedGraph();
  CreateSessionResponse created;
  ASSERT_TRUE(master.CreateSession(create, &created).ok());

  std::vector<absl::Status> results(kCalls);
  std::vector<int64_t> versions(kCalls, -1);
  absl::Barrier* start = new absl::Barrier(kCalls);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      ExtendSessionRequest request;
      request.set_session_handle(created.session_handle());
      request.set_current_graph_version(created.graph_version());
      request.set_request_id(absl::StrCat("extend-", i));
      NodeDef* node = request.mutable_graph_def()->add_node();
      node->set_name(absl::StrCat("n", i));
      node->set_op("Const");
      node->set_device("/job:worker/task:0");
      (*node->mutable_attr())["dtype"].set_type(DT_FLOAT);
      Tensor::Scalar<float>(static_cast<float>(i))
          .ToProto((*node->mutable_attr())["value"].mutable_tensor());
      ExtendSessionResponse response;
      if (start->Block()) delete start;
      results[i] = master.ExtendSession(request, &response);
      versions[i] = response.new_graph_version();
    });
  }
  for (std::thread& t : threads) t.join();

  int winner = -1;
  for (int i = 0; i < kCalls; ++i) {
    if (results[i].ok()) {
      EXPECT_EQ(winner, -1) << "calls " << winner << " and " << i << " both succeeded";
      winner = i;
      EXPECT_GT(versions[i], created.graph_version());
    } else {
      EXPECT_EQ(results[i].code(), absl::StatusCode::kFailedPrecondition) << results[i];
    }
  }
  ASSERT_NE(winner, -1);

  // The winner's node is in the session's graph; a loser's is not.
  RunStepRequest run;
  run.set_session_handle(created.session_handle());
  run.add_fetch(absl::StrCat("n", winner, ":0"));
  RunStepResponse response;
  absl::Status s = master.RunStep(run, &response);
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<Tensor> value = Tensor::FromProto(response.tensor(0).tensor());
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(value->scalar<float>(), static_cast<float>(winner));
  run.set_fetch(0, absl::StrCat("n", (winner + 1) % kCalls, ":0"));
  EXPECT_FALSE(master.RunStep(run, &response).ok());
}

// Several clients, each with its own session on the master, run steps at the same
// time: every step succeeds with its own result, and the shared counter on the ps
// counts every step.
TEST_F(MasterConcurrencyTest, SeveralClientsRunStepsConcurrently) {
  constexpr int kClients = 4;
  constexpr int kSteps = 50;
  SessionOptions options;
  options.target = cluster_->master_target();
  options.config.set_operation_timeout_in_ms(60000);
  std::vector<std::unique_ptr<Session>> sessions;
  for (int c = 0; c < kClients; ++c) {
    auto session = NewSession(options);
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_TRUE((*session)->Create(SharedGraph()).ok());
    sessions.push_back(*std::move(session));
  }
  std::vector<Tensor> out;
  ASSERT_TRUE(sessions[0]->Run({}, {}, {"counter/Assign"}, &out).ok());

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < kSteps; ++i) {
        const float x = static_cast<float>(c * 1000 + i);
        std::vector<Tensor> result;
        absl::Status s =
            sessions[c]->Run({{"x:0", Tensor::Scalar<float>(x)}}, {"y:0"}, {"inc"}, &result);
        EXPECT_TRUE(s.ok()) << "client " << c << " step " << i << ": " << s;
        if (!s.ok() || result[0].scalar<float>() != 2 * x) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  absl::Status s = sessions[1]->Run({}, {"counter:0"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<float>(), kClients * kSteps);
}

}  // namespace
}  // namespace overseer

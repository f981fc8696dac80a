// Servers in the classic between-graph shape, each a real gRPC server on a loopback
// port it binds itself: a ps task and a worker task in one process (two Servers), a
// session on the worker's own target placing a variable on the ps, and the ps's Join
// returning once the job is signalled done; a local server; bad tasks refused.

#include "server/server.h"

#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "client/graph/ops.h"
#include "client/graph/variables.h"
#include "client/session/client_session.h"
#include "client/session/job.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(ServerTest, ClassicShapeVariablesOnThePsAndJoinUntilTheJobIsDone) {
  ServerOptions ps_options;
  // The ps starts first, on a free port (its own master, unused here, does not know
  // the worker's).
  ASSERT_TRUE(ps_options.cluster.AddJob("ps", {"127.0.0.1:1"}).ok());
  ASSERT_TRUE(ps_options.cluster.AddJob("worker", {"127.0.0.1:1"}).ok());
  ps_options.job_name = "ps";
  ps_options.port = 0;
  auto ps = Server::Create(ps_options);
  ASSERT_TRUE(ps.ok()) << ps.status();
  const std::string ps_address = *(*ps)->cluster().TaskAddress("ps", 0);
  ASSERT_TRUE(absl::StartsWith((*ps)->target(), "grpc://127.0.0.1:")) << (*ps)->target();
  EXPECT_EQ((*ps)->target(), "grpc://" + ps_address);

  ServerOptions worker_options;
  ASSERT_TRUE(worker_options.cluster.AddJob("ps", {ps_address}).ok());
  ASSERT_TRUE(worker_options.cluster.AddJob("worker", {"127.0.0.1:1"}).ok());
  worker_options.job_name = "worker";
  worker_options.port = 0;
  auto worker = Server::Create(worker_options);
  ASSERT_TRUE(worker.ok()) << worker.status();

  Scope root = Scope::NewRootScope();
  const Scope on_ps = root.WithDevice("/job:ps/task:0");
  Variable v = MakeVariable(on_ps.WithOpName("v"), Tensor::Scalar(1.0f));
  Output add = ops::AssignAdd(on_ps.WithOpName("add"), v.ref, ops::Const(on_ps, 1.0f));
  Output twice = ops::Mul(root.WithDevice("/job:worker/task:0"), v.value, 2.0f);
  SessionOptions options;
  options.target = (*worker)->target();
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {GlobalVariablesInitializer(root)}, &out).ok());
  ASSERT_TRUE((*session)->Run({add}, &out).ok());
  ASSERT_TRUE((*session)->Run({add}, &out).ok());
  ASSERT_TRUE((*session)->Run({twice}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 6.0f);  // v = 3 on the ps, doubled on the worker.
  ASSERT_TRUE((*session)->Close().ok());

  // The chief's end of the job reaches every task: the ps's Join returns.
  ASSERT_TRUE(SignalJobDone((*worker)->target(), "test finished").ok());
  (*ps)->Join();
  (*worker)->Join();
}

TEST(ServerTest, LocalServerRunsSessionsUntilStopped) {
  auto server = Server::CreateLocalServer();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(absl::StartsWith((*server)->target(), "grpc://127.0.0.1:")) << (*server)->target();
  Scope root = Scope::NewRootScope();
  Output sum = ops::Add(root, ops::Const(root, 2.0f), ops::Const(root, 3.0f));
  SessionOptions options;
  options.target = (*server)->target();
  auto session = ClientSession::Create(root, options);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({sum}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 5.0f);
  ASSERT_TRUE((*session)->Close().ok());
  (*server)->Stop();
  (*server)->Join();
  (*server)->Join();  // Again: returns at once.
}

TEST(ServerTest, ATaskNotInTheClusterIsRefused) {
  ServerOptions options;
  ASSERT_TRUE(options.cluster.AddJob("worker", {"127.0.0.1:1"}).ok());
  options.job_name = "worker";
  options.task_index = 1;
  EXPECT_EQ(Server::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.job_name = "ps";
  options.task_index = 0;
  EXPECT_EQ(Server::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.job_name = "";
  EXPECT_EQ(Server::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace overseer

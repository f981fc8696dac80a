// Authentication and authorization over real processes (docs/security.md): a cluster
// (master, ps, worker) with mutual TLS, and one with a cluster token. Steps run; a
// caller without a certificate or token is refused; an authenticated caller that is not
// the master cannot clean up a ps or end the job, and the ps keeps its variables; the
// job-control identity can end the job. Certificates come from deploy/tls/make-certs.sh,
// the script operators use.

#include "core/rpc/security.h"

#include <stdlib.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/session/job.h"
#include "client/session/session.h"
#include "core/node_def_util.h"
#include "core/rpc/channel.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "proto/master.grpc.pb.h"
#include "proto/worker.grpc.pb.h"
#include "testing/child_process.h"
#include "testing/cluster_launcher.h"

namespace overseer {
namespace {

// Makes certificates for `identities` under `out` with the deployment's script.
void MakeCerts(const std::string& out, const std::vector<std::string>& identities) {
  absl::StatusOr<std::string> script = FindBinary("", "deploy/tls/make_certs");
  ASSERT_TRUE(script.ok()) << script.status();
  std::string command = absl::StrCat(*script, " ", out);
  for (const std::string& identity : identities) absl::StrAppend(&command, " ", identity);
  absl::StrAppend(&command, " >/dev/null");
  ASSERT_EQ(::system(command.c_str()), 0) << command;
}

SecurityOptions Token(const std::string& token, const std::string& identity) {
  SecurityOptions options;
  options.token = token;
  options.identity = identity;
  return options;
}

// The variable "v" on ps 0, assigned 7 once; every call reads it on worker 0.
GraphDef VariableGraph() {
  GraphDef graph;
  auto add = [&](const std::string& name, const std::string& op, const std::string& device) {
    NodeDef* node = graph.add_node();
    node->set_name(name);
    node->set_op(op);
    node->set_device(device);
    return node;
  };
  NodeDef* v = add("v", "VariableV2", "/job:ps/replica:0/task:0");
  SetNodeAttr(v, "dtype", DT_FLOAT);
  SetNodeAttr(v, "shape", TensorShape({}));
  NodeDef* seven = add("seven", "Const", "/job:ps/replica:0/task:0");
  SetNodeAttr(seven, "dtype", DT_FLOAT);
  SetNodeAttr(seven, "value", Tensor::Scalar<float>(7.0f));
  NodeDef* assign = add("assign", "Assign", "/job:ps/replica:0/task:0");
  assign->add_input("v");
  assign->add_input("seven");
  SetNodeAttr(assign, "T", DT_FLOAT);
  NodeDef* read = add("read", "Identity", "/job:worker/replica:0/task:0");
  read->add_input("v");
  SetNodeAttr(read, "T", DT_FLOAT);
  return graph;
}

// Reads v through a new session on the master (assigning it first if `assign`).
absl::StatusOr<float> ReadVariable(const std::string& target, bool assign) {
  SessionOptions options;
  options.target = target;
  auto session = NewSession(options);
  if (!session.ok()) return session.status();
  if (absl::Status s = (*session)->Create(VariableGraph()); !s.ok()) return s;
  std::vector<Tensor> out;
  if (assign) {
    if (absl::Status s = (*session)->Run({}, {}, {"assign"}, &out); !s.ok()) return s;
  }
  if (absl::Status s = (*session)->Run({}, {"read:0"}, {}, &out); !s.ok()) return s;
  const float read = out[0].scalar<float>();
  // Reads of v on its task alone: without security they would run on the ps directly
  // (a worker's RunGraph is the master's alone with security on, so the master offers
  // no direct step and they all go through it).
  for (int i = 0; i < 20; ++i) {
    if (absl::Status s = (*session)->Run({}, {"v:0"}, {}, &out); !s.ok()) return s;
    if (out[0].scalar<float>() != read) return absl::InternalError("v changed");
  }
  return read;
}

grpc::Status CleanupAll(const std::string& address) {
  auto worker = WorkerService::NewStub(NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  CleanupAllRequest request;
  CleanupAllResponse response;
  return worker->CleanupAll(&context, request, &response);
}

grpc::Status JobDone(const std::string& address) {
  auto master = MasterService::NewStub(NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  JobDoneRequest request;
  request.set_reason("security_test");
  JobDoneResponse response;
  return master->JobDone(&context, request, &response);
}

class SecurityTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(InstallSecurity(SecurityOptions()).ok()); }

  std::unique_ptr<ClusterLauncher> Start(std::vector<std::string> master_flags,
                                         std::vector<std::string> worker_flags,
                                         const std::string& name) {
    ClusterLauncherOptions options;
    options.num_ps = 1;
    options.num_workers = 1;
    options.log_dir = TempDir() + "/" + name;
    options.master_flags = std::move(master_flags);
    options.worker_flags = std::move(worker_flags);
    options.worker_flags.push_back("--exit_when_job_done");
    auto cluster = ClusterLauncher::Start(options);
    EXPECT_TRUE(cluster.ok()) << cluster.status();
    return cluster.ok() ? *std::move(cluster) : nullptr;
  }
};

TEST_F(SecurityTest, MutualTlsAuthenticatesAndAuthorizesByCertificate) {
  const std::string certs = TempDir() + "/certs";
  MakeCerts(certs, {"master", "worker", "chief", "trainer"});
  const std::string outsider = TempDir() + "/outsider";
  MakeCerts(outsider, {"master"});  // Same name, another CA.
  ASSERT_TRUE(InstallSecurity(SecurityOptions::TlsDir(certs + "/chief")).ok());
  auto cluster =
      Start({"--tls_dir=" + certs + "/master"}, {"--tls_dir=" + certs + "/worker"}, "tls");
  ASSERT_NE(cluster, nullptr);
  const std::string ps = cluster->address("ps", 0);
  const std::string master = cluster->address("master", 0);

  // A step crosses client -> master -> ps and worker -> worker, all over TLS.
  absl::StatusOr<float> v = ReadVariable(cluster->master_target(), /*assign=*/true);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 7.0f);

  // No certificate: the handshake fails, no handler runs.
  ASSERT_TRUE(InstallSecurity(SecurityOptions()).ok());
  grpc::Status plain = CleanupAll(ps);
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE) << plain.error_message();
  // A certificate named "master" from another CA: refused as well.
  ASSERT_TRUE(InstallSecurity(SecurityOptions::TlsDir(outsider + "/master")).ok());
  grpc::Status forged = CleanupAll(ps);
  EXPECT_EQ(forged.error_code(), grpc::StatusCode::UNAVAILABLE) << forged.error_message();

  // A member that is not the master: no control RPCs on a ps, no end of the job.
  ASSERT_TRUE(InstallSecurity(SecurityOptions::TlsDir(certs + "/trainer")).ok());
  grpc::Status cleanup = CleanupAll(ps);
  EXPECT_EQ(cleanup.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(absl::StrContains(cleanup.error_message(), "CleanupAll may be called only by master"))
      << cleanup.error_message();
  EXPECT_TRUE(absl::StrContains(cleanup.error_message(), "\"trainer\"")) << cleanup.error_message();
  grpc::Status done = JobDone(master);
  EXPECT_EQ(done.error_code(), grpc::StatusCode::PERMISSION_DENIED) << done.error_message();
  // It may still train: the variable survived.
  v = ReadVariable(cluster->master_target(), /*assign=*/false);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 7.0f);
  EXPECT_TRUE(cluster->IsRunning("ps", 0));

  // The job-control identity ends the job: the tasks exit 0.
  ASSERT_TRUE(InstallSecurity(SecurityOptions::TlsDir(certs + "/chief")).ok());
  grpc::Status ended = JobDone(master);
  ASSERT_TRUE(ended.ok()) << ended.error_message();
  absl::StatusOr<int> code = cluster->WaitForExit("ps", 0, absl::Seconds(60));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
}

TEST_F(SecurityTest, ClusterTokenAuthenticatesEveryCall) {
  const std::string token_file = TempDir() + "/cluster_token";
  std::ofstream(token_file) << "s3cret-token-of-the-cluster\n";
  ASSERT_TRUE(InstallSecurity(Token("s3cret-token-of-the-cluster", "chief")).ok());
  auto cluster = Start({"--cluster_token_file=" + token_file},
                       {"--cluster_token_file=" + token_file}, "token");
  ASSERT_NE(cluster, nullptr);
  const std::string ps = cluster->address("ps", 0);
  absl::StatusOr<float> v = ReadVariable(cluster->master_target(), /*assign=*/true);
  ASSERT_TRUE(v.ok()) << v.status();

  for (const std::string& token :
       {std::string(), std::string("s3cret-token-of-the-clustex"), std::string("s3cret")}) {
    ASSERT_TRUE(InstallSecurity(Token(token, "master")).ok());
    grpc::Status s = CleanupAll(ps);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << token << ": " << s.error_message();
    s = JobDone(cluster->address("master", 0));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << token << ": " << s.error_message();
  }
  ASSERT_TRUE(InstallSecurity(Token("s3cret-token-of-the-cluster", "trainer")).ok());
  grpc::Status denied = CleanupAll(ps);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED) << denied.error_message();
  v = ReadVariable(cluster->master_target(), /*assign=*/false);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 7.0f);
  EXPECT_TRUE(cluster->IsRunning("ps", 0));
}

}  // namespace
}  // namespace overseer

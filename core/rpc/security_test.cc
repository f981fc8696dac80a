#include "core/rpc/security.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/rpc/channel.h"
#include "core/rpc/server_runner.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

std::string TestDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// deploy/tls/make-certs.sh from the test's runfiles.
std::string MakeCerts(const std::string& out, const std::string& identities) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  std::string script =
      absl::StrCat(srcdir != nullptr ? srcdir : ".", "/",
                   workspace != nullptr ? workspace : "overseer", "/deploy/tls/make_certs");
  const std::string command = absl::StrCat(script, " ", out, " ", identities, " >/dev/null");
  EXPECT_EQ(::system(command.c_str()), 0) << command;
  return out;
}

class SecurityTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ASSERT_TRUE(InstallSecurity(SecurityOptions()).ok());
    absl::SetFlag(&FLAGS_tls_dir, "");
    absl::SetFlag(&FLAGS_tls_cert, "");
    absl::SetFlag(&FLAGS_tls_key, "");
    absl::SetFlag(&FLAGS_tls_ca, "");
    absl::SetFlag(&FLAGS_cluster_token_file, "");
    absl::SetFlag(&FLAGS_identity, "");
  }
};

TEST_F(SecurityTest, ConstantTimeEqualsComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("token", "token"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("token", "tokem"));
  EXPECT_FALSE(ConstantTimeEquals("tok", "token"));
  EXPECT_FALSE(ConstantTimeEquals("tokentoken", "token"));
  EXPECT_FALSE(ConstantTimeEquals("", "token"));
  EXPECT_FALSE(ConstantTimeEquals("token", ""));
}

TEST_F(SecurityTest, FlagsOffByDefault) {
  absl::StatusOr<SecurityOptions> options = SecurityOptionsFromFlags("worker");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->enabled());
  EXPECT_EQ(options->identity, "worker");
  EXPECT_EQ(options->master_identities, std::vector<std::string>{"master"});
  EXPECT_EQ(options->job_control_identities, std::vector<std::string>{"chief"});
}

TEST_F(SecurityTest, FlagErrorsNameTheFlag) {
  absl::SetFlag(&FLAGS_tls_cert, "/x/tls.crt");
  absl::StatusOr<SecurityOptions> half = SecurityOptionsFromFlags("worker");
  EXPECT_EQ(half.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(half.status().message(), "--tls_ca")) << half.status();

  absl::SetFlag(&FLAGS_tls_dir, "/x");
  absl::StatusOr<SecurityOptions> both = SecurityOptionsFromFlags("worker");
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  absl::SetFlag(&FLAGS_tls_cert, "");

  absl::StatusOr<SecurityOptions> dir = SecurityOptionsFromFlags("worker");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(dir->tls_cert, "/x/tls.crt");
  EXPECT_EQ(dir->tls_key, "/x/tls.key");
  EXPECT_EQ(dir->tls_ca, "/x/ca.crt");
  absl::Status missing = InstallSecurity(*dir);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(missing.message(), "/x/tls.crt")) << missing;
  absl::SetFlag(&FLAGS_tls_dir, "");

  const std::string empty = TestDir() + "/empty_token";
  std::ofstream(empty) << "\n";
  absl::SetFlag(&FLAGS_cluster_token_file, empty);
  EXPECT_EQ(SecurityOptionsFromFlags("worker").status().code(), absl::StatusCode::kInvalidArgument);
  const std::string token = TestDir() + "/token";
  std::ofstream(token) << "  abc123  \nignored\n";
  absl::SetFlag(&FLAGS_cluster_token_file, token);
  absl::SetFlag(&FLAGS_identity, "chief");
  absl::StatusOr<SecurityOptions> with_token = SecurityOptionsFromFlags("trainer");
  ASSERT_TRUE(with_token.ok()) << with_token.status();
  EXPECT_EQ(with_token->token, "abc123");
  EXPECT_EQ(with_token->identity, "chief");
}

TEST_F(SecurityTest, InstallRejectsFilesThatAreNotPem) {
  const std::string dir = MakeCerts(TestDir() + "/pem", "master");
  SecurityOptions swapped = SecurityOptions::TlsDir(dir + "/master");
  std::swap(swapped.tls_cert, swapped.tls_key);
  absl::Status s = InstallSecurity(swapped);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "not a PEM")) << s;
}

HealthCheckResponse::ServingStatus Check(const std::string& address, grpc::Status* status,
                                         const grpc::ChannelArguments& args = {}) {
  auto health = Health::NewStub(NewChannel(address, args));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  HealthCheckResponse response;
  *status = health->Check(&context, HealthCheckRequest(), &response);
  return response.status();
}

TEST_F(SecurityTest, ServerRunnerServesTlsOnlyToCertifiedClients) {
  const std::string dir = MakeCerts(TestDir() + "/runner", "master trainer");
  ASSERT_TRUE(InstallSecurity(SecurityOptions::TlsDir(dir + "/master")).ok());
  ServerRunnerOptions options;
  options.component = "test";
  options.handle_signals = false;
  options.metrics_port = -1;
  ServerRunner runner(options);
  ASSERT_TRUE(runner.Start().ok());
  runner.SetServing(true);

  ASSERT_TRUE(InstallSecurity(SecurityOptions::TlsDir(dir + "/trainer")).ok());
  grpc::Status status;
  EXPECT_EQ(Check(runner.address(), &status), HealthCheckResponse::SERVING);
  EXPECT_TRUE(status.ok()) << status.error_message();

  ASSERT_TRUE(InstallSecurity(SecurityOptions()).ok());
  Check(runner.address(), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  runner.RequestTermination();
  runner.WaitForTermination();
}

TEST_F(SecurityTest, TlsLetsAServerBindBeyondLoopbackWithoutInsecure) {
  const std::string dir = MakeCerts(TestDir() + "/bind", "master");
  ServerRunnerOptions options;
  options.component = "test";
  options.handle_signals = false;
  options.metrics_port = -1;
  options.host = "0.0.0.0";
  {
    ServerRunner plain(options);
    EXPECT_EQ(plain.Start().code(), absl::StatusCode::kInvalidArgument);
  }
  ASSERT_TRUE(InstallSecurity(SecurityOptions::TlsDir(dir + "/master")).ok());
  ServerRunner runner(options);
  ASSERT_TRUE(runner.Start().ok());
  EXPECT_GT(runner.port(), 0);
}

// The server's certificate is replaced on disk (same CA): new connections get the new
// one without a restart.
TEST_F(SecurityTest, RotatedCertificatesAreServedWithoutARestart) {
  const std::string dir = MakeCerts(TestDir() + "/rotate", "master trainer");
  SecurityOptions server = SecurityOptions::TlsDir(dir + "/master");
  server.tls_reload = absl::Seconds(1);
  ASSERT_TRUE(InstallSecurity(server).ok());
  ServerRunnerOptions options;
  options.component = "test";
  options.handle_signals = false;
  options.metrics_port = -1;
  ServerRunner runner(options);
  ASSERT_TRUE(runner.Start().ok());
  runner.SetServing(true);
  ASSERT_TRUE(InstallSecurity(SecurityOptions::TlsDir(dir + "/trainer")).ok());

  // The PEM of the server's certificate as a new connection sees it.
  auto served_certificate = [&]() -> std::string {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // A connection of its own.
    auto health = Health::NewStub(NewChannel(runner.address(), args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    HealthCheckResponse response;
    if (!health->Check(&context, HealthCheckRequest(), &response).ok()) return "";
    std::vector<grpc::string_ref> pem = context.auth_context()->FindPropertyValues("x509_pem_cert");
    return pem.empty() ? "" : std::string(pem[0].data(), pem[0].size());
  };
  const std::string before = served_certificate();
  ASSERT_FALSE(before.empty());
  MakeCerts(dir, "master");  // A new key and certificate for "master".
  std::ifstream in(dir + "/master/tls.crt");
  const std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(before, after);
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  std::string seen = before;
  while (seen != after && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
    seen = served_certificate();
  }
  EXPECT_EQ(seen, after);
}

}  // namespace
}  // namespace overseer

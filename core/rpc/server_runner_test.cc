#include "core/rpc/server_runner.h"

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "core/rpc/client_context.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "core/rpc/testing/http_get.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"

namespace overseer {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

ServerRunnerOptions TestOptions() {
  ServerRunnerOptions options;
  options.component = "test";
  options.host = "127.0.0.1";
  options.handle_signals = false;
  return options;
}

// Options of a second server on `first`'s port, retrying it for `bind_retry`.
ServerRunnerOptions OnPortOf(const ServerRunner& first,
                             absl::Duration bind_retry = absl::ZeroDuration()) {
  ServerRunnerOptions options = TestOptions();
  options.port = first.port();
  options.metrics_port = -1;
  options.bind_retry = bind_retry;
  return options;
}

grpc::Status Check(Health::Stub* stub, HealthCheckResponse* response) {
  auto context = NewClientContext(absl::Seconds(10));
  HealthCheckRequest request;
  return stub->Check(context.get(), request, response);
}

TEST(ServerRunnerTest, HealthGoesServingAndMetricsAreServed) {
  ServerRunner runner(TestOptions());
  prometheus::BuildCounter()
      .Name("overseer_test_things_total")
      .Help("things")
      .Register(*runner.metrics())
      .Add({})
      .Increment(3);
  ASSERT_TRUE(runner.Start().ok());
  ASSERT_GT(runner.port(), 0);
  ASSERT_GT(runner.metrics_port(), 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(runner.Start()));

  auto stub = Health::NewStub(
      grpc::CreateChannel(runner.address(), grpc::InsecureChannelCredentials()));
  HealthCheckResponse response;
  ASSERT_TRUE(Check(stub.get(), &response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  runner.SetServing(true);
  ASSERT_TRUE(Check(stub.get(), &response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);

  auto page = test::HttpGet(runner.metrics_port(), "/metrics");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_TRUE(absl::StrContains(*page, "overseer_test_things_total 3")) << *page;

  std::thread stopper([&] { runner.RequestTermination(); });
  EXPECT_EQ(runner.WaitForTermination(), 0);
  stopper.join();
  EXPECT_FALSE(Check(stub.get(), &response).ok());
}

// What every server exports besides its services' metrics: the process, the build and
// whether the health service says SERVING.
TEST(ServerRunnerTest, ServesProcessBuildAndServingMetrics) {
  ServerRunner runner(TestOptions());
  auto before_start = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("overseer_test_before_total")
      .Help("b")
      .Register(*before_start)
      .Add({});
  runner.AddCollectable(before_start);
  ASSERT_TRUE(runner.Start().ok());
  auto after_start = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("overseer_test_after_total")
      .Help("a")
      .Register(*after_start)
      .Add({});
  runner.AddCollectable(after_start);
  auto page = [&] {
    absl::StatusOr<std::string> text = test::HttpGet(runner.metrics_port(), "/metrics");
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : std::string();
  };
  const std::string text = page();
  for (const char* line : {"overseer_server_serving 0", "process_cpu_seconds_total ",
                           "process_resident_memory_bytes ", "process_virtual_memory_bytes ",
                           "process_open_fds ", "process_max_fds ", "process_start_time_seconds ",
                           "overseer_build_info{component=\"test\",version=\"",
                           "overseer_test_before_total 0", "overseer_test_after_total 0"}) {
    EXPECT_TRUE(absl::StrContains(text, line)) << line << "\n" << text;
  }
  runner.SetServing(true);
  EXPECT_TRUE(absl::StrContains(page(), "overseer_server_serving 1"));
  runner.RequestTermination();
  EXPECT_EQ(runner.WaitForTermination(), 0);
  EXPECT_TRUE(absl::StrContains(page(), "overseer_server_serving 0"));
}

TEST(ServerRunnerTest, SigtermEndsTheWait) {
  ServerRunnerOptions options = TestOptions();
  options.handle_signals = true;
  options.metrics_port = -1;
  ServerRunner runner(options);
  ASSERT_TRUE(runner.Start().ok());
  EXPECT_EQ(runner.metrics_port(), -1);
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_EQ(runner.WaitForTermination(), SIGTERM);
}

TEST(ServerRunnerTest, PortInUseIsUnavailable) {
  ServerRunner first(TestOptions());
  ASSERT_TRUE(first.Start().ok());
  ServerRunner second(OnPortOf(first));
  EXPECT_TRUE(absl::IsUnavailable(second.Start()));
}

TEST(ServerRunnerTest, PortFileNamesTheBoundPorts) {
  ServerRunnerOptions options = TestOptions();
  options.port_file = std::string(std::getenv("TEST_TMPDIR")) + "/ports";
  ServerRunner runner(options);
  ASSERT_TRUE(runner.Start().ok());
  std::ifstream file(options.port_file);
  int port = 0, metrics_port = 0;
  ASSERT_TRUE(file >> port >> metrics_port);
  EXPECT_EQ(port, runner.port());
  EXPECT_EQ(metrics_port, runner.metrics_port());
}

TEST(ServerRunnerTest, AFixedPortInUseIsRetriedUntilItIsFree) {
  auto first = std::make_unique<ServerRunner>(TestOptions());
  ASSERT_TRUE(first->Start().ok());
  const int port = first->port();
  ServerRunner second(OnPortOf(*first, absl::Minutes(5)));
  absl::Status started;
  // The second server waits while the first one holds the port (however long this
  // thread takes to get there), and binds it once the first is gone.
  std::thread start([&] { started = second.Start(); });
  first.reset();
  start.join();
  ASSERT_TRUE(started.ok()) << started;
  EXPECT_EQ(second.port(), port);
}

TEST(ServerRunnerTest, AFixedPortStillInUseAfterTheRetryIsUnavailable) {
  ServerRunner first(TestOptions());
  ASSERT_TRUE(first.Start().ok());
  ServerRunner second(OnPortOf(first, absl::Milliseconds(100)));
  const absl::Status started = second.Start();
  EXPECT_TRUE(absl::IsUnavailable(started)) << started;
  EXPECT_TRUE(absl::StrContains(started.message(), "in use")) << started;
}

}  // namespace
}  // namespace overseer

#include "core/rpc/server_runner.h"

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "core/rpc/client_context.h"
#include "core/rpc/reflection/reflection_v1.grpc.pb.h"
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

grpc::Status Check(Health::Stub* stub, HealthCheckResponse* response,
                   const std::string& service = "") {
  auto context = NewClientContext(absl::Seconds(10));
  HealthCheckRequest request;
  request.set_service(service);
  return stub->Check(context.get(), request, response);
}

// A health check on a connection of its own, as a probe process makes it.
grpc::Status ProbeOnce(const ServerRunner& runner, HealthCheckResponse* response) {
  auto stub =
      Health::NewStub(grpc::CreateChannel(runner.address(), grpc::InsecureChannelCredentials()));
  return Check(stub.get(), response);
}

using grpc::reflection::v1::ServerReflection;
using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;

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

  auto stub =
      Health::NewStub(grpc::CreateChannel(runner.address(), grpc::InsecureChannelCredentials()));
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
  for (const char* line :
       {"overseer_server_serving 0", "process_cpu_seconds_total ", "process_resident_memory_bytes ",
        "process_virtual_memory_bytes ", "process_open_fds ", "process_max_fds ",
        "process_start_time_seconds ", "overseer_build_info{component=\"test\",version=\"",
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

TEST(ServerRunnerTest, BindsLoopbackByDefault) {
  ServerRunnerOptions options;
  options.component = "test";
  options.handle_signals = false;
  ServerRunner runner(options);
  ASSERT_TRUE(runner.Start().ok());
  EXPECT_EQ(runner.address(), "127.0.0.1:" + std::to_string(runner.port()));
  HealthCheckResponse response;
  EXPECT_TRUE(ProbeOnce(runner, &response).ok());
}

// Every interface, with no authentication or TLS, only when asked knowingly.
TEST(ServerRunnerTest, ANonLoopbackAddressNeedsInsecure) {
  ServerRunnerOptions options = TestOptions();
  options.host = "0.0.0.0";
  ServerRunner refused(options);
  const absl::Status status = refused.Start();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "--bind=0.0.0.0")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "--insecure")) << status;

  options.insecure = true;
  ServerRunner served(options);
  ASSERT_TRUE(served.Start().ok());
  HealthCheckResponse response;
  EXPECT_TRUE(ProbeOnce(served, &response).ok());  // Dials 0.0.0.0:port: this host.
}

TEST(ServerRunnerTest, LoopbackHostsAreKnown) {
  for (const char* host : {"localhost", "127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "::ffff:10.0.0.1", "ps-0",
                           "localhost.example.com", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
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

TEST(ServerRunnerTest, EachNamedServiceHasAHealthStatus) {
  grpc::Service named;  // A service without methods will do.
  ServerRunner runner(TestOptions());
  runner.AddService(&named, "test.Named");
  ASSERT_TRUE(runner.Start().ok());
  auto stub =
      Health::NewStub(grpc::CreateChannel(runner.address(), grpc::InsecureChannelCredentials()));
  HealthCheckResponse response;
  ASSERT_TRUE(Check(stub.get(), &response, "test.Named").ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  runner.SetServing(true);
  ASSERT_TRUE(Check(stub.get(), &response, "test.Named").ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(stub.get(), &response, "test.Other").error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(ServerRunnerTest, ReflectionV1ListsTheServicesAndTheirFiles) {
  grpc::Service named;
  ServerRunner runner(TestOptions());
  runner.AddService(&named, "test.Named");
  ASSERT_TRUE(runner.Start().ok());
  auto stub = ServerReflection::NewStub(
      grpc::CreateChannel(runner.address(), grpc::InsecureChannelCredentials()));
  auto context = NewClientContext(absl::Seconds(30));
  auto stream = stub->ServerReflectionInfo(context.get());
  ServerReflectionRequest request;
  request.set_list_services("");
  ASSERT_TRUE(stream->Write(request));
  ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::vector<std::string> names;
  for (const auto& service : response.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "test.Named"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "grpc.health.v1.Health"), names.end());

  request.set_file_containing_symbol("grpc.health.v1.Health");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_EQ(response.file_descriptor_response().file_descriptor_proto_size(), 1);
  request.set_file_containing_symbol("no.such.Symbol");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// While in-flight calls drain, the port still answers: health NOT_SERVING on a new
// connection, any other call UNAVAILABLE; once the drain ends, nothing listens.
TEST(ServerRunnerTest, ProbesDuringTheDrainHearNotServing) {
  ServerRunnerOptions options = TestOptions();
  options.metrics_port = -1;
  options.drain_timeout = absl::Minutes(5);
  ServerRunner runner(options);
  ASSERT_TRUE(runner.Start().ok());
  runner.SetServing(true);
  // An open reflection stream is a call in flight: it holds the drain until it ends.
  auto reflection = ServerReflection::NewStub(
      grpc::CreateChannel(runner.address(), grpc::InsecureChannelCredentials()));
  auto held_context = NewClientContext(absl::Minutes(5));
  auto held = reflection->ServerReflectionInfo(held_context.get());
  ServerReflectionRequest request;
  request.set_list_services("");
  ServerReflectionResponse response;
  ASSERT_TRUE(held->Write(request));
  ASSERT_TRUE(held->Read(&response));  // The call has reached the server.

  std::thread waiter([&] { runner.WaitForTermination(); });
  runner.RequestTermination();
  // A call that reaches the server itself at the moment its Shutdown starts is
  // CANCELLED by gRPC (it was never started); every other probe hears an answer.
  HealthCheckResponse health;
  grpc::Status probed;
  do {
    health.Clear();
    probed = ProbeOnce(runner, &health);
    ASSERT_TRUE(probed.ok() || probed.error_code() == grpc::StatusCode::CANCELLED)
        << probed.error_message();
  } while (!probed.ok() || health.status() == HealthCheckResponse::SERVING);
  EXPECT_EQ(health.status(), HealthCheckResponse::NOT_SERVING);
  // Until the drain server has the port, a new call may still reach the server.
  grpc::Status other;
  do {
    auto fresh = ServerReflection::NewStub(
        grpc::CreateChannel(runner.address(), grpc::InsecureChannelCredentials()));
    auto context = NewClientContext(absl::Seconds(30));
    auto stream = fresh->ServerReflectionInfo(context.get());
    if (stream->Write(request) && stream->Read(&response)) stream->WritesDone();
    other = stream->Finish();
  } while (other.ok() || other.error_code() == grpc::StatusCode::CANCELLED);
  EXPECT_EQ(other.error_code(), grpc::StatusCode::UNAVAILABLE) << other.error_message();
  ASSERT_TRUE(ProbeOnce(runner, &health).ok());
  EXPECT_EQ(health.status(), HealthCheckResponse::NOT_SERVING);

  held->WritesDone();
  (void)held->Finish();  // Ends the drain.
  waiter.join();
  EXPECT_EQ(ProbeOnce(runner, &health).error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace overseer

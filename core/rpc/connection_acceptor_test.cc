#include "core/rpc/connection_acceptor.h"

#include <chrono>
#include <memory>

#include "core/rpc/health_service.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// A server without a port of its own whose health says `status` for "".
struct PortlessServer {
  explicit PortlessServer(HealthCheckResponse::ServingStatus status) {
    health.SetStatus("", status);
    grpc::ServerBuilder builder;
    builder.RegisterService(&health);
    server = builder.BuildAndStart();
  }
  ~PortlessServer() {
    health.Shutdown();
    server->Shutdown(std::chrono::system_clock::now());
  }
  HealthService health;
  std::unique_ptr<grpc::Server> server;
};

// The status a fresh connection to 127.0.0.1:`port` hears, or the RPC error code.
int Probe(int port) {
  auto stub = Health::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, HealthCheckRequest(), &response);
  return status.ok() ? response.status() : -status.error_code();
}

TEST(ConnectionAcceptorTest, HandsConnectionsToTheCurrentTarget) {
  PortlessServer serving(HealthCheckResponse::SERVING);
  PortlessServer draining(HealthCheckResponse::NOT_SERVING);
  auto acceptor = ConnectionAcceptor::Listen("127.0.0.1", 0, absl::ZeroDuration());
  ASSERT_TRUE(acceptor.ok()) << acceptor.status();
  const int port = (*acceptor)->port();
  ASSERT_GT(port, 0);
  (*acceptor)->SetTarget(serving.server.get());
  EXPECT_EQ(Probe(port), HealthCheckResponse::SERVING);
  (*acceptor)->SetTarget(draining.server.get());
  EXPECT_EQ(Probe(port), HealthCheckResponse::NOT_SERVING);
  acceptor->reset();
  EXPECT_EQ(Probe(port), -grpc::StatusCode::UNAVAILABLE);
}

TEST(ConnectionAcceptorTest, APortInUseIsUnavailable) {
  auto first = ConnectionAcceptor::Listen("127.0.0.1", 0, absl::ZeroDuration());
  ASSERT_TRUE(first.ok());
  auto second = ConnectionAcceptor::Listen("127.0.0.1", (*first)->port(), absl::ZeroDuration());
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
}

}  // namespace
}  // namespace overseer

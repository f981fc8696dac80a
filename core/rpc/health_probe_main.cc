// overseer_health: the health probe of the container image. Calls
// grpc.health.v1.Health/Check on a server and exits 0 only when it answers SERVING,
// so that it serves as a Docker Compose healthcheck and a Kubernetes exec probe:
//
//   overseer_health localhost:2222
//   overseer_health --service=overseer.MasterService --timeout_seconds=2 master:2222
//
// Prints one line: the address, the service and the answer (SERVING, NOT_SERVING, or
// the RPC's error, e.g. UNAVAILABLE when nothing listens, NOT_FOUND for a service the
// server does not have). Exit codes: 0 SERVING, 1 anything else, 2 bad usage.

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "core/rpc/channel.h"
#include "core/rpc/security.h"
#include "core/rpc/testing/health.grpc.pb.h"
#include "grpcpp/client_context.h"

ABSL_FLAG(std::string, service, "",
          "the service to ask about, e.g. overseer.MasterService; empty: the whole server");
ABSL_FLAG(int, timeout_seconds, 5, "how long to wait for the answer");

namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

const char* StatusName(HealthCheckResponse::ServingStatus status) {
  switch (status) {
    case HealthCheckResponse::SERVING:
      return "SERVING";
    case HealthCheckResponse::NOT_SERVING:
      return "NOT_SERVING";
    case HealthCheckResponse::SERVICE_UNKNOWN:
      return "SERVICE_UNKNOWN";
    default:
      return "UNKNOWN";
  }
}

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    default:
      return "ERROR";
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Exits 0 only when the gRPC health service at HOST:PORT answers SERVING.\n"
      "Usage: overseer_health [--service=NAME] [--timeout_seconds=N] [--tls_dir=DIR] HOST:PORT");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2 || absl::GetFlag(FLAGS_timeout_seconds) < 1) {
    std::fprintf(stderr,
                 "usage: overseer_health [--service=NAME] [--timeout_seconds=N] "
                 "HOST:PORT\n");
    return 2;
  }
  const std::string address = args[1];
  const std::string service = absl::GetFlag(FLAGS_service);
  // With --tls_dir (or --tls_cert, --tls_key, --tls_ca): a TLS server's probe.
  if (const absl::Status security = overseer::InitSecurityFromFlags("health_probe");
      !security.ok()) {
    std::fprintf(stderr, "overseer_health: %s\n", std::string(security.message()).c_str());
    return 2;
  }
  auto health = Health::NewStub(overseer::NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(absl::GetFlag(FLAGS_timeout_seconds)));
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  const grpc::Status status = health->Check(&context, request, &response);
  const std::string what = address + (service.empty() ? "" : " " + service);
  if (!status.ok()) {
    std::printf("%s: %s: %s\n", what.c_str(), CodeName(status.error_code()),
                status.error_message().c_str());
    return 1;
  }
  std::printf("%s: %s\n", what.c_str(), StatusName(response.status()));
  return response.status() == HealthCheckResponse::SERVING ? 0 : 1;
}

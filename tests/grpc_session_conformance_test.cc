// The Session conformance suite for GrpcSession over a real local cluster: a
// master_server, one ps and one worker worker_server, each in its own process.

#include <cstdlib>
#include <memory>

#include "client/session/session.h"
#include "client/session/session_conformance.h"
#include "gtest/gtest.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

test::LocalCluster* Cluster() {
  static test::LocalCluster* cluster = [] {
    auto started = test::LocalCluster::Start(test::LocalClusterOptions());
    if (!started.ok()) {
      std::fprintf(stderr, "cannot start the cluster: %s\n", started.status().ToString().c_str());
      std::abort();
    }
    return started->release();
  }();
  return cluster;
}

std::unique_ptr<Session> NewGrpcSession() {
  SessionOptions options;
  options.target = Cluster()->master_target();
  auto session = NewSession(options);
  if (!session.ok()) std::abort();
  return *std::move(session);
}

INSTANTIATE_TEST_SUITE_P(GrpcCluster, SessionConformanceTest,
                         ::testing::Values(SessionConformanceParam{"GrpcCluster", NewGrpcSession}),
                         SessionConformanceParamName);

}  // namespace
}  // namespace overseer

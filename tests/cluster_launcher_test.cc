// ClusterLauncher over the real binaries: a master, a ps, a worker, a checkpoint store
// and a summary writer come up SERVING on loopback; any of them can be killed and
// restarted on its port; SIGTERM ends a server with exit 0; a missing binary is named.

#include "testing/cluster_launcher.h"

#include <signal.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkpoint_store/rpc/grpc_checkpoint_store.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

ClusterLauncherOptions Options() {
  ClusterLauncherOptions options;
  options.num_ps = 1;
  options.num_workers = 1;
  options.checkpoint_store = true;
  options.summary_writer = true;
  options.log_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/launcher");
  return options;
}

TEST(ClusterLauncherTest, StartsEveryServerAndRestartsOneOnItsPort) {
  auto launched = ClusterLauncher::Start(Options());
  ASSERT_TRUE(launched.ok()) << launched.status();
  ClusterLauncher& cluster = **launched;
  EXPECT_EQ(cluster.servers().size(), 5u);
  for (const auto& [job, index] : cluster.servers()) {
    EXPECT_TRUE(cluster.IsRunning(job, index)) << job;
    EXPECT_TRUE(absl::StartsWith(cluster.address(job, index), "127.0.0.1:")) << job;
    EXPECT_GT(cluster.pid(job, index), 0) << job;
  }
  EXPECT_EQ(cluster.master_target(), "grpc://" + cluster.address("master", 0));
  EXPECT_EQ(cluster.store_target(), "grpc://" + cluster.address("store", 0));
  EXPECT_EQ(cluster.writer_target(), "grpc://" + cluster.address("writer", 0));
  EXPECT_EQ(cluster.cluster().NumTasks("ps"), 1);
  EXPECT_EQ(cluster.address("nope", 0), "");

  // A crash of the store and its restart on the same address, where it serves again.
  const std::string store = cluster.address("store", 0);
  absl::StatusOr<int> killed = cluster.Stop("store", 0, SIGKILL);
  ASSERT_TRUE(killed.ok()) << killed.status();
  EXPECT_EQ(*killed, -1);
  EXPECT_FALSE(cluster.IsRunning("store", 0));
  EXPECT_EQ(cluster.Stop("store", 0, SIGKILL).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(cluster.Restart("store", 0).ok());
  EXPECT_EQ(cluster.address("store", 0), store);
  auto client = GrpcCheckpointStore::Connect(store);
  absl::StatusOr<std::vector<CheckpointInfo>> list = client->ListCheckpoints("run");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->empty());
  EXPECT_EQ(cluster.Restart("store", 0).code(), absl::StatusCode::kFailedPrecondition);

  // SIGTERM: the writer drains and exits 0; its log says so.
  absl::StatusOr<int> stopped = cluster.Stop("writer", 0, SIGTERM);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(*stopped, 0) << cluster.Log("writer", 0);
  EXPECT_TRUE(absl::StrContains(cluster.Log("writer", 0), "every event file flushed"))
      << cluster.Log("writer", 0);
  EXPECT_TRUE(absl::EndsWith(cluster.log_path("writer", 0), "/launcher/writer_0.log"));
  absl::StatusOr<int> again = cluster.WaitForExit("writer", 0, absl::Seconds(1));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0);  // The exit code of its last run.
  EXPECT_EQ(cluster.WaitForExit("nope", 0, absl::Seconds(1)).status().code(),
            absl::StatusCode::kNotFound);

  // A ps restart is a new incarnation on the same port.
  ASSERT_TRUE(cluster.Stop("ps", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster.Restart("ps", 0).ok()) << cluster.Log("ps", 0);
  EXPECT_TRUE(cluster.IsRunning("ps", 0));
}

TEST(ClusterLauncherTest, AMissingBinaryIsNamed) {
  ClusterLauncherOptions options = Options();
  options.bin_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/empty_bin");
  auto launched = ClusterLauncher::Start(options);
  EXPECT_EQ(launched.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(launched.status().message(), "worker/worker_server"))
      << launched.status();
}

TEST(ClusterLauncherTest, AServerThatCannotStartShowsItsLog) {
  ClusterLauncherOptions options = Options();
  options.checkpoint_store = false;
  options.summary_writer = false;
  options.master_flags = {"--create_session_wait_seconds=0"};  // Rejected by the master.
  auto launched = ClusterLauncher::Start(options);
  EXPECT_EQ(launched.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(launched.status().message(), "master:0")) << launched.status();
  EXPECT_TRUE(absl::StrContains(launched.status().message(), "create_session_wait_seconds"))
      << launched.status();
}

}  // namespace
}  // namespace overseer

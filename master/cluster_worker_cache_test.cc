#include "master/cluster_worker_cache.h"

#include "gtest/gtest.h"
#include "master/testing/fake_workers.h"

namespace overseer {
namespace {

TEST(ClusterWorkerCacheTest, ListsTasksInIndexOrderAndResolvesThem) {
  // Eleven ps tasks: task:10 must come after task:2 (not string order).
  std::string ps;
  for (int i = 0; i < 11; ++i) ps += (i ? ",h:" : "h:") + std::to_string(1000 + i);
  auto spec = ClusterSpec::Parse("worker=w:1;ps=" + ps);
  ASSERT_TRUE(spec.ok()) << spec.status();
  test::FakeWorker ps2("/job:ps/replica:0/task:2");
  auto local = std::make_unique<LocalWorkerCache>();
  local->Add("/job:ps/replica:0/task:2", &ps2);
  ClusterWorkerCache cache(*spec, std::move(local));

  std::vector<std::string> tasks = cache.ListTasks();
  ASSERT_EQ(tasks.size(), 12u);
  EXPECT_EQ(tasks[2], "/job:ps/replica:0/task:2");
  EXPECT_EQ(tasks[10], "/job:ps/replica:0/task:10");
  EXPECT_EQ(tasks[11], "/job:worker/replica:0/task:0");

  EXPECT_EQ(cache.GetWorker("/job:ps/replica:0/task:2"), &ps2);
  EXPECT_EQ(cache.GetWorker("/job:ps/replica:0/task:2"), &ps2);  // Cached.
  // In the cluster but not reachable through the worker cache.
  EXPECT_EQ(cache.GetWorker("/job:ps/replica:0/task:3"), nullptr);
  // Not in the cluster.
  EXPECT_EQ(cache.GetWorker("/job:chief/replica:0/task:0"), nullptr);

  ClusterDef def = cache.cluster_def();
  ASSERT_EQ(def.job_size(), 2);
  EXPECT_EQ(def.job(0).name(), "ps");
  EXPECT_EQ(def.job(0).tasks().at(10), "h:1010");
}

}  // namespace
}  // namespace overseer

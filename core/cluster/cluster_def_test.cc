#include "core/cluster/cluster_def.h"

#include "gtest/gtest.h"

namespace overseer {
namespace {

TEST(ClusterDefTest, RoundTrips) {
  auto spec = ClusterSpec::Parse("ps=h1:1,h2:2;worker=h3:3");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ClusterDef def = ToClusterDef(*spec);
  ASSERT_EQ(def.job_size(), 2);
  EXPECT_EQ(def.job(0).name(), "ps");
  EXPECT_EQ(def.job(0).tasks().at(1), "h2:2");
  auto back = FromClusterDef(def);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToString(), spec->ToString());
}

TEST(ClusterDefTest, RejectsGapsAndBadAddresses) {
  ClusterDef def;
  JobDef* job = def.add_job();
  job->set_name("ps");
  (*job->mutable_tasks())[1] = "h:1";
  absl::Status s = FromClusterDef(def).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("task index 1"), std::string::npos) << s;

  (*job->mutable_tasks())[0] = "no-port";
  s = FromClusterDef(def).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace overseer

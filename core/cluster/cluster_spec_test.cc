#include "core/cluster/cluster_spec.h"

#include "gtest/gtest.h"

namespace overseer {
namespace {

void ExpectInvalid(const absl::Status& s, const std::string& mentions) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(mentions), std::string::npos) << s << " should mention " << mentions;
}

TEST(ClusterSpecTest, ParsesFlagSyntax) {
  auto cs = ClusterSpec::Parse("ps=h1:1000,h2:1001; worker=localhost:2000");
  ASSERT_TRUE(cs.ok()) << cs.status();
  EXPECT_EQ(cs->NumTasks("ps"), 2);
  EXPECT_EQ(cs->NumTasks("worker"), 1);
  EXPECT_EQ(cs->NumTasks("chief"), 0);
  EXPECT_EQ(*cs->TaskAddress("ps", 1), "h2:1001");
  EXPECT_EQ(cs->TaskAddress("ps", 2).status().code(), absl::StatusCode::kNotFound);
  ASSERT_EQ(cs->Tasks().size(), 3u);
  EXPECT_EQ(cs->Tasks()[0].Name(), "/job:ps/replica:0/task:0");
  EXPECT_EQ(cs->ToString(), "ps=h1:1000,h2:1001;worker=localhost:2000");
  EXPECT_EQ(ClusterSpec::Parse(cs->ToString())->ToString(), cs->ToString());
}

TEST(ClusterSpecTest, RejectsMalformedSpecs) {
  ExpectInvalid(ClusterSpec::Parse("").status(), "empty");
  ExpectInvalid(ClusterSpec::Parse("ps").status(), "'ps'");
  ExpectInvalid(ClusterSpec::Parse("ps=h:1;ps=h:2").status(), "twice");
  ExpectInvalid(ClusterSpec::Parse("ps=h").status(), "'h'");
  ExpectInvalid(ClusterSpec::Parse("ps=h:0").status(), "'h:0'");
  ExpectInvalid(ClusterSpec::Parse("ps=h:99999").status(), "99999");
  ExpectInvalid(ClusterSpec::Parse("ps=:80").status(), "empty host");
  ExpectInvalid(ClusterSpec::Parse("ps=").status(), "no tasks");
  ExpectInvalid(ClusterSpec::Parse("p s=h:1").status(), "p s");
  EXPECT_TRUE(ClusterSpec::Parse("ps=[::1]:80").ok());
}

TEST(TfConfigTest, ParsesKubeflowTfJobConfig) {
  auto c = ParseTfConfig(R"({"cluster": {"chief": ["c:1"], "worker": ["w0:2", "w1:3"],
                             "ps": ["p:4"]}, "task": {"type": "worker", "index": 1},
                             "environment": "cloud"})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task_type, "worker");
  EXPECT_EQ(c->task_index, 1);
  EXPECT_EQ(c->cluster.ToString(), "chief=c:1;ps=p:4;worker=w0:2,w1:3");
}

TEST(TfConfigTest, TaskIsOptional) {
  auto c = ParseTfConfig(R"({"cluster": {"ps": ["p:4"]}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task_type, "");
}

TEST(TfConfigTest, RejectsMalformedConfigs) {
  ExpectInvalid(ParseTfConfig("not json").status(), "JSON");
  ExpectInvalid(ParseTfConfig("{}").status(), "cluster");
  ExpectInvalid(ParseTfConfig(R"({"cluster": []})").status(), "cluster");
  ExpectInvalid(ParseTfConfig(R"({"cluster": {"ps": "p:1"}})").status(), "cluster.ps");
  ExpectInvalid(ParseTfConfig(R"({"cluster": {"ps": [1]}})").status(), "cluster.ps[0]");
  ExpectInvalid(ParseTfConfig(R"({"cluster": {"ps": ["nope"]}})").status(), "nope");
  ExpectInvalid(ParseTfConfig(R"({"cluster": {"ps": ["p:1"]}, "task": 3})").status(), "task");
  ExpectInvalid(ParseTfConfig(R"({"cluster": {"ps": ["p:1"]}, "task": {"index": 0}})").status(),
                "task.type");
  ExpectInvalid(
      ParseTfConfig(R"({"cluster": {"ps": ["p:1"]}, "task": {"type": "ps", "index": -1}})")
          .status(),
      "task.index");
  ExpectInvalid(
      ParseTfConfig(R"({"cluster": {"ps": ["p:1"]}, "task": {"type": "ps", "index": 1.5}})")
          .status(),
      "task.index");
  ExpectInvalid(
      ParseTfConfig(R"({"cluster": {"ps": ["p:1"]}, "task": {"type": "worker", "index": 0}})")
          .status(),
      "not in the cluster");
  ExpectInvalid(
      ParseTfConfig(R"({"cluster": {"ps": ["p:1"]}, "task": {"type": "ps", "index": 1}})").status(),
      "not in the cluster");
}

}  // namespace
}  // namespace overseer

#include "client/summary/summary_ops.h"

#include <memory>
#include <string>
#include <vector>

#include "client/graph/ops.h"
#include "client/session/session.h"
#include "gtest/gtest.h"
#include "proto/summary.pb.h"

namespace overseer {
namespace {

TEST(SummaryOpsTest, MergeAllRunsEveryCollectedSummary) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Const(root, {1.0f, 2.0f, 3.0f});
  Output loss = ops::Const(root, 0.5f);
  ops::ScalarSummary(root, "loss", loss);
  ops::HistogramSummary(root.WithOpName("w_hist"), "weights", x);
  ops::TensorSummaryV2(root, "raw", x, PluginMetadata("custom", DATA_CLASS_TENSOR));
  ASSERT_EQ(root.graph()->GetCollection(GraphKeys::kSummaries).size(), 3u);
  Output all = ops::MergeAllSummaries(root);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_TRUE(all.valid());
  EXPECT_EQ(all.dtype(), DT_STRING);

  GraphDef graph;
  ASSERT_TRUE(root.ToGraphDef(&graph).ok());
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Create(graph).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {all.name()}, {}, &out).ok());
  Summary summary;
  ASSERT_TRUE(summary.ParseFromString(out[0].scalar<std::string>()));
  ASSERT_EQ(summary.value_size(), 3);
  EXPECT_EQ(summary.value(0).tag(), "loss");
  EXPECT_EQ(summary.value(0).simple_value(), 0.5f);
  EXPECT_EQ(summary.value(1).tag(), "weights");
  EXPECT_EQ(summary.value(1).histo().num(), 3.0);
  EXPECT_EQ(summary.value(2).metadata().plugin_data().plugin_name(), "custom");
}

TEST(SummaryOpsTest, MergeAllOfNothingIsNull) {
  Scope root = Scope::NewRootScope();
  EXPECT_FALSE(ops::MergeAllSummaries(root).valid());
  EXPECT_TRUE(root.ok());
}

TEST(SummaryOpsTest, BadValuesTypeIsRecorded) {
  Scope root = Scope::NewRootScope();
  Output s = ops::ScalarSummary(root, "flag", ops::Const(root, true));
  EXPECT_FALSE(s.valid());
  EXPECT_TRUE(absl::IsInvalidArgument(root.status())) << root.status();
  EXPECT_TRUE(root.graph()->GetCollection(GraphKeys::kSummaries).empty());
}

}  // namespace
}  // namespace overseer

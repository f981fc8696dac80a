// Tensors of 2 GiB and more across real processes (a master_server and two worker
// tasks): between tasks they cross in RecvTensor's chunks, which no protobuf limit
// bounds; through RunStep (feeds and fetches travel whole in one message) they fail
// INVALID_ARGUMENT naming the tensor and the limit, and the servers keep serving.
//
// Memory: the cross-task test holds the tensor once on each worker (about 4.1 GB in
// all); the others about 2.1 GB in one process. Each test has its own cluster, so no
// process keeps a previous test's buffers.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client/session/session.h"
#include "core/node_def_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/local_cluster.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";

// A float tensor of 2^31 + 4 MiB bytes: [kRows, kCols].
constexpr int64_t kCols = 1024;
constexpr int64_t kRows = ((int64_t{1} << 31) + (int64_t{4} << 20)) / (kCols * 4);
static_assert(kRows * kCols * 4 == (int64_t{1} << 31) + (int64_t{4} << 20));

// Row r of the large tensor holds RowValue(r) everywhere. 1024 rows (one 4 MiB chunk)
// is not a multiple of 251, so rows delivered in the wrong place change the sums.
float RowValue(int64_t r) { return static_cast<float>(r % 251); }

NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs, const std::string& device) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  n->set_device(device);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

NodeDef* AddConst(GraphDef* g, const std::string& name, const Tensor& value,
                  const std::string& device) {
  NodeDef* n = AddNode(g, name, "Const", {}, device);
  SetNodeAttr(n, "dtype", value.dtype());
  SetNodeAttr(n, "value", value);
  return n;
}

Tensor Dims(int64_t rows, int64_t cols) {
  return Tensor::FromVector<int32_t>({static_cast<int32_t>(rows), static_cast<int32_t>(cols)});
}

class LargeTensorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::LocalClusterOptions options;
    options.num_ps = 0;
    options.num_workers = 2;
    auto cluster = test::LocalCluster::Start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    SessionOptions session_options;
    session_options.target = cluster_->master_target();
    auto session = NewSession(session_options);
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = *std::move(session);
  }

  static RunOptions Slow() {
    RunOptions options;
    options.set_timeout_in_ms(15 * 60 * 1000);  // A loaded machine moves 2 GiB slowly.
    return options;
  }

  std::unique_ptr<test::LocalCluster> cluster_;
  std::unique_ptr<Session> session_;
};

TEST_F(LargeTensorTest, TensorOver2GiBCrossesFromOneTaskToAnother) {
  // Task 0: big = BroadcastTo(column, [kRows, kCols]), row r all RowValue(r).
  // Task 1: row_sums = Sum(big, 1), shape = Shape(big).
  Tensor column(DT_FLOAT, TensorShape({kRows, 1}));
  for (int64_t r = 0; r < kRows; ++r) column.data<float>()[r] = RowValue(r);
  GraphDef g;
  AddConst(&g, "column", column, kTask0);
  AddConst(&g, "dims", Dims(kRows, kCols), kTask0);
  NodeDef* big = AddNode(&g, "big", "BroadcastTo", {"column", "dims"}, kTask0);
  SetNodeAttr(big, "T", DT_FLOAT);
  AddConst(&g, "axis", Tensor::Scalar<int32_t>(1), kTask1);
  NodeDef* sum = AddNode(&g, "row_sums", "Sum", {"big", "axis"}, kTask1);
  SetNodeAttr(sum, "T", DT_FLOAT);
  NodeDef* shape = AddNode(&g, "shape", "Shape", {"big"}, kTask1);
  SetNodeAttr(shape, "T", DT_FLOAT);
  ASSERT_TRUE(session_->Create(g).ok());

  std::vector<Tensor> out;
  absl::Status s = session_->Run(Slow(), {}, {"row_sums:0", "shape:0"}, {}, &out, nullptr);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[1].NumElements(), 2);
  EXPECT_EQ(out[1].data<int32_t>()[0], kRows);
  EXPECT_EQ(out[1].data<int32_t>()[1], kCols);
  ASSERT_EQ(out[0].shape(), TensorShape({kRows}));
  int64_t wrong = 0;
  int64_t first_wrong = -1;
  for (int64_t r = 0; r < kRows; ++r) {
    // Sums of at most 1024 small integers are exact in float.
    if (out[0].data<float>()[r] != RowValue(r) * kCols) {
      if (first_wrong < 0) first_wrong = r;
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0) << "first wrong row " << first_wrong;
}

TEST_F(LargeTensorTest, FetchOver2GiBIsInvalidArgumentAndTheClusterKeepsServing) {
  GraphDef g;
  AddConst(&g, "dims", Dims(kRows, kCols), kTask1);
  AddConst(&g, "one", Tensor::Scalar<float>(1.5f), kTask1);
  NodeDef* big = AddNode(&g, "big", "Fill", {"dims", "one"}, kTask1);
  SetNodeAttr(big, "T", DT_FLOAT);
  ASSERT_TRUE(session_->Create(g).ok());
  std::vector<Tensor> out;
  absl::Status s = session_->Run(Slow(), {}, {"big:0"}, {}, &out, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("fetch 'big:0' is 2151677952 bytes"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("2 GiB"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(kTask1));
  // The same session and both servers go on.
  ASSERT_TRUE(session_->Run({}, {"one:0"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 1.5f);
  EXPECT_TRUE(cluster_->IsRunning("worker", 1));
}

TEST_F(LargeTensorTest, FeedOver2GiBIsInvalidArgumentBeforeAnythingIsSent) {
  GraphDef g;
  NodeDef* x = AddNode(&g, "x", "Placeholder", {}, kTask0);
  SetNodeAttr(x, "dtype", DT_FLOAT);
  AddConst(&g, "axis", Tensor::Scalar<int32_t>(1), kTask0);
  NodeDef* sum = AddNode(&g, "sum", "Sum", {"x", "axis"}, kTask0);
  SetNodeAttr(sum, "T", DT_FLOAT);
  ASSERT_TRUE(session_->Create(g).ok());
  std::vector<Tensor> out;
  {
    Tensor big(DT_FLOAT, TensorShape({kRows, kCols}));
    absl::Status s = session_->Run(Slow(), {{"x:0", big}}, {"sum:0"}, {}, &out, nullptr);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("feed 'x:0' is 2151677952 bytes"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("2 GiB"));
  }
  // (A graph that large is refused the same way; grpc_session_test checks it with a
  // small limit.)
  // The session still runs with a small feed.
  Tensor small(DT_FLOAT, TensorShape({2, 3}));
  ASSERT_TRUE(session_->Run({{"x:0", small}}, {"sum:0"}, {}, &out).ok());
  EXPECT_EQ(out[0].shape(), TensorShape({2}));
}

}  // namespace
}  // namespace overseer

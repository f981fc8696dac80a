#include "client/graph/embedding.h"

#include <memory>
#include <vector>

#include "client/graph/gradients.h"
#include "client/graph/ops.h"
#include "client/session/client_session.h"
#include "core/resource_mgr.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

// A 10-row table whose row r is [r, 10 r], split into shards of `rows` (global row ids
// per shard, in order).
std::vector<Output> Shards(const Scope& s, const std::vector<std::vector<int>>& rows) {
  std::vector<Output> shards;
  for (const std::vector<int>& ids : rows) {
    std::vector<float> values;
    for (int r : ids) {
      values.push_back(r);
      values.push_back(10.0f * r);
    }
    shards.push_back(ops::Const(
        s, Tensor::FromVector<float>(values, TensorShape({static_cast<int64_t>(ids.size()), 2}))));
  }
  return shards;
}

class EmbeddingTest : public ::testing::Test {
 protected:
  std::vector<Tensor> Run(const std::vector<Output>& fetches) {
    if (session_ == nullptr) {
      SessionOptions options;
      options.resource_mgr = &resources_;
      auto s = ClientSession::Create(root_, options);
      EXPECT_TRUE(s.ok()) << s.status();
      session_ = std::move(*s);
    }
    std::vector<Tensor> out;
    absl::Status s = session_->Run(fetches, &out);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }

  Scope root_ = Scope::NewRootScope();
  ResourceMgr resources_;
  std::unique_ptr<ClientSession> session_;
};

// Every strategy gives row r for id r, in the shape of the ids.
TEST_F(EmbeddingTest, ModAndDivGiveTheRowsOfTheIds) {
  Output ids = ops::Const(root_, {{0, 5, 9}, {4, 4, 1}});
  const Tensor want =
      Tensor::FromVector<float>({0, 0, 5, 50, 9, 90, 4, 40, 4, 40, 1, 10}, TensorShape({2, 3, 2}));
  // mod: shard p holds rows p, p + 3, ...; div: rows 0-3, 4-6, 7-9.
  auto mod = EmbeddingLookup(root_, Shards(root_, {{0, 3, 6, 9}, {1, 4, 7}, {2, 5, 8}}), ids);
  auto div = EmbeddingLookup(root_, Shards(root_, {{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}}), ids,
                             PartitionStrategy::kDiv);
  auto one = EmbeddingLookup(root_, Shards(root_, {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}), ids);
  ASSERT_TRUE(mod.ok()) << mod.status();
  ASSERT_TRUE(div.ok()) << div.status();
  ASSERT_TRUE(one.ok()) << one.status();
  std::vector<Tensor> out = Run({*mod, *div, *one});
  for (const Tensor& t : out) EXPECT_TRUE(t.Equals(want)) << t.DebugString();
}

// The gradient reaches each shard as the rows it gave, summed where an id repeats.
TEST_F(EmbeddingTest, GradientsReachTheShardsThatGaveTheRows) {
  std::vector<Output> shards = Shards(root_, {{0, 2, 4, 6, 8}, {1, 3, 5, 7, 9}});
  Output ids = ops::Const(root_, Tensor::FromVector<int64_t>({3, 4, 3}));
  auto looked_up = EmbeddingLookup(root_, shards, ids);
  ASSERT_TRUE(looked_up.ok()) << looked_up.status();
  std::vector<Output> grads;
  ASSERT_TRUE(
      AddSymbolicGradients(root_, {ops::Sum(root_, *looked_up, {0, 1})}, shards, &grads).ok());
  std::vector<Tensor> out = Run(grads);
  // Shard 0 gave row 4 (its row 2) once; shard 1 gave row 3 (its row 1) twice.
  EXPECT_TRUE(
      out[0].Equals(Tensor::FromVector<float>({0, 0, 0, 0, 1, 1, 0, 0, 0, 0}, TensorShape({5, 2}))))
      << out[0].DebugString();
  EXPECT_TRUE(
      out[1].Equals(Tensor::FromVector<float>({0, 0, 2, 2, 0, 0, 0, 0, 0, 0}, TensorShape({5, 2}))))
      << out[1].DebugString();
}

TEST_F(EmbeddingTest, BadArgumentsAreInvalidArgument) {
  Output ids = ops::Const(root_, {1, 2});
  auto expect = [](const absl::StatusOr<Output>& r, const std::string& text) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(text));
  };
  expect(EmbeddingLookup(root_, {}, ids), "no params");
  expect(EmbeddingLookup(root_, Shards(root_, {{0}}), ops::Const(root_, {1.0f})),
         "ids must be int32 or int64");
  std::vector<Output> mixed = Shards(root_, {{0}});
  mixed.push_back(ops::Const(root_, {{1.0, 2.0}}));
  expect(EmbeddingLookup(root_, mixed, ids), "params[1] is double but params[0] is float");
  std::vector<Output> unknown = {ops::Placeholder(root_, DT_FLOAT),
                                 ops::Placeholder(root_, DT_FLOAT)};
  expect(EmbeddingLookup(root_, unknown, ids, PartitionStrategy::kDiv),
         "the div strategy needs the first dimension of every shard known");
  // An id past the table fails the step.
  auto past = EmbeddingLookup(root_, Shards(root_, {{0, 2}, {1, 3}}), ops::Const(root_, {7}));
  ASSERT_TRUE(past.ok()) << past.status();
  SessionOptions options;
  options.resource_mgr = &resources_;
  auto session = ClientSession::Create(root_, options);
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> out;
  absl::Status s = (*session)->Run({*past}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace overseer

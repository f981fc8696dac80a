#include "core/message_budget.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

TEST(MessageBudgetTest, FitsUpToTheLimit) {
  MessageBudget budget(100);
  budget.Add(60);
  budget.Add(40);
  EXPECT_EQ(budget.total(), 100);
  EXPECT_EQ(budget.size(), 2u);
  EXPECT_TRUE(budget.fits());
  budget.Add(1);
  EXPECT_FALSE(budget.fits());
}

TEST(MessageBudgetTest, ErrorNamesTheLargestTensorsAndTheLimit) {
  MessageBudget budget(100);
  const std::vector<std::string> names = {"small:0", "big:0", "mid:0", "tiny:0", "other:0"};
  for (int64_t bytes : {1, 90, 20, 0, 5}) budget.Add(bytes);
  ASSERT_FALSE(budget.fits());
  absl::Status s = budget.Error("the RunStep reply", "fetch smaller tensors",
                                [&](size_t i) { return "fetch '" + names[i] + "'"; });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  const std::string m(s.message());
  EXPECT_THAT(m, HasSubstr("the RunStep reply would carry 116 bytes of tensors"));
  EXPECT_THAT(m, HasSubstr("fetch 'big:0' is 90 bytes, fetch 'mid:0' is 20 bytes, "
                           "fetch 'other:0' is 5 bytes, 2 more"));
  EXPECT_THAT(m, HasSubstr("over the limit of 100 bytes per message"));
  EXPECT_THAT(m, HasSubstr("2 GiB"));
  EXPECT_THAT(m, HasSubstr("fetch smaller tensors"));
}

TEST(MessageBudgetTest, DefaultLimitIsProtobufsLessTheOverhead) {
  MessageBudget budget;
  EXPECT_EQ(budget.limit(), kMaxProtoMessageBytes - kMessageOverheadBytes);
  budget.Add(kMaxMessageTensorBytes);
  EXPECT_TRUE(budget.fits());
  budget.Add(1);
  ASSERT_FALSE(budget.fits());
  EXPECT_THAT(std::string(budget.Error("m", "h", [](size_t) { return "t"; }).message()),
              HasSubstr("MiB"));
}

TEST(MessageBudgetTest, EncodedSizes) {
  EXPECT_EQ(EncodedTensorBytes(Tensor()), 0);
  EXPECT_EQ(EncodedTensorBytes(Tensor(DT_FLOAT, TensorShape({3, 5}))), 60);
  Tensor strings(DT_STRING, TensorShape({2}));
  strings.data<std::string>()[0] = "abc";
  TensorProto proto;
  strings.ToProto(&proto);
  // The estimate bounds the real encoding of the values.
  EXPECT_GE(EncodedTensorBytes(strings), 3);
  EXPECT_GE(EncodedTensorBytes(strings) + 16, EncodedTensorBytes(proto));
  Tensor floats(DT_FLOAT, TensorShape({1000}));
  floats.ToProto(&proto);
  EXPECT_GE(EncodedTensorBytes(proto), 4000);
  EXPECT_LE(EncodedTensorBytes(proto), 4000 + 32);
}

}  // namespace
}  // namespace overseer

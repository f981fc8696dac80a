#include "core/message_budget.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

using ::testing::HasSubstr;

TEST(MessageBudgetTest, FitsUpToTheLimit) {
  MessageBudget budget("the RunStep request", "feed less", 100);
  budget.Add("feed 'a:0'", 60);
  budget.Add("feed 'b:0'", 40);
  EXPECT_EQ(budget.total(), 100);
  EXPECT_TRUE(budget.Check().ok());
}

TEST(MessageBudgetTest, OverTheLimitNamesTheLargestTensorsAndTheLimit) {
  MessageBudget budget("the RunStep reply", "fetch smaller tensors", 100);
  budget.Add("fetch 'small:0'", 1);
  budget.Add("fetch 'big:0'", 90);
  budget.Add("fetch 'mid:0'", 20);
  budget.Add("fetch 'tiny:0'", 0);
  budget.Add("fetch 'other:0'", 5);
  absl::Status s = budget.Check();
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
  MessageBudget budget("m", "h");
  budget.Add("t", kMaxMessageTensorBytes);
  EXPECT_TRUE(budget.Check().ok());
  budget.Add("u", 1);
  EXPECT_EQ(budget.Check().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(budget.Check().message()), HasSubstr("MiB"));
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

#include "client/session/readiness.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "core/clock.h"
#include "core/resource_mgr.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

class InProcessReadinessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto channel = NewReadinessChannel("", Clock::Real(), &resources_);
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = *std::move(channel);
  }

  ResourceMgr resources_;  // Where the table lives; each test has its own.
  std::unique_ptr<ReadinessChannel> channel_;
};

TEST_F(InProcessReadinessTest, WaitWithoutMarkTimesOutNotReady) {
  absl::StatusOr<bool> ready = channel_->WaitForReady("model", absl::Milliseconds(10));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_FALSE(*ready);
  ready = channel_->WaitForReady("model", absl::ZeroDuration());
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_FALSE(*ready);
}

TEST_F(InProcessReadinessTest, MarkWaitWithdraw) {
  ASSERT_TRUE(channel_->MarkReady("model").ok());
  ASSERT_TRUE(channel_->MarkReady("model").ok());  // Idempotent.
  absl::StatusOr<bool> ready = channel_->WaitForReady("model", absl::ZeroDuration());
  ASSERT_TRUE(ready.ok());
  EXPECT_TRUE(*ready);
  EXPECT_FALSE(*channel_->WaitForReady("other", absl::ZeroDuration()));
  ASSERT_TRUE(channel_->WithdrawReady("model").ok());
  ASSERT_TRUE(channel_->WithdrawReady("model").ok());  // Idempotent.
  EXPECT_FALSE(*channel_->WaitForReady("model", absl::Milliseconds(1)));
}

TEST_F(InProcessReadinessTest, ChannelsShareTheResourceMgrsTable) {
  auto other = NewReadinessChannel("", Clock::Real(), &resources_);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->MarkReady("model").ok());
  EXPECT_TRUE(*channel_->WaitForReady("model", absl::ZeroDuration()));
  ResourceMgr fresh;  // Another model's variables: no mark.
  auto elsewhere = NewReadinessChannel("", Clock::Real(), &fresh);
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_FALSE(*(*elsewhere)->WaitForReady("model", absl::ZeroDuration()));
}

TEST_F(InProcessReadinessTest, BlockedWaitersAreReleasedByAMark) {
  constexpr int kWaiters = 8;
  std::vector<absl::StatusOr<bool>> results(kWaiters, false);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back(
        [&, i] { results[i] = channel_->WaitForReady("model", absl::Minutes(10)); });
  }
  ASSERT_TRUE(channel_->MarkReady("model").ok());
  for (auto& t : waiters) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(*r);
  }
}

TEST(ReadinessRegistryTest, UnknownTargetIsInvalidArgumentNamingIt) {
  auto channel = NewReadinessChannel("grpc://localhost:1");
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(channel.status().message(), "grpc://localhost:1"))
      << channel.status();
  EXPECT_TRUE(absl::StrContains(channel.status().message(), "//client/session:grpc_session"))
      << channel.status();
}

// Answers every wait with whether the key equals its tag.
class TaggedChannel : public ReadinessChannel {
 public:
  explicit TaggedChannel(std::string tag) : tag_(std::move(tag)) {}
  absl::Status MarkReady(const std::string&, const std::vector<std::string>&) override {
    return absl::OkStatus();
  }
  absl::Status WithdrawReady(const std::string&) override { return absl::OkStatus(); }
  absl::StatusOr<bool> WaitForReady(const std::string& key, absl::Duration) override {
    return key == tag_;
  }

 private:
  const std::string tag_;
};

TEST(ReadinessRegistryTest, TheLongestRegisteredPrefixWins) {
  RegisterReadinessChannelFactory("test://", [](const std::string&, Clock*) {
    return absl::StatusOr<std::unique_ptr<ReadinessChannel>>(
        std::make_unique<TaggedChannel>("short"));
  });
  RegisterReadinessChannelFactory("test://special/", [](const std::string&, Clock*) {
    return absl::StatusOr<std::unique_ptr<ReadinessChannel>>(
        std::make_unique<TaggedChannel>("long"));
  });
  auto plain = NewReadinessChannel("test://host");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(*(*plain)->WaitForReady("short", absl::ZeroDuration()));
  auto special = NewReadinessChannel("test://special/host");
  ASSERT_TRUE(special.ok()) << special.status();
  EXPECT_TRUE(*(*special)->WaitForReady("long", absl::ZeroDuration()));
}

}  // namespace
}  // namespace overseer

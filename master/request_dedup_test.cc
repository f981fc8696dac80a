#include "master/request_dedup.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "proto/master.pb.h"

namespace overseer {
namespace {

TEST(RequestDedupTest, ADuplicateOfARunningCallIsAnsweredWhenTheFirstFinishes) {
  RequestDedup dedup;
  int runs = 0;
  RequestDedup::Done finish_first;
  RunStepResponse first, second;
  absl::Status first_status = absl::UnknownError("not done");
  absl::Status second_status = absl::UnknownError("not done");
  auto fn = [&](RunStepResponse* response) {
    return [&runs, &finish_first, response](RequestDedup::Done ran) {
      ++runs;
      response->add_tensor()->set_name("y:0");
      finish_first = std::move(ran);  // Still running.
    };
  };
  dedup.RunAsync("id", &first, fn(&first), [&](absl::Status s) { first_status = s; });
  dedup.RunAsync("id", &second, fn(&second), [&](absl::Status s) { second_status = s; });
  // The duplicate neither ran nor blocked: it waits for the first.
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(second_status.code(), absl::StatusCode::kUnknown);
  finish_first(absl::OkStatus());
  EXPECT_TRUE(first_status.ok());
  EXPECT_TRUE(second_status.ok());
  ASSERT_EQ(second.tensor_size(), 1);
  EXPECT_EQ(second.tensor(0).name(), "y:0");
  // Later retries get the remembered reply too, synchronously or not.
  RunStepResponse third;
  EXPECT_TRUE(dedup.Run("id", &third, [&] { return absl::InternalError("ran again"); }).ok());
  EXPECT_EQ(third.tensor_size(), 1);
  EXPECT_EQ(runs, 1);
}

TEST(RequestDedupTest, AnErrorIsRememberedAndAnEmptyIdAlwaysRuns) {
  RequestDedup dedup;
  int runs = 0;
  RunStepResponse response;
  auto failing = [&] {
    ++runs;
    return absl::InvalidArgumentError("bad feed");
  };
  EXPECT_EQ(dedup.Run("id", &response, failing).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dedup.Run("id", &response, failing).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(dedup.Run("", &response, failing).ok());
  EXPECT_FALSE(dedup.Run("", &response, failing).ok());
  EXPECT_EQ(runs, 3);
}

TEST(RequestDedupTest, AReplyTooLargeToRememberRunsAgainForItsWaiters) {
  // Responses above max_bytes / 8 are not remembered.
  RequestDedup dedup(/*capacity=*/16, /*max_bytes=*/64);
  int runs = 0;
  RequestDedup::Done finish_first;
  RunStepResponse first, second;
  absl::Status second_status = absl::UnknownError("not done");
  auto big = [&](RunStepResponse* response) {
    return [&runs, &finish_first, response](RequestDedup::Done ran) {
      ++runs;
      response->add_tensor()->set_name(std::string(100, 'x'));
      if (runs == 1) {
        finish_first = std::move(ran);
      } else {
        ran(absl::OkStatus());
      }
    };
  };
  dedup.RunAsync("id", &first, big(&first), [](absl::Status) {});
  dedup.RunAsync("id", &second, big(&second), [&](absl::Status s) { second_status = s; });
  EXPECT_EQ(runs, 1);
  finish_first(absl::OkStatus());
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(second_status.ok());
  EXPECT_EQ(second.tensor_size(), 1);
}

TEST(RequestDedupTest, ASharedReplyIsKeptNotCopied) {
  RequestDedup dedup;
  auto first = std::make_shared<RunStepResponse>();
  int runs = 0;
  auto fill = [&runs](RunStepResponse* response) {
    return [&runs, response](RequestDedup::Done ran) {
      ++runs;
      response->add_tensor()->set_name("fetched");
      ran(absl::OkStatus());
    };
  };
  absl::Status first_status = absl::UnknownError("not done");
  dedup.RunAsync(
      "id", first.get(), fill(first.get()), [&](absl::Status s) { first_status = s; }, first);
  EXPECT_TRUE(first_status.ok());
  // The dedup holds the caller's reply itself: no copy was made of it.
  EXPECT_EQ(first.use_count(), 2);
  std::weak_ptr<RunStepResponse> kept = first;
  first.reset();
  EXPECT_FALSE(kept.expired());

  // A retry is answered with a copy of the kept reply, without running again.
  RunStepResponse retry;
  EXPECT_TRUE(dedup.Run("id", &retry, [] { return absl::InternalError("ran again"); }).ok());
  EXPECT_EQ(runs, 1);
  ASSERT_EQ(retry.tensor_size(), 1);
  EXPECT_EQ(retry.tensor(0).name(), "fetched");
}

TEST(RequestDedupTest, ASharedReplyTooLargeToRememberIsLetGo) {
  RequestDedup dedup(/*capacity=*/16, /*max_bytes=*/64);
  auto first = std::make_shared<RunStepResponse>();
  dedup.RunAsync(
      "id", first.get(),
      [&first](RequestDedup::Done ran) {
        first->add_tensor()->set_name(std::string(100, 'x'));
        ran(absl::OkStatus());
      },
      [](absl::Status) {}, first);
  EXPECT_EQ(first.use_count(), 1);
}

TEST(RequestDedupTest, ASharedReplyIsLetGoWhenItsIdIsForgotten) {
  RequestDedup dedup(/*capacity=*/1);
  auto run = [&dedup](const std::string& id) {
    auto response = std::make_shared<RunStepResponse>();
    dedup.RunAsync(
        id, response.get(), [](RequestDedup::Done ran) { ran(absl::OkStatus()); },
        [](absl::Status) {}, response);
    return std::weak_ptr<RunStepResponse>(response);
  };
  std::weak_ptr<RunStepResponse> first = run("first");
  EXPECT_FALSE(first.expired());
  std::weak_ptr<RunStepResponse> second = run("second");
  EXPECT_TRUE(first.expired());
  EXPECT_FALSE(second.expired());
}

}  // namespace
}  // namespace overseer

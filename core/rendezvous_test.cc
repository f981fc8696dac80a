#include "core/rendezvous.h"

#include <thread>

#include "gtest/gtest.h"

namespace overseer {
namespace {

RendezvousKey Key(const std::string& name, uint64_t incarnation = 0x1234) {
  auto key =
      RendezvousKey::Parse(MakeRendezvousKey("/job:ps/replica:0/task:0/device:CPU:0", incarnation,
                                             "/job:worker/replica:0/task:0/device:CPU:0", name));
  EXPECT_TRUE(key.ok()) << key.status();
  return *key;
}

TEST(RendezvousKeyTest, ParsesItsParts) {
  RendezvousKey key = Key("w:0", 0xabcdef);
  EXPECT_EQ(key.parsed.src_device, "/job:ps/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(key.parsed.src_incarnation, 0xabcdefu);
  EXPECT_EQ(key.parsed.tensor_name, "w:0");
  EXPECT_EQ(RendezvousKey::Parse("a;b").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LocalRendezvousTest, SendThenRecv) {
  auto rendezvous = LocalRendezvous::Create();
  ASSERT_TRUE(rendezvous->Send(Key("a"), Tensor::Scalar<float>(2.5f)).ok());
  EXPECT_EQ(rendezvous->num_pending_values(), 1);
  absl::StatusOr<Tensor> got = rendezvous->Recv(Key("a"), {});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->scalar<float>(), 2.5f);
  EXPECT_EQ(rendezvous->num_pending_values(), 0);
}

TEST(LocalRendezvousTest, RecvWaitsForSendFromAnotherThread) {
  auto rendezvous = LocalRendezvous::Create();
  absl::StatusOr<Tensor> got;
  std::thread receiver([&] { got = rendezvous->Recv(Key("b"), {}); });
  ASSERT_TRUE(rendezvous->Send(Key("b"), Tensor::Scalar<int32_t>(7)).ok());
  receiver.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->scalar<int32_t>(), 7);
}

TEST(LocalRendezvousTest, DuplicateSendIsInvalid) {
  auto rendezvous = LocalRendezvous::Create();
  ASSERT_TRUE(rendezvous->Send(Key("c"), Tensor::Scalar<float>(1)).ok());
  absl::Status again = rendezvous->Send(Key("c"), Tensor::Scalar<float>(1));
  EXPECT_EQ(again.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("sent twice"), std::string::npos) << again;
}

TEST(LocalRendezvousTest, PassedDeadlineNamesTheTensor) {
  auto rendezvous = LocalRendezvous::Create();
  RendezvousWait wait;
  wait.clock = Clock::Real();
  wait.deadline = absl::Now() - absl::Seconds(1);
  absl::StatusOr<Tensor> got = rendezvous->Recv(Key("late"), wait);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(got.status().message().find("'late'"), std::string::npos) << got.status();
}

TEST(LocalRendezvousTest, CancellationWakesAWaitingRecv) {
  auto rendezvous = LocalRendezvous::Create();
  CancellationManager cm;
  RendezvousWait wait;
  wait.cancellation = &cm;
  absl::StatusOr<Tensor> got;
  std::thread receiver([&] { got = rendezvous->Recv(Key("d"), wait); });
  cm.StartCancel(absl::CancelledError("step cancelled"));
  receiver.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled);
  // The key can be waited for again by a step that is not cancelled.
  ASSERT_TRUE(rendezvous->Send(Key("d"), Tensor::Scalar<float>(3)).ok());
  EXPECT_TRUE(rendezvous->Recv(Key("d"), {}).ok());
}

TEST(LocalRendezvousTest, AbortFailsWaitersAndLaterCalls) {
  auto rendezvous = LocalRendezvous::Create();
  absl::StatusOr<Tensor> got;
  std::thread receiver([&] { got = rendezvous->Recv(Key("e"), {}); });
  rendezvous->StartAbort(absl::UnavailableError("peer /job:ps/replica:0/task:0 died"));
  receiver.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(rendezvous->Send(Key("f"), Tensor::Scalar<float>(1)).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(rendezvous->Recv(Key("f"), {}).status().code(), absl::StatusCode::kUnavailable);
  rendezvous->StartAbort(absl::CancelledError("second"));
  EXPECT_EQ(rendezvous->status().code(), absl::StatusCode::kUnavailable);
}

// What a RecvAsync's `done` was called with, and on which thread.
struct Answered {
  int calls = 0;
  absl::StatusOr<Tensor> value;
  std::thread::id thread;

  LocalRendezvous::RecvDone Done() {
    return [this](absl::StatusOr<Tensor> got) {
      ++calls;
      value = std::move(got);
      thread = std::this_thread::get_id();
    };
  }
};

TEST(LocalRendezvousTest, RecvAsyncOfAValueSentIsAnsweredAtOnce) {
  auto rendezvous = LocalRendezvous::Create();
  ASSERT_TRUE(rendezvous->Send(Key("a"), Tensor::Scalar<float>(2.5f)).ok());
  Answered answered;
  rendezvous->RecvAsync(Key("a"), nullptr, answered.Done());
  ASSERT_EQ(answered.calls, 1);
  ASSERT_TRUE(answered.value.ok()) << answered.value.status();
  EXPECT_EQ(answered.value->scalar<float>(), 2.5f);
  EXPECT_EQ(rendezvous->num_pending_values(), 0);
}

TEST(LocalRendezvousTest, RecvAsyncIsAnsweredByTheSendersThread) {
  auto rendezvous = LocalRendezvous::Create();
  CancellationManager cm;
  Answered answered;
  rendezvous->RecvAsync(Key("b"), &cm, answered.Done());
  EXPECT_EQ(answered.calls, 0);
  // A second receive of the key while the first waits is refused.
  Answered second;
  rendezvous->RecvAsync(Key("b"), nullptr, second.Done());
  ASSERT_EQ(second.calls, 1);
  EXPECT_EQ(second.value.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rendezvous->Recv(Key("b"), {}).status().code(), absl::StatusCode::kInvalidArgument);
  std::thread::id sender;
  std::thread send([&] {
    sender = std::this_thread::get_id();
    EXPECT_TRUE(rendezvous->Send(Key("b"), Tensor::Scalar<int32_t>(7)).ok());
  });
  send.join();
  ASSERT_EQ(answered.calls, 1);
  ASSERT_TRUE(answered.value.ok()) << answered.value.status();
  EXPECT_EQ(answered.value->scalar<int32_t>(), 7);
  EXPECT_EQ(answered.thread, sender);
  // Answered: a later cancellation calls nothing.
  cm.StartCancel(absl::CancelledError("late"));
  EXPECT_EQ(answered.calls, 1);
}

TEST(LocalRendezvousTest, CancellingARecvAsyncAnswersItWithTheReason) {
  auto rendezvous = LocalRendezvous::Create();
  CancellationManager cm;
  Answered answered;
  rendezvous->RecvAsync(Key("c"), &cm, answered.Done());
  cm.StartCancel(absl::DeadlineExceededError("timed out waiting for 'c'"));
  ASSERT_EQ(answered.calls, 1);
  EXPECT_EQ(answered.value.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(answered.value.status().message(), "timed out waiting for 'c'");
  // The key can be received again; a value sent now is kept for it.
  ASSERT_TRUE(rendezvous->Send(Key("c"), Tensor::Scalar<float>(3)).ok());
  EXPECT_EQ(rendezvous->num_pending_values(), 1);
  EXPECT_TRUE(rendezvous->Recv(Key("c"), {}).ok());
  // Cancelled before it waits: answered at once.
  Answered late;
  rendezvous->RecvAsync(Key("d"), &cm, late.Done());
  ASSERT_EQ(late.calls, 1);
  EXPECT_EQ(late.value.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(LocalRendezvousTest, AbortAnswersEveryRecvAsync) {
  auto rendezvous = LocalRendezvous::Create();
  CancellationManager cm;
  Answered first, second;
  rendezvous->RecvAsync(Key("e"), &cm, first.Done());
  rendezvous->RecvAsync(Key("f"), nullptr, second.Done());
  rendezvous->StartAbort(absl::CancelledError("step 3 was cleaned up"));
  ASSERT_EQ(first.calls, 1);
  ASSERT_EQ(second.calls, 1);
  EXPECT_EQ(first.value.status().message(), "step 3 was cleaned up");
  EXPECT_EQ(second.value.status().code(), absl::StatusCode::kCancelled);
  cm.StartCancel(absl::CancelledError("late"));
  EXPECT_EQ(first.calls, 1);
  Answered after;
  rendezvous->RecvAsync(Key("g"), nullptr, after.Done());
  EXPECT_EQ(after.value.status().message(), "step 3 was cleaned up");
}

}  // namespace
}  // namespace overseer

// The local transfer socket on its own: tokens, their single use, the receiver's
// errors and cancellation, over real Unix sockets.

#include "worker/rpc/local_transfer.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

class LocalTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = LocalTransferServer::Start(LocalTransferServer::DefaultAddress());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  std::string Token() {
    absl::StatusOr<std::string> token = server_->NewToken();
    EXPECT_TRUE(token.ok()) << token.status();
    return token.ok() ? *token : "";
  }

  static std::vector<char> Pattern(size_t n) {
    std::vector<char> bytes(n);
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 7 + i / 4096);
    return bytes;
  }

  std::unique_ptr<LocalTransferServer> server_;
};

TEST_F(LocalTransferTest, TheReceiverGetsEveryByteOfItsToken) {
  const std::vector<char> sent = Pattern(5 << 20);
  const std::string token = Token();
  absl::Status send_status;
  std::thread sender([&] {
    absl::StatusOr<UniqueFd> connection = server_->Await(token, absl::InfiniteFuture());
    send_status = connection.ok() ? SendLocalTransfer(connection->get(),
                                                      absl::string_view(sent.data(), sent.size()))
                                  : connection.status();
  });
  std::vector<char> got(sent.size());
  LocalTransferReceiver receiver;
  const absl::Status status = receiver.Receive(server_->address(), token, absl::MakeSpan(got));
  sender.join();
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_TRUE(send_status.ok()) << send_status;
  EXPECT_EQ(got, sent);
  EXPECT_EQ(server_->tokens_held(), 0);
  EXPECT_EQ(server_->refused(), 0);
}

TEST_F(LocalTransferTest, UnknownAndSpentTokensAreRefusedWithoutAByte) {
  std::vector<char> got(1000);
  LocalTransferReceiver unknown;
  absl::Status status =
      unknown.Receive(server_->address(), std::string(kLocalTokenChars, 'a'), absl::MakeSpan(got));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("closed after 0 of 1000 bytes"), std::string::npos) << status;
  EXPECT_EQ(server_->refused(), 1);

  // A token is redeemed once: a second connection presenting it is refused.
  const std::string token = Token();
  std::thread sender([&] {
    absl::StatusOr<UniqueFd> connection = server_->Await(token, absl::InfiniteFuture());
    ASSERT_TRUE(connection.ok()) << connection.status();
    EXPECT_TRUE(SendLocalTransfer(connection->get(), std::string(1000, 'x')).ok());
  });
  LocalTransferReceiver first;
  EXPECT_TRUE(first.Receive(server_->address(), token, absl::MakeSpan(got)).ok());
  sender.join();
  LocalTransferReceiver again;
  EXPECT_EQ(again.Receive(server_->address(), token, absl::MakeSpan(got)).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(server_->refused(), 2);
}

TEST_F(LocalTransferTest, ASenderThatStopsHalfwayIsUnavailableNotAShortTensor) {
  const std::string token = Token();
  std::thread sender([&] {
    absl::StatusOr<UniqueFd> connection = server_->Await(token, absl::InfiniteFuture());
    ASSERT_TRUE(connection.ok()) << connection.status();
    EXPECT_TRUE(SendLocalTransfer(connection->get(), std::string(3000, 'x')).ok());
    // The connection closes here: the sender died.
  });
  std::vector<char> got(10000);
  LocalTransferReceiver receiver;
  const absl::Status status = receiver.Receive(server_->address(), token, absl::MakeSpan(got));
  sender.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("closed after 3000 of 10000 bytes"), std::string::npos) << status;
}

TEST_F(LocalTransferTest, CancelEndsAReceiveThatWaitsForBytes) {
  const std::string token = Token();
  absl::StatusOr<UniqueFd> held = absl::UnknownError("not yet");
  // The sender takes the connection and sends nothing until the receiver gave up.
  std::thread sender([&] { held = server_->Await(token, absl::InfiniteFuture()); });
  std::vector<char> got(1000);
  LocalTransferReceiver receiver;
  absl::Status status;
  std::thread reader(
      [&] { status = receiver.Receive(server_->address(), token, absl::MakeSpan(got)); });
  sender.join();  // Connected: the receiver reads, or is about to.
  receiver.Cancel();
  reader.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  ASSERT_TRUE(held.ok()) << held.status();
}

TEST_F(LocalTransferTest, AwaitEndsAtItsDeadlineOrWhenForgotten) {
  const std::string late = Token();
  EXPECT_EQ(server_->Await(late, absl::Now()).status().code(), absl::StatusCode::kDeadlineExceeded);
  const std::string forgotten = Token();
  absl::Status status;
  std::thread waiter([&] { status = server_->Await(forgotten, absl::InfiniteFuture()).status(); });
  server_->Forget(forgotten);  // Before or while Await waits: either way it ends.
  waiter.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  const std::string dropped = Token();
  server_->Drop(dropped);
  EXPECT_EQ(server_->tokens_held(), 0);
  EXPECT_EQ(server_->Await(dropped, absl::InfiniteFuture()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(LocalTransferTest, AProbeReachesTheSocketAndIsNotRefused) {
  EXPECT_TRUE(CanReachLocalTransfer(server_->address()));
  EXPECT_FALSE(CanReachLocalTransfer(LocalTransferServer::DefaultAddress()));  // No one there.
  std::vector<char> got(10);
  LocalTransferReceiver nowhere;
  EXPECT_EQ(
      nowhere
          .Receive(LocalTransferServer::DefaultAddress(), std::string(32, 'a'), absl::MakeSpan(got))
          .code(),
      absl::StatusCode::kUnavailable);
  // A second server cannot take a socket that is in use.
  EXPECT_EQ(LocalTransferServer::Start(server_->address()).status().code(),
            absl::StatusCode::kAlreadyExists);
  // The probe's connection is dropped silently (the server keeps serving).
  const std::string token = Token();
  std::thread sender([&] {
    absl::StatusOr<UniqueFd> connection = server_->Await(token, absl::InfiniteFuture());
    ASSERT_TRUE(connection.ok()) << connection.status();
    EXPECT_TRUE(SendLocalTransfer(connection->get(), "0123456789").ok());
  });
  LocalTransferReceiver receiver;
  EXPECT_TRUE(receiver.Receive(server_->address(), token, absl::MakeSpan(got)).ok());
  sender.join();
  EXPECT_EQ(std::string(got.data(), got.size()), "0123456789");
  EXPECT_EQ(server_->refused(), 0);
}

TEST_F(LocalTransferTest, ConnectionsThatStallHoldUpNoOther) {
  // Local processes connect, send part of a token and stop. Given all the time in the
  // world to finish their tokens, they do not keep the next caller from its bytes.
  auto patient =
      LocalTransferServer::Start(LocalTransferServer::DefaultAddress(), absl::InfiniteDuration());
  ASSERT_TRUE(patient.ok()) << patient.status();
  LocalTransferServer& server = **patient;
  std::vector<UniqueFd> stalled;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<UniqueFd> c = ConnectUnixSocket(server.address(), SOCK_STREAM, "test");
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(::send(c->get(), "01234", 5, MSG_NOSIGNAL), 5);
    stalled.push_back(*std::move(c));
  }
  absl::StatusOr<std::string> token = server.NewToken();
  ASSERT_TRUE(token.ok()) << token.status();
  std::thread sender([&] {
    absl::StatusOr<UniqueFd> connection = server.Await(*token, absl::InfiniteFuture());
    ASSERT_TRUE(connection.ok()) << connection.status();
    EXPECT_TRUE(SendLocalTransfer(connection->get(), "abc").ok());
  });
  std::vector<char> got(3);
  LocalTransferReceiver receiver;
  const absl::Status status = receiver.Receive(server.address(), *token, absl::MakeSpan(got));
  sender.join();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(std::string(got.data(), got.size()), "abc");
  EXPECT_EQ(server.refused(), 0);  // The stalled ones are still waited for.
  // Each ends its part of a token: refused, and closed without a byte.
  for (UniqueFd& c : stalled) {
    ASSERT_EQ(::shutdown(c.get(), SHUT_WR), 0);
    char byte;
    EXPECT_EQ(::recv(c.get(), &byte, 1, 0), 0);
  }
  EXPECT_EQ(server.refused(), 3);
}

TEST_F(LocalTransferTest, AConnectionThatNeverFinishesItsTokenIsClosed) {
  // Part of a token, then nothing: closed without a byte when its wait (kLocalTokenWait)
  // ends, and counted refused.
  absl::StatusOr<UniqueFd> stalled = ConnectUnixSocket(server_->address(), SOCK_STREAM, "test");
  ASSERT_TRUE(stalled.ok()) << stalled.status();
  ASSERT_EQ(::send(stalled->get(), "01234", 5, MSG_NOSIGNAL), 5);
  char byte;
  EXPECT_EQ(::recv(stalled->get(), &byte, 1, 0), 0);
  EXPECT_EQ(server_->refused(), 1);
}

TEST_F(LocalTransferTest, TokensNeverAwaitedDoNotHoldUpTheServersEnd) {
  Token();
  Token();
  EXPECT_EQ(server_->tokens_held(), 2);
  server_.reset();  // Returns: the tokens are dropped.
}

}  // namespace
}  // namespace overseer

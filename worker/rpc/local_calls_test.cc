// Same-host calls on their own, over real Unix sockets: replies and errors, calls from
// many threads and from `done` itself, large bodies, cancellation and deadlines on both
// ends, either end going away, and frames that break the protocol.

#include "worker/rpc/local_calls.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

std::string NewAddress() {
  static std::atomic<int> next{0};
  return absl::StrCat("@overseer-local-calls-test-", ::getpid(), "-", next++);
}

// What a call's `done` got, waited for.
class Result {
 public:
  LocalCallChannel::Done Done() {
    return [this](absl::StatusOr<std::string> value) {
      absl::MutexLock lock(&mu_);
      EXPECT_FALSE(done_) << "done ran twice";
      value_ = std::move(value);
      done_ = true;
    };
  }
  absl::StatusOr<std::string> Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return value_;
  }

 private:
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::StatusOr<std::string> value_ ABSL_GUARDED_BY(mu_);
};

// Calls the handler keeps unanswered, for the test to answer or watch.
class HeldCalls {
 public:
  LocalCallServer::Handler Handler() {
    return [this](std::shared_ptr<LocalCall> call) {
      absl::MutexLock lock(&mu_);
      calls_.push_back(std::move(call));
    };
  }
  // Waits until `n` calls came; returns the n-th.
  std::shared_ptr<LocalCall> Await(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return calls_.size() >= n; };
    mu_.Await(absl::Condition(&enough));
    return calls_[n - 1];
  }

 private:
  absl::Mutex mu_;
  std::vector<std::shared_ptr<LocalCall>> calls_ ABSL_GUARDED_BY(mu_);
};

// Waits until `cancellation` is cancelled; returns its reason.
absl::Status AwaitCancelled(CancellationManager* cancellation) {
  absl::Notification cancelled;
  if (cancellation->RegisterCallback([&cancelled] { cancelled.Notify(); }) ==
      CancellationManager::kInvalidToken) {
    return cancellation->status();
  }
  cancelled.WaitForNotification();
  return cancellation->status();
}

std::unique_ptr<LocalCallServer> StartEcho(LocalCallOptions options = {}) {
  auto server = LocalCallServer::Start(
      NewAddress(),
      [](std::shared_ptr<LocalCall> call) {
        if (call->request() == "fail") {
          call->Reply(absl::NotFoundError("no graph named fail"));
          return;
        }
        call->Reply(absl::OkStatus(), absl::StrCat(call->method(), ":", call->request()));
      },
      options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<LocalCallChannel> Connect(const std::string& address,
                                          LocalCallOptions options = {}) {
  auto channel = LocalCallChannel::Connect(address, options);
  EXPECT_TRUE(channel.ok()) << channel.status();
  return channel.ok() ? *std::move(channel) : nullptr;
}

// A server whose handler keeps every call unanswered, for the test to answer or watch,
// and a channel to it.
class HeldCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = LocalCallServer::Start(NewAddress(), held_.Handler());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = Connect(server_->address());
  }

  HeldCalls held_;
  std::unique_ptr<LocalCallServer> server_;
  std::unique_ptr<LocalCallChannel> channel_;
};

TEST(LocalCallsTest, ACallGetsItsReplyOrItsError) {
  std::unique_ptr<LocalCallServer> server = StartEcho();
  std::unique_ptr<LocalCallChannel> channel = Connect(server->address());
  Result ok, failed;
  channel->Call(7, "graph", absl::InfiniteFuture(), nullptr, ok.Done());
  channel->Call(7, "fail", absl::InfiniteFuture(), nullptr, failed.Done());
  absl::StatusOr<std::string> reply = ok.Wait();
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, "7:graph");
  EXPECT_EQ(failed.Wait().status(), absl::NotFoundError("no graph named fail"));
  EXPECT_EQ(channel->in_flight(), 0);
  EXPECT_EQ(server->connections(), 1);
}

// Small socket buffers, so that a body of a few hundred KiB takes many writes and
// waits for the reader in between.
LocalCallOptions SmallBuffers() {
  LocalCallOptions options;
  options.socket_buffer_bytes = 16 << 10;
  return options;
}

TEST(LocalCallsTest, ManyThreadsCallAtOnceAndLargeBodiesCrossWhole) {
  std::unique_ptr<LocalCallServer> server = StartEcho(SmallBuffers());
  std::unique_ptr<LocalCallChannel> channel = Connect(server->address(), SmallBuffers());
  constexpr int kThreads = 4;
  constexpr int kCalls = 100;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        // Every 10th call carries 256 KiB: many times what the socket buffers hold.
        std::string request = i % 10 == 0 ? std::string(256 << 10, static_cast<char>('a' + t))
                                          : absl::StrCat(t, "-", i);
        const std::string expected = absl::StrCat(3, ":", request);
        Result result;
        channel->Call(3, std::move(request), absl::InfiniteFuture(), nullptr, result.Done());
        absl::StatusOr<std::string> reply = result.Wait();
        if (!reply.ok() || *reply != expected) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(channel->in_flight(), 0);
}

// Many calls in flight at once, so that frames arrive back to back and a read takes
// several, cut anywhere: bodies of every size around what one read takes (64 KiB).
TEST(LocalCallsTest, FramesBackToBackCrossWholeWhateverTheirSizes) {
  std::unique_ptr<LocalCallServer> server = StartEcho();
  std::unique_ptr<LocalCallChannel> channel = Connect(server->address());
  const std::vector<size_t> sizes = {0,         1,          23,         24,         25,
                                     1000,      65535 - 48, 65536 - 24, 65536 - 23, 65536,
                                     65536 + 1, 100000,     200003,     3 << 20};
  constexpr int kRounds = 20;
  std::vector<std::unique_ptr<Result>> results;
  std::vector<std::string> expected;
  for (int round = 0; round < kRounds; ++round) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::string request(sizes[i], static_cast<char>('a' + (round + i) % 26));
      if (!request.empty()) request.back() = '!';
      expected.push_back(absl::StrCat(7, ":", request));
      results.push_back(std::make_unique<Result>());
      channel->Call(7, std::move(request), absl::InfiniteFuture(), nullptr, results.back()->Done());
    }
  }
  int wrong = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    absl::StatusOr<std::string> reply = results[i]->Wait();
    if (!reply.ok() || *reply != expected[i]) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(channel->in_flight(), 0);
}

TEST(LocalCallsTest, DoneMayCallAgainOnTheChannelsThread) {
  std::unique_ptr<LocalCallServer> server = StartEcho(SmallBuffers());
  std::unique_ptr<LocalCallChannel> channel = Connect(server->address(), SmallBuffers());
  // A chain of calls, each started by the previous one's `done`, as a master's step
  // goes on from the thread that read a reply.
  absl::Notification finished;
  std::atomic<int> left{100};
  std::function<void(absl::StatusOr<std::string>)> next = [&](absl::StatusOr<std::string> reply) {
    EXPECT_TRUE(reply.ok()) << reply.status();
    if (left.fetch_sub(1) == 1) {
      finished.Notify();
      return;
    }
    channel->Call(1, std::string(256 << 10, 'x'), absl::InfiniteFuture(), nullptr, next);
  };
  channel->Call(1, "first", absl::InfiniteFuture(), nullptr, next);
  finished.WaitForNotification();
}

TEST_F(HeldCallsTest, RepliesMayComeLaterFromAnyThreadInAnyOrder) {
  Result first, second;
  channel_->Call(1, "a", absl::InfiniteFuture(), nullptr, first.Done());
  channel_->Call(2, "b", absl::InfiniteFuture(), nullptr, second.Done());
  std::shared_ptr<LocalCall> a = held_.Await(1);
  std::shared_ptr<LocalCall> b = held_.Await(2);
  EXPECT_EQ(a->method(), 1);
  EXPECT_EQ(b->request(), "b");
  std::thread([b] { b->Reply(absl::OkStatus(), "B"); }).join();
  EXPECT_EQ(*second.Wait(), "B");
  a->Reply(absl::OkStatus(), "A");
  a->Reply(absl::InternalError("a second reply is ignored"));
  EXPECT_EQ(*first.Wait(), "A");
}

TEST_F(HeldCallsTest, CancellingACallEndsItAndCancelsItOnTheServer) {
  CancellationManager step;
  Result result;
  channel_->Call(1, "wait", absl::InfiniteFuture(), &step, result.Done());
  std::shared_ptr<LocalCall> call = held_.Await(1);
  step.StartCancel(absl::CancelledError("the step was aborted"));
  EXPECT_EQ(result.Wait().status(), absl::CancelledError("the step was aborted"));
  EXPECT_EQ(AwaitCancelled(call->cancellation()),
            absl::CancelledError("the caller gave up on the call"));
  call->Reply(absl::OkStatus(), "too late");  // Dropped by the client.
  // The channel goes on; a call with a cancelled manager does not start.
  Result after, already;
  channel_->Call(1, "after", absl::InfiniteFuture(), nullptr, after.Done());
  held_.Await(2)->Reply(absl::OkStatus(), "fine");
  EXPECT_EQ(*after.Wait(), "fine");
  channel_->Call(1, "x", absl::InfiniteFuture(), &step, already.Done());
  EXPECT_EQ(already.Wait().status(), absl::CancelledError("the step was aborted"));
  EXPECT_EQ(channel_->in_flight(), 0);
}

TEST_F(HeldCallsTest, ACallPastItsDeadlineEndsAndTheServerHearsOfIt) {
  Result late, never;
  channel_->Call(1, "no deadline", absl::InfiniteFuture(), nullptr, never.Done());
  channel_->Call(1, "slow", absl::Now() + absl::Milliseconds(20), nullptr, late.Done());
  EXPECT_EQ(late.Wait().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(AwaitCancelled(held_.Await(2)->cancellation()).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(channel_->in_flight(), 1);
  held_.Await(1)->Reply(absl::OkStatus(), "done");
  EXPECT_EQ(*never.Wait(), "done");
}

TEST_F(HeldCallsTest, TheServerGoingAwayFailsCallsUnavailable) {
  const std::string address = server_->address();
  Result result;
  channel_->Call(1, "wait", absl::InfiniteFuture(), nullptr, result.Done());
  std::shared_ptr<LocalCall> call = held_.Await(1);
  server_.reset();
  EXPECT_EQ(AwaitCancelled(call->cancellation()).code(), absl::StatusCode::kCancelled);
  const absl::Status status = result.Wait().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find(address), absl::string_view::npos) << status;
  EXPECT_TRUE(channel_->closed());
  Result after;
  channel_->Call(1, "after", absl::InfiniteFuture(), nullptr, after.Done());
  EXPECT_EQ(after.Wait().status().code(), absl::StatusCode::kUnavailable);
  call->Reply(absl::OkStatus(), "nobody listens");
  EXPECT_EQ(LocalCallChannel::Connect(address).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(HeldCallsTest, TheClientGoingAwayCancelsItsCallsOnTheServer) {
  Result result;
  channel_->Call(1, "wait", absl::InfiniteFuture(), nullptr, result.Done());
  std::shared_ptr<LocalCall> call = held_.Await(1);
  channel_.reset();
  EXPECT_EQ(result.Wait().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(AwaitCancelled(call->cancellation()).code(), absl::StatusCode::kCancelled);
  call->Reply(absl::OkStatus(), "nobody listens");
  // The server serves the next client.
  std::unique_ptr<LocalCallChannel> next = Connect(server_->address());
  Result again;
  next->Call(1, "again", absl::InfiniteFuture(), nullptr, again.Done());
  held_.Await(2)->Reply(absl::OkStatus(), "yes");
  EXPECT_EQ(*again.Wait(), "yes");
}

// Writes `bytes` on a raw connection to `address`, ends its side, and reads until the
// server closes the connection.
void SendRawAndAwaitClose(const std::string& address, const std::string& bytes) {
  absl::StatusOr<UniqueFd> fd = ConnectUnixSocket(address, SOCK_STREAM, "test");
  ASSERT_TRUE(fd.ok()) << fd.status();
  ASSERT_EQ(::send(fd->get(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  ::shutdown(fd->get(), SHUT_WR);
  char c;
  while (::recv(fd->get(), &c, 1, 0) > 0) {
  }
}

std::string Header(uint32_t magic, uint8_t kind, uint64_t id, uint32_t length) {
  std::string h(kLocalCallHeaderBytes, '\0');
  std::memcpy(&h[0], &magic, 4);
  h[4] = static_cast<char>(kind);
  std::memcpy(&h[8], &id, 8);
  std::memcpy(&h[20], &length, 4);
  return h;
}

TEST(LocalCallsTest, AFrameThatBreaksTheProtocolClosesOnlyItsConnection) {
  std::unique_ptr<LocalCallServer> server = StartEcho(LocalCallOptions{1 << 10});
  std::unique_ptr<LocalCallChannel> good = Connect(server->address());
  SendRawAndAwaitClose(server->address(), std::string(kLocalCallHeaderBytes, 'x'));  // Magic.
  SendRawAndAwaitClose(server->address(), Header(kLocalCallMagic, 9, 1, 0));         // Kind.
  SendRawAndAwaitClose(server->address(), Header(kLocalCallMagic, 3, 1, 0));         // A reply.
  SendRawAndAwaitClose(server->address(), Header(kLocalCallMagic, 1, 1, 2 << 10));   // Size.
  EXPECT_EQ(server->malformed(), 4);
  // A connection that closes halfway through a frame is not malformed, only gone.
  SendRawAndAwaitClose(server->address(), Header(kLocalCallMagic, 1, 1, 100) + "half");
  EXPECT_EQ(server->malformed(), 4);
  Result result;
  good->Call(2, "still here", absl::InfiniteFuture(), nullptr, result.Done());
  EXPECT_EQ(*result.Wait(), "2:still here");
}

TEST_F(HeldCallsTest, ACallIdInUseClosesTheConnection) {
  SendRawAndAwaitClose(server_->address(),
                       Header(kLocalCallMagic, 1, 5, 0) + Header(kLocalCallMagic, 1, 5, 0));
  EXPECT_EQ(server_->malformed(), 1);
  // The first call was cancelled with its connection.
  EXPECT_EQ(AwaitCancelled(held_.Await(1)->cancellation()).code(), absl::StatusCode::kCancelled);
}

TEST(LocalCallsTest, BodiesOverTheLimitAreRefused) {
  std::unique_ptr<LocalCallServer> server = StartEcho(LocalCallOptions{1 << 10});
  // The client's own limit: the call fails before it is sent.
  std::unique_ptr<LocalCallChannel> strict = Connect(server->address(), LocalCallOptions{1 << 10});
  Result refused;
  strict->Call(1, std::string(2 << 10, 'x'), absl::InfiniteFuture(), nullptr, refused.Done());
  EXPECT_EQ(refused.Wait().status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(strict->closed());
  // A reply over the server's limit comes back as an error instead.
  Result big_reply;
  strict->Call(1, std::string(1 << 10, 'x'), absl::InfiniteFuture(), nullptr, big_reply.Done());
  EXPECT_EQ(big_reply.Wait().status().code(), absl::StatusCode::kResourceExhausted);
  // Past the server's limit from a client that allows more: the server drops the
  // connection, and the call fails UNAVAILABLE.
  std::unique_ptr<LocalCallChannel> loose = Connect(server->address());
  Result dropped;
  loose->Call(1, std::string(2 << 10, 'x'), absl::InfiniteFuture(), nullptr, dropped.Done());
  EXPECT_EQ(dropped.Wait().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server->malformed(), 1);
}

TEST_F(HeldCallsTest, KeepaliveHoldsALongCallToALiveServer) {
  LocalCallOptions options;
  // Long enough that a loaded machine answers a ping in time.
  options.keepalive = absl::Milliseconds(200);
  std::unique_ptr<LocalCallChannel> channel = Connect(server_->address(), options);
  Result result;
  channel->Call(1, "long", absl::InfiniteFuture(), nullptr, result.Done());
  std::shared_ptr<LocalCall> call = held_.Await(1);
  // The server answers pings while the call runs: the call outlives several keepalives.
  while (channel->pongs() < 3 && !channel->closed()) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_FALSE(channel->closed());
  call->Reply(absl::OkStatus(), "finally");
  EXPECT_EQ(*result.Wait(), "finally");
}

TEST(LocalCallsTest, KeepaliveEndsCallsToAServerThatStoppedAnswering) {
  // A listener nobody serves: connections are accepted by the kernel and never read,
  // as with a stopped process.
  const std::string address = NewAddress();
  absl::StatusOr<UniqueFd> listener = ListenUnixSocket(address, SOCK_STREAM, "test");
  ASSERT_TRUE(listener.ok()) << listener.status();
  LocalCallOptions options;
  options.keepalive = absl::Milliseconds(10);
  std::unique_ptr<LocalCallChannel> channel = Connect(address, options);
  Result result;
  channel->Call(1, "lost", absl::InfiniteFuture(), nullptr, result.Done());
  const absl::Status status = result.Wait().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("no answer"), absl::string_view::npos) << status;
  EXPECT_TRUE(channel->closed());
}

TEST(LocalCallsTest, NothingListeningIsUnavailable) {
  EXPECT_EQ(LocalCallChannel::Connect(NewAddress()).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace overseer

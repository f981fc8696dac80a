// The same-host socket helpers: eventfds that wake a polling thread, listening and
// connecting on abstract and file addresses, and their errors.

#include "core/io/unix_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace overseer {
namespace {

// Whether `fd` is readable now (poll with no wait).
bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

TEST(EventFdTest, WakeMakesItReadableUntilRead) {
  absl::StatusOr<UniqueFd> wake = NewEventFd();
  ASSERT_TRUE(wake.ok()) << wake.status();
  EXPECT_NE(::fcntl(wake->get(), F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_FALSE(Readable(wake->get()));
  WakeEventFd(wake->get(), "test");
  WakeEventFd(wake->get(), "test");
  EXPECT_TRUE(Readable(wake->get()));
  uint64_t count = 0;
  ASSERT_EQ(::read(wake->get(), &count, sizeof(count)), static_cast<ssize_t>(sizeof(count)));
  EXPECT_EQ(count, 2u);  // Both wakes, in one read.
  EXPECT_FALSE(Readable(wake->get()));
}

TEST(EventFdTest, WakesAThreadBlockedInPoll) {
  absl::StatusOr<UniqueFd> wake = NewEventFd();
  ASSERT_TRUE(wake.ok()) << wake.status();
  int polled = -1;
  std::thread waiter([&] {
    pollfd p{wake->get(), POLLIN, 0};
    polled = ::poll(&p, 1, -1);  // No timeout: only the wake ends it.
  });
  WakeEventFd(wake->get(), "test");
  waiter.join();
  EXPECT_EQ(polled, 1);
}

TEST(EventFdTest, NoDescriptorLeftIsAnError) {
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  // The lowest free descriptor is the count in use when none was closed before it;
  // a soft limit there leaves none to take.
  const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  rlimit none = old;
  none.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &none), 0);
  absl::StatusOr<UniqueFd> wake = NewEventFd();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_FALSE(wake.ok());
  EXPECT_EQ(wake.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(wake.status().message(), "cannot create an eventfd"))
      << wake.status();
}

TEST(UnixSocketTest, ConnectsToAnAbstractAddress) {
  const std::string address = UniqueAbstractAddress("unix-socket-test");
  ASSERT_TRUE(absl::StartsWith(address, "@unix-socket-test-"));
  absl::StatusOr<UniqueFd> listener = ListenUnixSocket(address, SOCK_STREAM, "test socket");
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<UniqueFd> client = ConnectUnixSocket(address, SOCK_STREAM, "test socket");
  ASSERT_TRUE(client.ok()) << client.status();
  UniqueFd server(::accept(listener->get(), nullptr, nullptr));
  ASSERT_TRUE(server.valid());
  ASSERT_EQ(::write(client->get(), "x", 1), 1);
  char byte = 0;
  ASSERT_EQ(::read(server.get(), &byte, 1), 1);
  EXPECT_EQ(byte, 'x');
  // A second server on the same address is refused, naming it.
  absl::StatusOr<UniqueFd> again = ListenUnixSocket(address, SOCK_STREAM, "test socket");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
}

TEST(UnixSocketTest, ConnectingWhereNothingListensIsUnavailable) {
  const std::string address = UniqueAbstractAddress("unix-socket-test-none");
  absl::StatusOr<UniqueFd> client = ConnectUnixSocket(address, SOCK_STREAM, "test socket");
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(client.status().message(), address)) << client.status();
}

TEST(UnixSocketTest, BadAddressesAreInvalidArguments) {
  for (const std::string& address : {std::string(), std::string("@"), std::string(200, 'a')}) {
    absl::StatusOr<UniqueFd> listener = ListenUnixSocket(address, SOCK_STREAM, "test socket");
    ASSERT_FALSE(listener.ok()) << "'" << address << "'";
    EXPECT_EQ(listener.status().code(), absl::StatusCode::kInvalidArgument) << listener.status();
  }
}

TEST(PollTimeoutTest, RoundsUpAndStops) {
  EXPECT_EQ(PollTimeoutMs(absl::InfiniteFuture()), -1);
  EXPECT_EQ(PollTimeoutMs(absl::InfinitePast()), 0);
  // What is left, in whole milliseconds rounded up: at most 100,001 for 100.0005 s,
  // and (however slowly this runs) far more than 0.
  const int ms = PollTimeoutMs(absl::Now() + absl::Seconds(100) + absl::Microseconds(500));
  EXPECT_LE(ms, 100001);
  EXPECT_GT(ms, 50000);
}

}  // namespace
}  // namespace overseer
